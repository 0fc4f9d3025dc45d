/**
 * Offline users (issue 6): the snapshot and the archive are byte-identical for the same data (built
 * in another folder, loaded in another order, written in another order), the snapshot opens in the
 * sqlite3 shell and, served alone, answers every URL as the origin does; the archive unpacks into
 * the same JSON tree.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { contentMtime } from '../build/render/etag.ts'
import { writeArchive } from '../build/release/archive.ts'
import { removeBodyOrder, writeBodyOrder, writePathOrder } from '../build/release/body-order.ts'
import { pointerSchema, type Pointer } from '../build/release/formats.ts'
import { fileUrl, hashBytes } from '../build/release/manifest.ts'
import { writeSnapshot } from '../build/release/snapshot.ts'
import { buildRelease, copySampleData, readManifestOf, startServer, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'offline-test-'))
const sha256Of = (file: string): string => hashBytes(readFileSync(file))

afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

describe('reproducible snapshot and archive', () => {
  it('gives the same catalog, snapshot and archive bytes for the same data copied elsewhere in reverse order', async () => {
    const here = (await buildRelease(copySampleData(path.join(root, 'here')), path.join(root, 'here/dist'))).pointer
    copyReversed('data', path.join(root, 'other/data'))
    const { pointer: elsewhere, releaseDir } = await buildRelease(path.join(root, 'other/data'), path.join(root, 'other/dist'))
    for (const key of ['catalog', 'snapshot', 'archive', 'manifest'] as const) expect(elsewhere[key], key).toEqual(here[key])
    // The catalog's SHA-256 is taken when it is compacted, before the seal: it must be the file's.
    for (const key of ['catalog', 'snapshot', 'archive'] as const) expect(sha256Of(path.join(releaseDir, 'public', elsewhere[key]!.path)), key).toBe(elsewhere[key]!.sha256)
    // SQLite header fields that count writes (file change counter at 24, version-valid-for at 92)
    // are part of those bytes; equal to each other, so the header is valid and the sqlite3 shell
    // trusts the in-header database size.
    for (const key of ['catalog', 'snapshot'] as const) {
      const header = readFileSync(path.join(releaseDir, 'public', elsewhere[key]!.path)).subarray(0, 100)
      expect(header.readUInt32BE(24), key).toBe(header.readUInt32BE(92))
    }
    // Independent of the order the build wrote the files in: the same snapshot and archive from a reversed manifest.
    const lines = readFileSync(path.join(releaseDir, 'manifest.tsv'), 'utf8').trim().split('\n')
    writeFileSync(path.join(releaseDir, 'manifest.tsv'), lines.reverse().join('\n') + '\n')
    const order = await writeBodyOrder(releaseDir)
    const pathOrder = await writePathOrder(releaseDir)
    const written = await writeSnapshot(releaseDir, order, pathOrder, path.join(root, 'again.sqlite'), elsewhere.catalog.sha256)
    const archived = await writeArchive(releaseDir, order, path.join(root, 'again.tar.gz'))
    removeBodyOrder(order)
    removeBodyOrder(pathOrder)
    expect(sha256Of(path.join(root, 'again.sqlite'))).toBe(here.snapshot!.sha256)
    // The hash writeSnapshot takes beside its quick_check (and the seal publishes) is the file's.
    expect(written).toMatchObject({ sha256: here.snapshot!.sha256, size: statSync(path.join(root, 'again.sqlite')).size })
    expect(sha256Of(path.join(root, 'again.tar.gz'))).toBe(here.archive!.sha256)
    expect(archived).toMatchObject({ sha256: here.archive!.sha256, size: statSync(path.join(root, 'again.tar.gz')).size })
    const listing = execFileSync('tar', ['-tvzf', path.join(root, 'again.tar.gz')], { env: { TZ: 'UTC', LC_ALL: 'C' } }).toString().trim().split('\n')
    expect(listing.length).toBe(lines.filter((l) => l.startsWith('public/api/')).length)
    // Owner 0/0 and mode 0644 everywhere; each entry's time is its body's content mtime (build/render/etag.ts),
    // so an extracted tree gives nginx the API's ETags and the archive still depends on the data alone.
    const shaOf = new Map(lines.map((l) => l.split('\t') as [string, string]))
    for (const line of listing) {
      const m = /^[-h]rw-r--r-- 0\/0 +\d+ (\d{4}-\d\d-\d\d \d\d:\d\d) (public\/api\/\S+)/.exec(line)
      expect(m, line).not.toBeNull()
      const stamp = new Date(contentMtime(shaOf.get(m![2]!)!) * 1000).toISOString().slice(0, 16).replace('T', ' ')
      expect(m![1], line).toBe(stamp)
    }
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
    // integrity_check through the binding (SQLite 3.5x) and through the Debian shell (3.40.1), which
    // reported false "NULL value" errors while a WITHOUT ROWID table (project_members) had its key
    // columns after others: a user of an older shell must see "ok" too.
    const db = await openDb(snapshot, { readonly: true })
    expect(await db.all(`PRAGMA integrity_check`)).toEqual([{ integrity_check: 'ok' }])
    await db.close()
    for (const file of [snapshot, path.join(distDir, 'current/catalog.sqlite')]) expect(execFileSync('sqlite3', [file, 'PRAGMA integrity_check;']).toString().trim()).toBe('ok')
    const tables = execFileSync('sqlite3', [snapshot, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name;`]).toString()
    for (const t of ['projects', 'versions', 'files', 'static_paths', 'static_bodies', 'snapshot_info']) expect(tables.split('\n')).toContain(t)
    // It names no release and no time (the same data gives the same file): only its format and the catalog it copies.
    expect(execFileSync('sqlite3', ['-separator', '=', snapshot, `SELECT key, value FROM snapshot_info ORDER BY key;`]).toString().trim().split('\n')).toEqual([
      `catalogSha256=${pointer.catalog.sha256}`,
      'format=1',
    ])
    expect(Number(execFileSync('sqlite3', [snapshot, `SELECT count(*) FROM static_paths;`]).toString())).toBe(
      readFileSync(path.join(distDir, 'current/manifest.tsv'), 'utf8').split('\n').filter((l) => l.startsWith('public/api/')).length,
    )
  })

  it('answers static and dynamic requests exactly as the origin does', async () => {
    const files = (await (await origin.get('/projects/sodium/versions')).json()).data.flatMap((v: { files: { sha1: string; sha256: string }[] }) => v.files)
    const sha1 = files[0].sha1 as string
    const bulk = `/version-files?hashes=${[sha1.toUpperCase(), files[1].sha256, '0'.repeat(40), sha1].join(',')}`
    const paths = ['/projects/sodium', '/projects/SODIUM', '/projects?q=sodium', '/search?q=fabric&limit=5', `/version-files/${sha1}`, bulk, '/projects/sodium/versions', '/projects/sodium/versions?limit=2', '/statistics', '/projects/nope']
    for (const p of paths) {
      const [a, b] = await Promise.all([origin.get(p), offline.get(p)])
      expect(b.status, p).toBe(a.status)
      const [ta, tb] = [await a.text(), await b.text()]
      if (a.status === 200) {
        expect(tb, p).toBe(ta)
        if (p === bulk) expect(Object.keys(JSON.parse(tb).data), p).toEqual([sha1, files[1].sha256])
        expect(b.headers.get('etag'), p).toBe(a.headers.get('etag'))
      } else expect(JSON.parse(tb).error.code).toBe(JSON.parse(ta).error.code)
    }
  })

  it('answers every pre-rendered URL with the bytes and ETag of the origin', async () => {
    const names = [...readManifestOf(path.join(distDir, 'current')).keys()].filter((n) => n.startsWith('public/api/'))
    expect(names.length).toBeGreaterThan(500)
    for (let i = 0; i < names.length; i += 32) {
      await Promise.all(
        names.slice(i, i + 32).map(async (name) => {
          const url = fileUrl(name)
          const [a, b] = await Promise.all([origin.get(origin.origin + url), offline.get(offline.origin + url)])
          expect([a.status, b.status], url).toEqual([200, 200])
          expect(b.headers.get('etag'), url).toBe(a.headers.get('etag'))
          expect(Buffer.from(await b.arrayBuffer()).equals(Buffer.from(await a.arrayBuffer())), url).toBe(true)
        }),
      )
    }
  })

  it('unpacks its archive into the same JSON tree', () => {
    const out = path.join(root, 'unpacked')
    execFileSync('mkdir', ['-p', out])
    execFileSync('tar', ['-xzf', path.join(distDir, 'current/public', pointer.archive!.path), '-C', out])
    execFileSync('diff', ['-r', path.join(out, 'public/api'), path.join(distDir, 'current/public/api')])
  })
})

/** Copies a folder creating every entry in reverse name order (another directory order, another load order). */
function copyReversed(from: string, to: string): void {
  mkdirSync(to, { recursive: true })
  for (const name of readdirSync(from).sort().reverse()) {
    const source = path.join(from, name)
    if (statSync(source).isDirectory()) copyReversed(source, path.join(to, name))
    else cpSync(source, path.join(to, name))
  }
}
