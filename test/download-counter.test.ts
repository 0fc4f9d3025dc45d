/** The download counter store: once per visitor, file and UTC day; nothing but HMACs stored. */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { openDownloadCounter } from '../shim/download-counter.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'counter-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function counts(file: string): Promise<Record<string, number>> {
  const db = await openDb(file, { readonly: true })
  const rows = await db.all<{ file_id: string; n: number }>(`SELECT file_id, n FROM file_downloads`)
  await db.close()
  return Object.fromEntries(rows.map((r) => [r.file_id, r.n]))
}

describe('download counter', () => {
  it('counts 50 concurrent downloads of one visitor once, two visitors twice, and again the next UTC day', async () => {
    const file = path.join(dir, 'a.sqlite')
    let now = Date.parse('2026-03-01T23:59:58Z')
    const counter = await openDownloadCounter({ file, secretFile: path.join(dir, 'secret-a.json'), now: () => now })
    await Promise.all(Array.from({ length: 50 }, () => counter.record('FileA', '203.0.113.5')))
    expect(await counts(file)).toEqual({ FileA: 1 })
    await Promise.all([counter.record('FileA', '203.0.113.6'), counter.record('FileB', '203.0.113.5')])
    expect(await counts(file)).toEqual({ FileA: 2, FileB: 1 })
    now += 5000 // 2026-03-02
    await Promise.all(Array.from({ length: 10 }, () => counter.record('FileA', '203.0.113.5')))
    expect(await counts(file)).toEqual({ FileA: 3, FileB: 1 })
    expect(counter.backlog()).toBe(0)
    await counter.close()
  })

  it('stores no address, keeps the day secret across a restart, and replaces it the next day', async () => {
    const file = path.join(dir, 'b.sqlite')
    const secretFile = path.join(dir, 'secret-b.json')
    let now = Date.parse('2026-03-05T12:00:00Z')
    const first = await openDownloadCounter({ file, secretFile, now: () => now })
    await first.record('FileA', '198.51.100.77')
    await first.close()
    const second = await openDownloadCounter({ file, secretFile, now: () => now })
    await second.record('FileA', '198.51.100.77')
    expect(await counts(file)).toEqual({ FileA: 1 })
    const db = await openDb(file, { readonly: true })
    const dump = JSON.stringify(await db.all(`SELECT * FROM download_visits`))
    await db.close()
    expect(dump).not.toContain('198.51.100')
    now += 3 * 86_400_000
    await second.record('FileB', '198.51.100.77')
    const after = await openDb(file, { readonly: true })
    const days = (await after.all<{ day: string }>(`SELECT DISTINCT day FROM download_visits`)).map((r) => r.day)
    await after.close()
    expect(days).toEqual(['2026-03-08'])
    await second.close()
  })
})
