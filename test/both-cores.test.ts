/**
 * The build on both cores (issue 7): records parsed in the load worker give the same staging, the
 * same problems (file, path, message, in the same order) and the same release bytes as records
 * parsed on the main thread; the archive written by the archive worker is the same bytes, and a
 * failing worker says why.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild } from '../build/index.ts'
import { createLoadPool } from '../build/load-pool.ts'
import { parseRecordChunk } from '../build/load-records.ts'
import { writeArchiveInChild } from '../build/release/archive-child.ts'
import { resolveReleaseOptions } from '../build/release/options.ts'
import { buildRelease, copySampleData } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'both-cores-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('load worker', () => {
  it('reports a record problem found in the worker with its file and path, as the main thread does', async () => {
    const data = copySampleData(path.join(root, 'chunk'))
    const file = 'projects/sodium/versions/0.5.11+mc1.21.json'
    const version = JSON.parse(readFileSync(path.join(data, file), 'utf8'))
    writeFileSync(path.join(data, file), JSON.stringify({ ...version, files: [{ ...version.files[0], sha1: '0'.repeat(40) }] }))
    const other = 'projects/sodium/versions/0.5.8+mc1.20.4.json'
    writeFileSync(path.join(data, other), JSON.stringify({ ...JSON.parse(readFileSync(path.join(data, other), 'utf8')), channel: 'nightly' }))
    writeFileSync(path.join(data, 'projects/sodium/versions/broken.json'), '{"id": ')
    const files = [file, 'projects/sodium/versions/broken.json', other, 'projects/sodium/versions/0.5.9-beta.1+mc1.20.4.json']
    const pool = createLoadPool(data)
    try {
      const remote = await pool.run('versions', files)
      const local = parseRecordChunk('versions', data, files)
      expect(remote).toEqual(local)
      expect(remote.count).toBe(2)
      expect(remote.rows.s_versions).toHaveLength(2)
      expect(remote.problems.map((p) => [p.file, p.path])).toEqual([
        [file, 'files[0].sha1'],
        ['projects/sodium/versions/broken.json', '(record)'],
        [other, 'channel'],
      ])
      expect(remote.problems[0]!.message).toMatch(/^declared 0+ but the blob has [0-9a-f]{40}$/)
      expect(remote.problems[1]!.message).toMatch(/^not valid JSON/)
    } finally {
      expect((await pool.close()).maxRss).toBeGreaterThan(10e6)
    }
  })

  it('gives the same problems in the same order with and without the worker', async () => {
    const data = copySampleData(path.join(root, 'problems'))
    for (const slug of ['sodium', 'iris', 'appleskin']) {
      writeFileSync(path.join(data, 'projects', slug, 'versions', 'zz-bad.json'), JSON.stringify({ id: 'x', channel: 'nightly' }))
    }
    const run = async (loadWorker: boolean) => {
      const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: path.join(root, `problems-${loadWorker}`), countersFile: null, loadWorker, log: () => {} }))
      expect(result.ok).toBe(false)
      return result.ok ? [] : result.problems
    }
    const withWorker = await run(true)
    expect(withWorker.filter((p) => p.file.endsWith('/zz-bad.json')).length).toBeGreaterThanOrEqual(3)
    expect(withWorker).toEqual(await run(false))
  })

  it('writes the same release bytes with and without the load and archive workers', async () => {
    const data = copySampleData(path.join(root, 'same'))
    const logs: string[] = []
    const a = await buildRelease(data, path.join(root, 'same/dist-worker'), { loadWorker: true, release: resolveReleaseOptions({ archiveWorker: true }), log: (l) => logs.push(l) })
    const b = await buildRelease(data, path.join(root, 'same/dist-main'), { loadWorker: false, release: resolveReleaseOptions({ archiveWorker: false }) })
    for (const key of ['manifest', 'catalog', 'snapshot', 'archive'] as const) expect(a.pointer[key], key).toEqual(b.pointer[key])
    expect(a.pointer.archive?.size).toBeGreaterThan(10_000)
    expect(a.pointer.files).toBeGreaterThan(500)
    expect(logs.some((l) => /^The archive worker used [\d.]+s of CPU, peak RSS \d+ MB$/.test(l))).toBe(true)
  })
})

describe('archive worker', () => {
  it('fails with the reason and the way to do without it, leaving no file behind', async () => {
    const dir = mkdtempSync(path.join(root, 'archive-fail-'))
    const target = path.join(dir, 'tree.tar.gz')
    const failed = writeArchiveInChild(dir, path.join(dir, 'no-such-order-file'), target)
    await expect(failed).rejects.toThrow(/archive worker exited \(1\); BUILD_ARCHIVE_WORKER=0[\s\S]*ENOENT[\s\S]*no-such-order-file/)
    expect(existsSync(target)).toBe(false)
    expect(existsSync(`${target}.tmp`)).toBe(false)
  })
})
