/**
 * Pre-renders each visible version under the names clients use most: `/versions/{id}`,
 * `/projects/{slug}/versions/{number}` and each file hash that resolves to it (a hash in several
 * versions of a project resolves to the newest). One body, hard links for the other names. The other
 * spellings (project id, version id under a project, any case) reach the shim, which answers with
 * these same files: at the large catalog every extra name per version costs a million links.
 */
import { OWNS_SHA1, OWNS_SHA256, type HashOwners } from '../catalog.ts'
import type { BodyRef } from '../catalog-memo.ts'
import { openDb, type Db } from '../db/sqlite.ts'
import { renderRawBytes } from '../render/body.ts'
import { etagSize } from '../render/etag.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { apiFile } from '../static-paths.ts'
import { prefetchBatches } from './prefetch.ts'

const BATCH = 2000

/**
 * Opens a reading connection to the complete catalog: writeVersionFiles reads through it, on its
 * own SQLite thread, and closes it. Its two queries are kept prepared, so the page asked for ahead
 * runs while this thread renders the last one (keepingStatements, db/sqlite.ts).
 */
export async function prepareVersionFiles(catalogFile: string, cacheKib: number): Promise<Db> {
  const db = await openDb(catalogFile, { readonly: true, statementCache: 2 })
  try {
    await db.exec(`PRAGMA cache_size = -${cacheKib};`)
    return db
  } catch (err) {
    await db.close()
    throw err
  }
}

/**
 * The hashes a version answers for, from its files (rowid, sha256, sha1) and the owners ranked by
 * the catalog (HashOwners): its SHA-256s, then its SHA-1s, each in ascending order.
 */
export function ownedHashes(files: readonly [number, string, string | null][], owners: HashOwners): string[] {
  const sha256: string[] = []
  const sha1: string[] = []
  for (const [rowid, h256, h1] of files) {
    const bits = owners[rowid] ?? 0
    if (bits & OWNS_SHA256) sha256.push(h256)
    if (bits & OWNS_SHA1 && h1 !== null) sha1.push(h1)
  }
  return [...sha256.sort(), ...sha1.sort()]
}

/**
 * Writes every version's static files, reading through `db` from prepareVersionFiles (closed when
 * done); `stored`: whether a version's body (by rowid) is known to be in the content store. With
 * `unread`, such a body is named by the SHA-256 and size its catalog row gives (`body_sha256`,
 * `body_etag`) and not read at all: its JSON is the live release's, and so is its body (at the large
 * catalog a rebuild reads a thousandth of the million bodies; the seal takes the others from the
 * previous snapshot, body-pack.ts). Returns how many bodies it named so.
 */
export async function writeVersionFiles(
  db: Db,
  writer: ReleaseSink,
  owners: HashOwners,
  stored: (rowid: number) => boolean = () => false,
  unread = false,
): Promise<{ unread: number }> {
  type Row = { rowid: number; id: string; number: string; slug: string; body_sha256: string | null; body_etag: string | null; files: string }
  const batches = prefetchBatches(0, async (last: number) => {
    const rows = await db.all<Row>(
      `SELECT v.rowid, v.id, v.version_number AS number, p.slug, v.body_sha256, v.body_etag,
         (SELECT json_group_array(json_array(f.rowid, f.sha256, f.sha1)) FROM files f WHERE f.version_id = v.id) AS files
       FROM versions v JOIN projects p ON p.id = v.project_id
       WHERE v.rowid > ? ORDER BY v.rowid LIMIT ${BATCH}`,
      [last],
    )
    if (rows.length === 0) return null
    const known = new Map<number, BodyRef>()
    if (unread) {
      for (const r of rows) {
        const size = r.body_etag === null ? null : etagSize(r.body_etag)
        if (stored(r.rowid) && r.body_sha256 !== null && size !== null) known.set(r.rowid, { sha256: r.body_sha256, size })
      }
    }
    const unknown = rows.filter((r) => !known.has(r.rowid)).map((r) => r.rowid)
    const json = new Map<number, string>()
    if (unknown.length > 0) {
      const bodies = await db.all<{ rowid: number; json: string }>(`SELECT rowid, json FROM versions WHERE rowid IN (SELECT value FROM json_each(?))`, [
        JSON.stringify(unknown),
      ])
      for (const b of bodies) json.set(b.rowid, b.json)
    }
    return { batch: { rows, known, json }, next: rows[rows.length - 1]!.rowid }
  })
  let named = 0
  try {
    for await (const { rows, known, json } of batches) {
      named += known.size
      for (const r of rows) {
        const names = [
          apiFile(`/versions/${r.id}`),
          apiFile(`/projects/${r.slug}/versions/${r.number}`),
          ...ownedHashes(JSON.parse(r.files) as [number, string, string | null][], owners).map((h) => apiFile(`/version-files/${h}`)),
        ]
        const body = known.get(r.rowid)
        if (body) writer.writeStored(names, body.sha256, body.size)
        else writer.write(names, renderRawBytes(json.get(r.rowid)!), stored(r.rowid))
      }
      await writer.drain()
    }
  } finally {
    await db.close()
  }
  return { unread: named }
}
