/**
 * The offline snapshot of a release: one SQLite file holding the published catalog (a copy of the
 * release's catalog.sqlite, itself compacted by VACUUM INTO and never opened for writing again)
 * plus every pre-rendered body, so the shim can serve the whole API from this one file
 * (`SNAPSHOT=file npm run serve`). Made as temp file → quick_check → fsync → rename. Bodies
 * are read (from the build's body pack, body-pack.ts, or else the tree) and inserted in batches, one
 * pass over the body order (body-order.ts: by SHA-256, then name), so each body is read once and
 * static_bodies fills in key order; names go in from a list
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
import { copyFileSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db, type SqlValue } from '../db/sqlite.ts'
import { readBodyOrder } from './body-order.ts'
import { openBodyReader, type BodyPackFiles } from './body-pack.ts'
import { BUILD_CACHE_KIB } from '../db/schema.ts'
import { hashFile, type FileHash } from './hash-file.ts'
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
 * The check of the finished file. quick_check reads every page and checks the B-trees, the free
 * list and every record's format (a torn or corrupt file fails it); unlike integrity_check it does
 * not look every row up again in each index, which would be a SQLite bug, not a fault of this
 * file, and took 21 s warm and 77 s beside the rest of the seal at the large catalog, against
 * 9.5 s. (Through a memory map it took 4.4 s, but the mapped pages count in the build's RSS: 2.8 GB.)
 */
async function checkSnapshot(db: Db): Promise<void> {
  const check = await db.all<{ quick_check: string }>(`PRAGMA quick_check`)
  if (check.length !== 1 || check[0]!.quick_check !== 'ok') throw new Error(`snapshot quick_check failed: ${JSON.stringify(check.slice(0, 5))}`)
}

/**
 * Writes `target` from the release's catalog.sqlite (of SHA-256 `catalogSha256`), the body order
 * `orderFile` and the same names sorted by name, `pathOrderFile` (body-order.ts), reading the
 * bodies from `pack` (the build's body pack) or, when null, the release's tree. Returns the
 * written file's SHA-256 and size: hashed while quick_check reads it (the file's bytes are final
 * once the transaction commits; the check only reads), so the hash of 7.2 GB at the large catalog
 * runs beside the check, on the other core, instead of after it in the build's process.
 */
export async function writeSnapshot(releaseDir: string, orderFile: string, pathOrderFile: string, target: string, catalogSha256: string, pack: BodyPackFiles | null = null): Promise<FileHash> {
  const tmp = `${target}.tmp`
  rmSync(tmp, { force: true })
  // copy_file_range: the kernel copies the pages; SQLite would read and write each one itself.
  copyFileSync(path.join(releaseDir, 'catalog.sqlite'), tmp)
  const db = await openDb(tmp)
  let hashed: FileHash
  try {
    await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; ${snapshotSchema} BEGIN;`)
    await db.run(`INSERT INTO snapshot_info VALUES ('catalogSha256', ?), ('format', '1')`, [catalogSha256])
    await insertBodies(db, releaseDir, orderFile, pack)
    await insertPaths(db, pathOrderFile)
    await db.exec(`COMMIT; PRAGMA journal_mode = DELETE;`)
    const [written] = await Promise.all([hashFile(tmp), checkSnapshot(db)])
    hashed = written
  } catch (err) {
    await db.close().catch(() => {})
    rmSync(tmp, { force: true })
    throw err
  }
  await db.close()
  fsyncPath(tmp)
  renameSync(tmp, target)
  return hashed
}

/** Each distinct body once into static_bodies, in the body order (by SHA-256: its key). */
async function insertBodies(db: Db, releaseDir: string, orderFile: string, pack: BodyPackFiles | null): Promise<void> {
  const reader = openBodyReader(releaseDir, pack)
  let bodies: SqlValue[] = []
  let lastSha = ''
  const flush = async (): Promise<void> => {
    if (bodies.length === 0) return
    const rows = Array.from({ length: bodies.length / 2 }, () => '(?, ?)').join(', ')
    await db.run(`INSERT INTO static_bodies (sha256, body) VALUES ${rows}`, bodies)
    bodies = []
  }
  try {
    for await (const { name, sha256 } of readBodyOrder(orderFile)) {
      if (sha256 === lastSha) continue
      bodies.push(sha256, await reader.read(name, sha256))
      lastSha = sha256
      if (bodies.length >= BODY_BATCH * 2) await flush()
    }
    await flush()
  } finally {
    reader.close()
  }
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
