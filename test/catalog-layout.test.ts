/**
 * files.version_rowid (build/db/schema.ts): every file row names its version's rowid, the shim's
 * cache-off hash lookups read the version by it, and a catalog built before the column existed is
 * still served, joined by id, with the same answers. Through the sample catalog's real build, its
 * release copied and turned into the old layout, and real servers on both.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { findSingleLookupsByHashes } from '../shim/versions-query.ts'
import { startServer, type TestServer } from './harness.ts'

/** The columns of files and the hash indexes before version_rowid: as catalogs built before Session 22 have them. */
const OLD_LAYOUT = `
  DROP INDEX files_sha256;
  DROP INDEX files_sha1;
  ALTER TABLE files DROP COLUMN version_rowid;
  CREATE INDEX files_sha256 ON files(sha256, project_id, version_id);
  CREATE INDEX files_sha1 ON files(sha1, project_id, version_id);
`

describe('files.version_rowid', () => {
  let server: TestServer
  let old: TestServer
  let oldDist = ''
  /** Every hash of the catalog's files, and two of no file. */
  let hashes: string[] = []

  beforeAll(async () => {
    server = await startServer(inject('distDir'), { cacheBytes: 0 })
    const rows = await server.ctx.release.db.all<{ sha256: string; sha1: string | null }>(`SELECT sha256, sha1 FROM files ORDER BY id`)
    // A file in several versions of its project has one row in each: its hashes once.
    hashes = [...new Set(rows.flatMap((r) => (r.sha1 ? [r.sha256, r.sha1] : [r.sha256]))), 'f'.repeat(64), 'e'.repeat(40)]
    // The live release copied: its catalog in the old layout, its public tree shared.
    oldDist = mkdtempSync(path.join(os.tmpdir(), 'catalog-layout-'))
    const releaseDir = path.join(oldDist, 'releases', '00000001')
    mkdirSync(releaseDir, { recursive: true })
    const catalog = path.join(releaseDir, 'catalog.sqlite')
    copyFileSync(path.join(server.ctx.release.dir, 'catalog.sqlite'), catalog)
    symlinkSync(server.ctx.release.publicDir, path.join(releaseDir, 'public'))
    symlinkSync('releases/00000001', path.join(oldDist, 'current'))
    const db = await openDb(catalog)
    await db.exec(OLD_LAYOUT)
    await db.close()
    old = await startServer(oldDist, { cacheBytes: 0 })
  }, 60_000)

  afterAll(async () => {
    await old?.close()
    await server?.close()
    if (oldDist) rmSync(oldDist, { recursive: true, force: true })
  })

  it('names the rowid of the version each file row names', async () => {
    const db = server.ctx.release.db
    const files = await db.get<{ n: number; wrong: number }>(
      `SELECT count(*) AS n, sum(v.rowid IS NOT f.version_rowid) AS wrong FROM files f LEFT JOIN versions v ON v.id = f.version_id`,
    )
    expect(files!.n).toBeGreaterThan(50)
    expect(files!.wrong).toBe(0)
    expect(server.ctx.release.filesVersionRowid).toBe(true)
    expect(old.ctx.release.filesVersionRowid).toBe(false)
    // The hash lookups' query reads the version by rowid from the hash index, not through versions' id index.
    const plan = await db.all<{ detail: string }>(
      `EXPLAIN QUERY PLAN SELECT v.json FROM files f JOIN versions v ON v.rowid = f.version_rowid WHERE f.sha256 = ? ORDER BY v.rank LIMIT 1`,
      ['0'.repeat(64)],
    )
    expect(plan.map((r) => r.detail)).toEqual(expect.arrayContaining([expect.stringMatching(/COVERING INDEX files_sha256/), expect.stringMatching(/INTEGER PRIMARY KEY \(rowid=\?\)/)]))
  })

  it('finds the bytes the build rendered for each hash, in both layouts', async () => {
    const bodies = async (rowid: boolean): Promise<Map<string, string>> => {
      const release = rowid ? server.ctx.release : old.ctx.release
      const found = await findSingleLookupsByHashes(release.db, hashes, rowid)
      return new Map(found.map((f) => [f.hash, f.body.toString()]))
    }
    const byRowid = await bodies(true)
    const byId = await bodies(false)
    expect(byRowid.size).toBe(hashes.length - 2)
    expect([...byId.entries()].sort()).toEqual([...byRowid.entries()].sort())
    for (const hash of hashes.slice(0, -2)) {
      const file = path.join(server.ctx.release.publicDir, 'api', 'v1', 'version-files', `${hash}.json`)
      expect(byRowid.get(hash), hash).toBe(readFileSync(file, 'utf8'))
    }
  })

  it('answers bulk lookups through SQLite alike from both layouts', async () => {
    // A bulk lookup takes at most 100 hashes: a page of the catalog's, and one of no file.
    const asked = [...hashes.slice(0, 99), hashes[hashes.length - 1]!]
    const url = `/version-files?hashes=${asked.join(',')}`
    const [fromNew, fromOld] = await Promise.all([server.get(url), old.get(url)])
    expect([fromNew.status, fromOld.status]).toEqual([200, 200])
    const [a, b] = [await fromNew.text(), await fromOld.text()]
    expect(b).toBe(a)
    expect(Object.keys((JSON.parse(a) as { data: Record<string, unknown> }).data).sort()).toEqual(asked.slice(0, 99).sort())
    expect(fromOld.headers.get('etag')).toBe(fromNew.headers.get('etag'))
  })
})
