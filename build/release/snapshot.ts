/**
 * The offline snapshot of a release: one SQLite file holding the published catalog (a consistent
 * copy made with VACUUM INTO: no -wal/-shm sidecars) plus every pre-rendered body, so the shim can
 * serve the whole API from this one file (`SNAPSHOT=file npm run serve`). Made as temp file →
 * integrity_check → fsync → rename. Bodies are read and inserted in batches, one pass over the
 * manifest in write order (the names of one body are adjacent, so each body is read once).
 *
 * Schema, beside the catalog tables of build/db/schema.ts:
 *   static_paths(path TEXT PRIMARY KEY, sha256 TEXT)  release-relative file of an API URL
 *   static_bodies(sha256 TEXT PRIMARY KEY, body BLOB)  the exact bytes served (ETag = etag(body))
 *   snapshot_info(key TEXT PRIMARY KEY, value TEXT)    format, serial, id, createdAt, sourceRevision
 */
import { closeSync, createReadStream, fsyncSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { openDb, type Db, type SqlValue } from '../db/sqlite.ts'

/** Schema of the tables a snapshot adds to the catalog. */
export const snapshotSchema = `
  CREATE TABLE static_paths (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE static_bodies (sha256 TEXT PRIMARY KEY, body BLOB NOT NULL);
  CREATE TABLE snapshot_info (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
`

/** What a snapshot records about its release. */
export interface SnapshotRelease {
  serial: number
  id: string
  createdAt: string
  sourceRevision: string | null
}

const BODY_BATCH = 200
const PATH_BATCH = 4096

/** Writes `target` from the release's catalog.sqlite and manifest.tsv. */
export async function writeSnapshot(releaseDir: string, target: string, release: SnapshotRelease): Promise<void> {
  const tmp = `${target}.tmp`
  rmSync(tmp, { force: true })
  const catalog = await openDb(path.join(releaseDir, 'catalog.sqlite'), { readonly: true })
  try {
    await catalog.run(`VACUUM INTO ?`, [tmp])
  } finally {
    await catalog.close()
  }
  const db = await openDb(tmp)
  try {
    await db.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; ${snapshotSchema} BEGIN;`)
    const info: Record<string, string | null> = { format: '1', serial: String(release.serial), id: release.id, createdAt: release.createdAt, sourceRevision: release.sourceRevision }
    for (const [key, value] of Object.entries(info)) await db.run(`INSERT INTO snapshot_info VALUES (?, ?)`, [key, value])
    await insertStatic(db, releaseDir)
    await db.exec(`COMMIT; PRAGMA journal_mode = DELETE;`)
    const check = await db.all<{ integrity_check: string }>(`PRAGMA integrity_check`)
    if (check.length !== 1 || check[0]!.integrity_check !== 'ok') throw new Error(`snapshot integrity_check failed: ${JSON.stringify(check.slice(0, 5))}`)
  } catch (err) {
    await db.close().catch(() => {})
    rmSync(tmp, { force: true })
    throw err
  }
  await db.close()
  const fd = openSync(tmp, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, target)
}

/** Streams manifest.tsv: API names into static_paths, each distinct body once into static_bodies. */
async function insertStatic(db: Db, releaseDir: string): Promise<void> {
  let paths: [string, string][] = []
  let bodies: SqlValue[] = []
  let lastSha = ''
  const flushPaths = async (): Promise<void> => {
    if (paths.length === 0) return
    await db.run(`INSERT INTO static_paths (path, sha256) SELECT value ->> 0, value ->> 1 FROM json_each(?)`, [JSON.stringify(paths)])
    paths = []
  }
  const flushBodies = async (): Promise<void> => {
    if (bodies.length === 0) return
    const rows = Array.from({ length: bodies.length / 2 }, () => '(?, ?)').join(', ')
    await db.run(`INSERT OR IGNORE INTO static_bodies (sha256, body) VALUES ${rows}`, bodies)
    bodies = []
  }
  const lines = createInterface({ input: createReadStream(path.join(releaseDir, 'manifest.tsv')), crlfDelay: Infinity })
  for await (const line of lines) {
    if (!line.startsWith('public/api/')) continue
    const [name, sha256] = line.split('\t') as [string, string]
    paths.push([name, sha256])
    if (sha256 !== lastSha) {
      bodies.push(sha256, readFileSync(path.join(releaseDir, name)))
      lastSha = sha256
    }
    if (paths.length >= PATH_BATCH) await flushPaths()
    if (bodies.length >= BODY_BATCH * 2) await flushBodies()
  }
  await flushPaths()
  await flushBodies()
}
