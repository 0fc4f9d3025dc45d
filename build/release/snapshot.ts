/**
 * The offline snapshot of a release: one SQLite file holding the published catalog (a copy of the
 * release's catalog.sqlite, itself compacted by VACUUM INTO and never opened for writing again)
 * plus every pre-rendered body, so the shim can serve the whole API from this one file
 * (`SNAPSHOT=file npm run serve`). Made as temp file → integrity_check → fsync → rename. Bodies
 * are read and inserted in batches, one pass over the body order (body-order.ts: by SHA-256, then
 * name), so each body is read once and static_bodies fills in key order; names go in from a list
 * sorted by name, so static_paths fills in key order too (in body order, 5 million names of the
 * large catalog landed at random places of its B-tree and the pages were re-read from disk again
 * and again).
 *
 * Reproducible: catalog.sqlite is itself deterministic, the copy is byte for byte, and the rows
 * added here go in in fixed orders in a fixed number of transactions, so
 * the same data gives the same bytes — header fields included (file change counter,
 * version-valid-for). Nothing in it names its release or a time: release.json does, with the
 * snapshot's SHA-256, and an unchanged rebuild keeps the previous snapshot's bytes.
 *
 * Schema, beside the catalog tables of build/db/schema.ts:
 *   static_paths(path TEXT PRIMARY KEY, sha256 TEXT)  release-relative file of an API URL
 *   static_bodies(sha256 TEXT PRIMARY KEY, body BLOB)  the exact bytes served (ETag = etag(body))
 *   snapshot_info(key TEXT PRIMARY KEY, value TEXT)    format ('1'), catalogSha256 (of the catalog it copies)
 */
import { copyFileSync, readFileSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db, type SqlValue } from '../db/sqlite.ts'
import { readBodyOrder } from './body-order.ts'
import { BUILD_CACHE_KIB } from '../db/schema.ts'
import { fsyncPath } from './publish.ts'

/** Schema of the tables a snapshot adds to the catalog. */
export const snapshotSchema = `
  CREATE TABLE static_paths (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE static_bodies (sha256 TEXT PRIMARY KEY, body BLOB NOT NULL);
  CREATE TABLE snapshot_info (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
`

const BODY_BATCH = 200
const PATH_BATCH = 4096

/**
 * Writes `target` from the release's catalog.sqlite (of SHA-256 `catalogSha256`), the body order
 * `orderFile` and the same names sorted by name, `pathOrderFile` (body-order.ts).
 */
export async function writeSnapshot(releaseDir: string, orderFile: string, pathOrderFile: string, target: string, catalogSha256: string): Promise<void> {
  const tmp = `${target}.tmp`
  rmSync(tmp, { force: true })
  // copy_file_range: the kernel copies the pages; SQLite would read and write each one itself.
  copyFileSync(path.join(releaseDir, 'catalog.sqlite'), tmp)
  const db = await openDb(tmp)
  try {
    await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; ${snapshotSchema} BEGIN;`)
    await db.run(`INSERT INTO snapshot_info VALUES ('catalogSha256', ?), ('format', '1')`, [catalogSha256])
    await insertBodies(db, releaseDir, orderFile)
    await insertPaths(db, pathOrderFile)
    await db.exec(`COMMIT; PRAGMA journal_mode = DELETE;`)
    const check = await db.all<{ integrity_check: string }>(`PRAGMA integrity_check`)
    if (check.length !== 1 || check[0]!.integrity_check !== 'ok') throw new Error(`snapshot integrity_check failed: ${JSON.stringify(check.slice(0, 5))}`)
  } catch (err) {
    await db.close().catch(() => {})
    rmSync(tmp, { force: true })
    throw err
  }
  await db.close()
  fsyncPath(tmp)
  renameSync(tmp, target)
}

/** Each distinct body once into static_bodies, in the body order (by SHA-256: its key). */
async function insertBodies(db: Db, releaseDir: string, orderFile: string): Promise<void> {
  let bodies: SqlValue[] = []
  let lastSha = ''
  const flush = async (): Promise<void> => {
    if (bodies.length === 0) return
    const rows = Array.from({ length: bodies.length / 2 }, () => '(?, ?)').join(', ')
    await db.run(`INSERT INTO static_bodies (sha256, body) VALUES ${rows}`, bodies)
    bodies = []
  }
  for await (const { name, sha256 } of readBodyOrder(orderFile)) {
    if (sha256 === lastSha) continue
    bodies.push(sha256, readFileSync(path.join(releaseDir, name)))
    lastSha = sha256
    if (bodies.length >= BODY_BATCH * 2) await flush()
  }
  await flush()
}

/** Every API name into static_paths, in name order (its key). */
async function insertPaths(db: Db, pathOrderFile: string): Promise<void> {
  let paths: [string, string][] = []
  const flush = async (): Promise<void> => {
    if (paths.length === 0) return
    await db.run(`INSERT INTO static_paths (path, sha256) SELECT value ->> 0, value ->> 1 FROM json_each(?)`, [JSON.stringify(paths)])
    paths = []
  }
  for await (const { name, sha256 } of readBodyOrder(pathOrderFile)) {
    paths.push([name, sha256])
    if (paths.length >= PATH_BATCH) await flush()
  }
  await flush()
}
