/**
 * The search index is built beside the catalog (build/search-index.ts startSearchIndex): on a
 * connection of its own, in a file of its own, then copied into catalog.sqlite. The copy must be
 * the index itself: the same tables and indexes, with the same rows and rowids, as the index built in
 * place on the same catalog (createSearchIndex), and nothing left in the release.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { buildInWorker, createSearchIndex, dropSearchIndex, startSearchIndex } from '../build/search-index.ts'

const tmp = mkdtempSync(path.join(os.tmpdir(), 'search-beside-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

/** Every search table and index of `db` (FTS5's shadow tables included): its SQL and its rows, with rowids where it has them. */
async function readSearchTables(db: Db): Promise<{ schema: string[]; rows: Map<string, unknown[]> }> {
  const entries = await db.all<{ type: string; name: string; sql: string | null }>(
    `SELECT type, name, sql FROM sqlite_schema WHERE name LIKE 'search%' OR name LIKE 'sqlite_autoindex_search%' ORDER BY rowid`,
  )
  const rows = new Map<string, unknown[]>()
  for (const { type, name, sql } of entries) {
    if (type !== 'table' || sql === null || sql.startsWith('CREATE VIRTUAL TABLE')) continue
    const withoutRowid = /WITHOUT ROWID\s*$/i.test(sql)
    rows.set(name, await db.all(withoutRowid ? `SELECT * FROM "${name}"` : `SELECT rowid AS _rowid_, * FROM "${name}" ORDER BY rowid`))
  }
  return { schema: entries.map((e) => `${e.type} ${e.name}: ${e.sql}`), rows }
}

describe('the search index built beside the catalog', () => {
  const releaseDir = path.join(inject('distDir'), 'current')

  it('is the index built in place on the same catalog: same tables and indexes, same rows and rowids', async () => {
    const file = path.join(tmp, 'catalog.sqlite')
    copyFileSync(path.join(releaseDir, 'catalog.sqlite'), file)
    const db = await openDb(file)
    try {
      const built = await readSearchTables(db)
      // Every part of the index is there, FTS5's shadow tables with their rows among them.
      for (const t of ['search_docs', 'search_all_data', 'search_all_idx', 'search_all_config', 'search_by_name_data', 'search_terms', 'search_bitmaps', 'search_typos']) {
        expect(built.rows.get(t)?.length, t).toBeGreaterThan(0)
      }
      expect(built.schema.some((s) => s.startsWith('table search_vocab: CREATE VIRTUAL TABLE'))).toBe(true)
      expect(built.rows.has('search_input')).toBe(false)
      // FTS5 reads the copied shadow tables: a word of one project's name finds it.
      const sodium = await db.get<{ rank: number }>(`SELECT rank FROM search_docs d JOIN projects p ON p.rowid = d.project_rowid WHERE p.slug = 'sodium'`)
      const match = await db.all<{ rowid: number }>(`SELECT rowid FROM search_all WHERE search_all MATCH 'sodium' ORDER BY rowid`)
      expect(match.map((r) => r.rowid)).toContain(sodium!.rank)

      await dropSearchIndex(db)
      expect((await readSearchTables(db)).schema).toEqual([])
      await createSearchIndex(db)
      const inPlace = await readSearchTables(db)
      // The release's catalog is compacted by VACUUM INTO, which makes tables first, then indexes, then
      // virtual tables: the same entries, in another order.
      expect([...built.schema].sort()).toEqual([...inPlace.schema].sort())
      expect([...built.rows.keys()].sort()).toEqual([...inPlace.rows.keys()].sort())
      for (const [name, rows] of inPlace.rows) expect(built.rows.get(name), name).toEqual(rows)
    } finally {
      await db.close()
    }
  })

  it('is the same index built by its worker process (BUILD_SEARCH_WORKER) as in the build\'s own, which reports no worker', async () => {
    const built = async (worker: boolean) => {
      const file = path.join(tmp, `side-${worker}.sqlite`)
      copyFileSync(path.join(releaseDir, 'catalog.sqlite'), file)
      const db = await openDb(file)
      try {
        await dropSearchIndex(db)
        const side = path.join(tmp, `side-${worker}.search.sqlite`)
        const search = await startSearchIndex(db, side, { worker })
        const usage = await search.finish(db)
        expect(existsSync(side)).toBe(false)
        return { usage, tables: await readSearchTables(db) }
      } finally {
        await db.close()
      }
    }
    const inWorker = await built(true)
    const here = await built(false)
    expect(inWorker.usage!.cpuSeconds).toBeGreaterThan(0)
    expect(inWorker.usage!.maxRss).toBeGreaterThan(10e6)
    expect(here.usage).toBeNull()
    expect(inWorker.tables.schema).toEqual(here.tables.schema)
    expect(inWorker.tables.rows.get('search_docs')!.length).toBeGreaterThan(10)
    for (const [name, rows] of here.tables.rows) expect(inWorker.tables.rows.get(name), name).toEqual(rows)
  })

  it('fails in its worker with the reason and the way to do without it, and stopped leaves no file behind', async () => {
    // A file without the input startSearchIndex copies in.
    const empty = path.join(tmp, 'empty.search.sqlite')
    writeFileSync(empty, '')
    await expect(buildInWorker(empty).done).rejects.toThrow(/search worker exited \(1\); BUILD_SEARCH_WORKER=0 builds the search index in the build's own process[\s\S]*no such table: search_input/)
    // Stopped at once (the build failed): the worker is killed and the file removed.
    const file = path.join(tmp, 'stopped.sqlite')
    copyFileSync(path.join(releaseDir, 'catalog.sqlite'), file)
    const db = await openDb(file)
    try {
      await dropSearchIndex(db)
      const side = path.join(tmp, 'stopped.search.sqlite')
      const search = await startSearchIndex(db, side, { worker: true })
      expect(existsSync(side)).toBe(true)
      await search.close()
      expect(existsSync(side)).toBe(false)
      expect((await readSearchTables(db)).schema).toEqual([])
    } finally {
      await db.close()
    }
  })

  it('leaves no file of its own in the release', () => {
    expect(existsSync(path.join(releaseDir, '.search.sqlite'))).toBe(false)
    expect(readdirSync(releaseDir).filter((n) => n.includes('search'))).toEqual([])
  })
})
