/**
 * Releases for mirrors and offline users (issue 6): incremental builds (unchanged data rewrites
 * nothing: same bytes, same inode, 0 changes), the pointer/manifest/feed documents with retention,
 * pruning of releases and of the content store, and the offline snapshot served alone.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inject } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { openDb } from '../build/db/sqlite.ts'
import { runBuild } from '../build/index.ts'
import { manifestIndexSchema, pointerSchema, type Pointer } from '../build/release/formats.ts'
import { hashBytes, parseChanges, parseShard, readGzipText, shardFile, shardOf } from '../build/release/manifest.ts'
import { startServer, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'releases-test-'))
const data = path.join(root, 'data')
const dist = path.join(root, 'dist')
const logs: string[] = []
let removedSha = ''

async function build(): Promise<Pointer> {
  const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, keepReleases: 2, log: (l) => logs.push(l) }))
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.file}: ${p.path}: ${p.message}`).join('\n'))
  return pointerSchema.parse(JSON.parse(readFileSync(path.join(result.releaseDir, 'public/mirror/pointer.json'), 'utf8')))
}

/** The manifest of a release: release-relative name → [sha256, size]. */
function manifestOf(releaseDir: string): Map<string, { sha256: string; size: number }> {
  const out = new Map<string, { sha256: string; size: number }>()
  for (const line of readFileSync(path.join(releaseDir, 'manifest.tsv'), 'utf8').trim().split('\n')) {
    const [name, sha256, size] = line.split('\t') as [string, string, string]
    out.set(name, { sha256, size: Number(size) })
  }
  return out
}

/** The change file of a serial, parsed and checked against the pointer's SHA-256. */
function changesOf(releaseDir: string, pointer: Pointer, serial: number): ReturnType<typeof parseChanges> {
  const entry = pointer.feed.changes.find((e) => e.serial === serial)!
  const text = readGzipText(readFileSync(path.join(releaseDir, 'public', entry.path)))
  expect(hashBytes(text)).toBe(entry.sha256)
  return parseChanges(text)
}

const release = (id: string): string => path.join(dist, 'releases', id)
const editSummary = (slug: string, summary: string): void => {
  const file = path.join(data, 'projects', slug, 'project.json')
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), summary }, null, 2))
}

beforeAll(() => {
  cpSync('data', data, { recursive: true })
  process.env.FEED_RETENTION = '2'
})

afterAll(() => {
  delete process.env.FEED_RETENTION
  rmSync(root, { recursive: true, force: true })
})

describe('incremental releases', () => {
  it('rebuilds unchanged data without writing a byte: same files, same inodes, 0 changes, one summary line', async () => {
    const first = await build()
    expect(first).toMatchObject({ serial: 1, previous: null, sourceRevision: null })
    expect(first.changes).toEqual({ added: first.files, changed: 0, removed: 0, unchanged: 0 })
    const second = await build()
    expect(second).toMatchObject({ serial: 2, previous: 1 })
    expect(second.changes).toEqual({ added: 0, changed: 0, removed: 0, unchanged: second.files })
    expect(logs.at(-1)).toMatch(/0 bodies written.*release 00000002: 0 added, 0 changed, 0 removed, \d+ unchanged/)
    const a = manifestOf(release('00000001'))
    const b = manifestOf(release('00000002'))
    expect([...b]).toEqual([...a])
    for (const name of b.keys()) {
      // A hard link to the previous release's file: the same bytes and ETag by construction.
      expect(statSync(path.join(release('00000002'), name)).ino).toBe(statSync(path.join(release('00000001'), name)).ino)
    }
    expect(second.manifest.sha256).not.toBe(first.manifest.sha256) // the index names its serial…
    const indexA = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000001'), 'public', first.manifest.path), 'utf8')))
    const indexB = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000002'), 'public', second.manifest.path), 'utf8')))
    expect(indexB.shards).toEqual(indexA.shards) // …but every shard, the part mirrors fetch, is the same
    expect(changesOf(release('00000002'), second, 2)).toEqual([])
  })

  it('after an edit, an addition and a deletion rewrites only the files whose bytes changed and lists them in the feed', async () => {
    editSummary('sodium', 'An edited summary of Sodium')
    const versions = path.join(data, 'projects', 'sodium', 'versions')
    cpSync(path.join(versions, '0.5.11+mc1.21'), path.join(versions, '0.5.12+mc1.21'), { recursive: true })
    rmSync(path.join(versions, '0.5.12+mc1.21', 'sodium-fabric-0.5.11+mc1.21.jar'))
    writeFileSync(path.join(versions, '0.5.12+mc1.21', 'sodium-fabric-0.5.12+mc1.21.jar'), 'a new jar')
    const v = JSON.parse(readFileSync(path.join(versions, '0.5.11+mc1.21.json'), 'utf8'))
    const file = { ...v.files[0], id: 'Qq1Ww2Ee', filename: 'sodium-fabric-0.5.12+mc1.21.jar', path: '0.5.12+mc1.21/sodium-fabric-0.5.12+mc1.21.jar' }
    writeFileSync(
      path.join(versions, '0.5.12+mc1.21.json'),
      JSON.stringify({ ...v, id: 'Zz9Yy8Xx', versionNumber: '0.5.12+mc1.21', name: 'Sodium 0.5.12', createdAt: '2024-07-01T08:00:00Z', publishedAt: '2024-07-01T09:00:00Z', files: [file] }),
    )
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    removedSha = manifestOf(release('00000002')).get('public/api/v1/projects/archipelago-survival.json')!.sha256
    const third = await build()
    const before = manifestOf(release('00000002'))
    const after = manifestOf(release('00000003'))
    const changes = changesOf(release('00000003'), third, 3)
    const byKind = (k: string): string[] => changes.filter((c) => c.kind === k).map((c) => (c.kind === 'R' ? c.path : c.entry.path))
    expect(byKind('C')).toContain('public/api/v1/projects/sodium.json')
    expect(byKind('A')).toContain('public/api/v1/versions/Zz9Yy8Xx.json')
    expect(byKind('R')).toContain('public/api/v1/projects/archipelago-survival.json')
    expect(third.changes).toEqual({ added: byKind('A').length, changed: byKind('C').length, removed: byKind('R').length, unchanged: after.size - byKind('A').length - byKind('C').length })
    // The change file is exactly the difference of the two manifests.
    for (const [name, e] of after) {
      const old = before.get(name)
      const kind = !old ? 'A' : old.sha256 !== e.sha256 ? 'C' : null
      if (kind) expect(byKind(kind)).toContain(name)
      else expect(statSync(path.join(release('00000003'), name)).ino).toBe(statSync(path.join(release('00000002'), name)).ino)
    }
    for (const name of before.keys()) if (!after.has(name)) expect(byKind('R')).toContain(name)
    expect(third.changes.changed + third.changes.added).toBeLessThan(after.size / 10)
    // Every entry of a shard hashes to its index entry, and sits in the shard its name selects.
    const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000003'), 'public', third.manifest.path), 'utf8')))
    let files = 0
    for (const ref of index.shards) {
      const text = readGzipText(readFileSync(path.join(release('00000003'), shardFile(ref.sha256))))
      expect(hashBytes(text)).toBe(ref.sha256)
      for (const e of parseShard(text)) expect(shardOf(e.path)).toBe(ref.shard)
      files += ref.files
    }
    expect(files).toBe(after.size)
  })

  it('keeps a bounded feed with an explicit resync point, prunes old releases and unreferenced store entries', async () => {
    editSummary('sodium', 'Edited once more')
    const fourth = await build()
    expect(fourth.feed.changes.map((e) => e.serial)).toEqual([3, 4])
    // A mirror at serial 2 can still apply 3 and 4; below 2 the answer is "resync".
    expect(fourth.feed.oldest).toBe(2)
    expect(readdirSync(path.join(release('00000004'), 'public/mirror/changes')).sort()).toEqual(['3.tsv.gz', '4.tsv.gz'])
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000003', '00000004'])
    // The store keeps only bodies a kept release still names: the deleted project's body is gone.
    const store = path.join(dist, 'store')
    for (const prefix of readdirSync(store)) for (const name of readdirSync(path.join(store, prefix))) expect(statSync(path.join(store, prefix, name)).nlink).toBeGreaterThan(1)
    expect(removedSha).toMatch(/^[0-9a-f]{64}$/)
    expect(() => statSync(path.join(store, removedSha.slice(0, 2), removedSha))).toThrow()
  })
})

describe('offline snapshot', () => {
  const distDir = inject('distDir')
  let origin: TestServer
  let offline: TestServer
  let pointer: Pointer
  let snapshot: string

  beforeAll(async () => {
    pointer = pointerSchema.parse(JSON.parse(readFileSync(path.join(distDir, 'current/public/mirror/pointer.json'), 'utf8')))
    snapshot = path.join(distDir, 'current/public', pointer.snapshot!.path)
    origin = await startServer(distDir)
    // Served alone: a dist folder that does not exist, only the snapshot file.
    offline = await startServer(path.join(root, 'no-such-dist'), { snapshotFile: snapshot, countersFile: path.join(root, 'offline-counters.sqlite') })
  })

  afterAll(async () => {
    expect(origin.serverErrors()).toBe(0)
    expect(offline.serverErrors()).toBe(0)
    await origin.close()
    await offline.close()
  })

  it('is one SQLite file that the sqlite3 shell opens, with integrity ok and its SHA-256 in the pointer', async () => {
    expect(hashBytes(readFileSync(snapshot))).toBe(pointer.snapshot!.sha256)
    // integrity_check through the binding (SQLite 3.5x): the Debian shell (3.40.1) reports false
    // "NULL value" errors on WITHOUT ROWID tables whose key is not their first column, even on catalog.sqlite.
    const db = await openDb(snapshot, { readonly: true })
    expect(await db.all(`PRAGMA integrity_check`)).toEqual([{ integrity_check: 'ok' }])
    await db.close()
    const tables = execFileSync('sqlite3', [snapshot, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name;`]).toString()
    for (const t of ['projects', 'versions', 'files', 'static_paths', 'static_bodies', 'snapshot_info']) expect(tables.split('\n')).toContain(t)
    expect(execFileSync('sqlite3', [snapshot, `SELECT value FROM snapshot_info WHERE key = 'id';`]).toString().trim()).toBe(pointer.id)
    expect(Number(execFileSync('sqlite3', [snapshot, `SELECT count(*) FROM static_paths;`]).toString())).toBe(
      readFileSync(path.join(distDir, 'current/manifest.tsv'), 'utf8').split('\n').filter((l) => l.startsWith('public/api/')).length,
    )
  })

  it('answers static and dynamic requests exactly as the origin does', async () => {
    const sha1 = (await (await origin.get('/projects/sodium/versions')).json()).data[0].files[0].sha1 as string
    const paths = ['/projects/sodium', '/projects/SODIUM', '/projects?q=sodium', '/search?q=fabric&limit=5', `/version-files/${sha1}`, '/projects/sodium/versions', '/projects/sodium/versions?limit=2', '/statistics', '/projects/nope']
    for (const p of paths) {
      const [a, b] = await Promise.all([origin.get(p), offline.get(p)])
      expect(b.status, p).toBe(a.status)
      const [ta, tb] = [await a.text(), await b.text()]
      if (a.status === 200) {
        expect(tb, p).toBe(ta)
        expect(b.headers.get('etag'), p).toBe(a.headers.get('etag'))
      } else expect(JSON.parse(tb).error.code).toBe(JSON.parse(ta).error.code)
    }
  })

  it('unpacks its archive into the same JSON tree', () => {
    const out = path.join(root, 'unpacked')
    execFileSync('mkdir', ['-p', out])
    execFileSync('tar', ['-xzf', path.join(distDir, 'current/public', pointer.archive!.path), '-C', out])
    execFileSync('diff', ['-r', path.join(out, 'public/api'), path.join(distDir, 'current/public/api')])
  })
})
