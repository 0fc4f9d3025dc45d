/**
 * The build on both cores (issue 7): records parsed in the load worker give the same staging, the
 * same problems (file, path, message, in the same order) and the same release bytes as records
 * parsed on the main thread; the archive written by the archive worker is the same bytes, and a
 * failing worker says why; a release tree written by the write process is byte-identical to one
 * written on the main thread, and a write process that fails fails the build without publishing.
 */
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild } from '../build/index.ts'
import { createLoadPool } from '../build/load-pool.ts'
import { parseRecordChunk } from '../build/load-records.ts'
import { openDb } from '../build/db/sqlite.ts'
import { removeBodyOrder, writeBodyOrder, writePathOrder } from '../build/release/body-order.ts'
import { writeArchiveInChild, writeSnapshotInChild } from '../build/release/seal-child.ts'
import { resolveReleaseOptions } from '../build/release/options.ts'
import { createWritePool } from '../build/release/write-pool.ts'
import { createReleaseWriter } from '../build/release/writer.ts'
import { buildRelease, copySampleData, editSummary } from './harness.ts'

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

  it('gives the same problems in the same order with no, one or two workers', async () => {
    const data = copySampleData(path.join(root, 'problems'))
    for (const slug of ['sodium', 'iris', 'appleskin']) {
      writeFileSync(path.join(data, 'projects', slug, 'versions', 'zz-bad.json'), JSON.stringify({ id: 'x', channel: 'nightly' }))
    }
    const run = async (loadWorkers: number) => {
      const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: path.join(root, `problems-${loadWorkers}`), countersFile: null, loadWorkers, log: () => {} }))
      expect(result.ok).toBe(false)
      return result.ok ? [] : result.problems
    }
    const withWorkers = await run(2)
    expect(withWorkers.filter((p) => p.file.endsWith('/zz-bad.json')).length).toBeGreaterThanOrEqual(3)
    expect(withWorkers).toEqual(await run(0))
    expect(withWorkers).toEqual(await run(1))
  })

  it('writes the same release bytes with and without the load, search, archive and snapshot workers', async () => {
    const data = copySampleData(path.join(root, 'same'))
    const logs: string[] = []
    const workers = resolveReleaseOptions({ archiveWorker: true, snapshotWorker: true })
    const a = await buildRelease(data, path.join(root, 'same/dist-worker'), { loadWorkers: 2, searchWorker: true, release: workers, log: (l) => logs.push(l) })
    const mainLogs: string[] = []
    const alone = resolveReleaseOptions({ archiveWorker: false, snapshotWorker: false })
    const b = await buildRelease(data, path.join(root, 'same/dist-main'), { loadWorkers: 0, searchWorker: false, release: alone, log: (l) => mainLogs.push(l) })
    for (const key of ['manifest', 'catalog', 'snapshot', 'archive'] as const) expect(a.pointer[key], key).toEqual(b.pointer[key])
    expect(a.pointer.archive?.size).toBeGreaterThan(10_000)
    expect(a.pointer.snapshot?.size).toBeGreaterThan(100_000)
    expect(a.pointer.files).toBeGreaterThan(500)
    for (const worker of ['archive', 'snapshot']) {
      // Each worker adds what it copied from the previous release's file (nothing here: no previous release).
      // The snapshot's catalog part is the copy the build made during the render.
      const tail = worker === 'archive' ? '; 0 of \\d+ members copied from the previous archive' : '; its catalog from the copy made during the render; no previous snapshot: \\d+ bodies and \\d+ names inserted'
      expect(logs.some((l) => new RegExp(`^The ${worker} worker used [\\d.]+s of CPU, peak RSS \\d+ MB${tail}$`).test(l)), `${worker}\n${logs.join('\n')}`).toBe(true)
      expect(mainLogs.some((l) => l.startsWith(`The ${worker} worker`)), worker).toBe(false)
    }
    // The search index's worker reports with the line that says the index was copied in.
    const search = /^… built the search index beside the render \(its worker used [\d.]+s of CPU, peak RSS \d+ MB\) and copied it into the compacted catalog after [\d.]+s$/
    expect(logs.some((l) => search.test(l)), logs.join('\n')).toBe(true)
    expect(mainLogs.some((l) => /^… built the search index beside the render and copied it into the compacted catalog after [\d.]+s$/.test(l)), mainLogs.join('\n')).toBe(true)
  })
})

describe('archive and snapshot workers', () => {
  it('fail with the reason and the way to do without them, leaving no file behind', async () => {
    const dir = mkdtempSync(path.join(root, 'archive-fail-'))
    const target = path.join(dir, 'tree.tar.gz')
    const failed = writeArchiveInChild(dir, path.join(dir, 'no-such-order-file'), target)
    await expect(failed).rejects.toThrow(/archive worker exited \(1\); BUILD_ARCHIVE_WORKER=0[\s\S]*ENOENT[\s\S]*no-such-order-file/)
    expect(existsSync(target)).toBe(false)
    expect(existsSync(`${target}.tmp`)).toBe(false)
    // The snapshot gets as far as its copy of the catalog, then finds no order file: the copy is removed.
    const db = await openDb(path.join(dir, 'catalog.sqlite'))
    await db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)`)
    await db.close()
    const snapshot = path.join(dir, 'snapshot.sqlite')
    const noOrder = writeSnapshotInChild(dir, path.join(dir, 'no-such-order-file'), path.join(dir, 'no-such-path-order'), snapshot, 'c'.repeat(64))
    await expect(noOrder).rejects.toThrow(/snapshot worker exited \(1\); BUILD_SNAPSHOT_WORKER=0[\s\S]*ENOENT[\s\S]*no-such-order-file/)
    expect(existsSync(snapshot)).toBe(false)
    expect(existsSync(`${snapshot}.tmp`)).toBe(false)
    // Given the copy of the catalog the build made ahead, it takes that copy: gone too once it failed.
    const copy = path.join(dir, 'catalog.sqlite.snapshot')
    copyFileSync(path.join(dir, 'catalog.sqlite'), copy)
    const fromCopy = writeSnapshotInChild(dir, path.join(dir, 'no-such-order-file'), path.join(dir, 'no-such-path-order'), snapshot, 'c'.repeat(64), { catalogCopy: copy })
    await expect(fromCopy).rejects.toThrow(/no-such-order-file/)
    expect(existsSync(copy)).toBe(false)
    expect(existsSync(`${snapshot}.tmp`)).toBe(false)
    expect(existsSync(path.join(dir, 'catalog.sqlite'))).toBe(true)
  })
})

describe('snapshot worker given the path order later', () => {
  it('writes the snapshot the release has once the path order comes by message, and fails naming the sort when it cannot come', async () => {
    const data = copySampleData(path.join(root, 'path-later'))
    const built = await buildRelease(data, path.join(root, 'path-later/dist'))
    const bodyOrder = await writeBodyOrder(built.releaseDir)
    const pathOrder = await writePathOrder(built.releaseDir)
    try {
      const target = path.join(root, 'path-later/snapshot.sqlite')
      // Sent a while after the worker asked for it, as the seal sends it when its sort ends.
      const later = new Promise<string>((resolve) => setTimeout(() => resolve(pathOrder), 500))
      const usage = await writeSnapshotInChild(built.releaseDir, bodyOrder, later, target, built.pointer.catalog.sha256)
      expect(usage.written).toEqual({ sha256: built.pointer.snapshot!.sha256, size: built.pointer.snapshot!.size })
      expect(readFileSync(target).equals(readFileSync(path.join(built.releaseDir, 'public', built.pointer.snapshot!.path)))).toBe(true)
      // A sort that failed: the worker fails with its message and leaves neither file behind.
      const failed = path.join(root, 'path-later/failed.sqlite')
      const never = new Promise<string>((_, reject) => setTimeout(() => reject(new Error('sort: disk full')), 200))
      await expect(writeSnapshotInChild(built.releaseDir, bodyOrder, never, failed, built.pointer.catalog.sha256)).rejects.toThrow(
        /snapshot worker exited \(1\)[\s\S]*the path order was not sorted: sort: disk full/,
      )
      expect(existsSync(failed)).toBe(false)
      expect(existsSync(`${failed}.tmp`)).toBe(false)
    } finally {
      removeBodyOrder(bodyOrder)
      removeBodyOrder(pathOrder)
    }
  })
})

describe('write process', () => {
  it('writes the same tree, manifest and release bytes as the main thread', async () => {
    const data = copySampleData(path.join(root, 'write'))
    const a = await buildRelease(data, path.join(root, 'write/dist-worker'), { writeWorker: true })
    const b = await buildRelease(data, path.join(root, 'write/dist-main'), { writeWorker: false })
    for (const key of ['manifest', 'catalog', 'snapshot', 'archive'] as const) expect(a.pointer[key], key).toEqual(b.pointer[key])
    // manifest.tsv is in write order: the same order, not only the same set.
    const manifest = readFileSync(path.join(a.releaseDir, 'manifest.tsv'), 'utf8')
    expect(manifest).toBe(readFileSync(path.join(b.releaseDir, 'manifest.tsv'), 'utf8'))
    const lines = manifest.trimEnd().split('\n')
    expect(lines.length).toBeGreaterThan(500)
    for (const line of lines) {
      const [name, , size] = line.split('\t') as [string, string, string]
      const bytes = readFileSync(path.join(a.releaseDir, name))
      expect(bytes.equals(readFileSync(path.join(b.releaseDir, name))), name).toBe(true)
      expect(bytes.length).toBe(Number(size))
      // The content mtime (nginx's ETag) is the same under both.
      expect(statSync(path.join(a.releaseDir, name)).mtimeMs).toBe(statSync(path.join(b.releaseDir, name)).mtimeMs)
    }
  })

  it('fails the build with the write process error and publishes nothing', async () => {
    const data = copySampleData(path.join(root, 'fail'))
    const dist = path.join(root, 'fail/dist')
    const first = await buildRelease(data, dist, { writeWorker: true })
    editSummary(data, 'sodium', 'A new body to write')
    // The content store made a file: the write process cannot store the new body (ENOTDIR).
    rmSync(path.join(dist, 'store'), { recursive: true })
    writeFileSync(path.join(dist, 'store'), '')
    const build = buildRelease(data, dist, { writeWorker: true })
    await expect(build).rejects.toThrow(/^write process: .*(ENOTDIR|EEXIST).*; BUILD_WRITE_WORKER=0 writes the release on the main thread alone$/)
    expect(path.resolve(dist, readlinkSync(path.join(dist, 'current')))).toBe(first.releaseDir)
    expect(readdirSync(path.join(dist, 'releases'))).toEqual([path.basename(first.releaseDir)])
    // The lock was released and nothing was left behind: the next build publishes.
    rmSync(path.join(dist, 'store'))
    const next = await buildRelease(data, dist, { writeWorker: true })
    expect(next.pointer.serial).toBe(first.pointer.serial + 1)
  })

  it('shares the tree writes with this thread when the write process is busy, with the same files and manifest', async () => {
    // Written without awaiting: 16 batches go to the process, and finish() has both sides write the other ≈ 45.
    const bodies = Array.from({ length: 9000 }, (_, i) => Buffer.from(JSON.stringify({ data: { i: i % 7000, pad: 'x'.repeat(3500) } })))
    const names = (i: number): string[] => [`public/api/v1/a/${i % 50}/${i}.json`, `public/api/v1/b/${i}.json`]
    const local = mkdtempSync(path.join(root, 'share-local-'))
    const writer = createReleaseWriter(local, () => {}, path.join(local, 'store'))
    for (const [i, bytes] of bodies.entries()) writer.write(names(i), bytes)
    const expected = await writer.finish()
    const shared = mkdtempSync(path.join(root, 'share-pool-'))
    const pool = createWritePool(shared, () => {}, path.join(shared, 'store'))
    try {
      for (const [i, bytes] of bodies.entries()) pool.write(names(i), bytes)
      const { stats, usage } = await pool.finish()
      expect({ ...stats, written: 0 }).toEqual({ ...expected, written: 0 })
      // A repeated body is found in the store unless both sides write it at the same time.
      expect(expected.written).toBe(7000)
      expect(stats.written).toBeGreaterThanOrEqual(7000)
      expect(usage!.batches.process).toBeGreaterThanOrEqual(16)
      expect(usage!.batches.main).toBeGreaterThan(0)
      expect(usage!.cpuSeconds).toBeGreaterThan(0)
    } finally {
      await pool.close()
    }
    expect(readFileSync(path.join(shared, 'manifest.tsv'), 'utf8')).toBe(readFileSync(path.join(local, 'manifest.tsv'), 'utf8'))
    for (const [i, bytes] of bodies.entries()) {
      for (const name of names(i)) {
        expect(readFileSync(path.join(shared, name)).equals(bytes), name).toBe(true)
        expect(statSync(path.join(shared, name)).mtimeMs).toBe(statSync(path.join(local, name)).mtimeMs)
      }
    }
    expect(existsSync(path.join(shared, '.complete'))).toBe(true)
    expect(existsSync(path.join(shared, '.write-batches'))).toBe(false)
  })

  it('fails every later call when the write process dies', async () => {
    const dir = mkdtempSync(path.join(root, 'killed-'))
    const pool = createWritePool(dir, () => {}, null)
    try {
      pool.write(['public/api/v1/a.json', 'public/api/v1/b.json'], Buffer.from('{"data":1}'))
      await pool.drain()
      process.kill(pool.pid!, 'SIGKILL')
      const message = /^write process exited \(SIGKILL\); BUILD_WRITE_WORKER=0 writes the release on the main thread alone$/
      await expect(pool.finish()).rejects.toThrow(message)
      expect(() => pool.write(['public/api/v1/c.json'], Buffer.from('{}'))).toThrow(message)
      await expect(pool.drain()).rejects.toThrow(message)
    } finally {
      await pool.close()
    }
    expect(existsSync(path.join(dir, '.complete'))).toBe(false)
  })
})
