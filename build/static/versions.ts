/**
 * Pre-renders each visible version under the names clients use most: `/versions/{id}`,
 * `/projects/{slug}/versions/{number}` and each file hash that resolves to it (a hash in several
 * versions of a project resolves to the newest). One body, hard links for the other names. The other
 * spellings (project id, version id under a project, any case) reach the shim, which answers with
 * these same files: at the large catalog every extra name per version costs a million links.
 */
import { openDb, type Db } from '../db/sqlite.ts'
import { renderRawBytes } from '../render/body.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { apiFile } from '../static-paths.ts'
import { prefetchBatches } from './prefetch.ts'

const BATCH = 2000

/**
 * Opens a reading connection to the complete catalog and finds, on it, the version each file hash
 * resolves to (`temp.hash_owner`): a sort of every file's two hashes, 33 s of the large catalog's
 * render when it ran on the render's own connection, with nothing else to do meanwhile. Started as
 * soon as the catalog is written, it runs on its own SQLite thread while the site, users and
 * projects are rendered; writeVersionFiles then reads through it and closes it.
 */
export async function prepareVersionFiles(catalogFile: string, cacheKib: number): Promise<Db> {
  const db = await openDb(catalogFile, { readonly: true })
  try {
    await db.exec(`
      PRAGMA cache_size = -${cacheKib};
      CREATE TEMP TABLE hash_owner AS
        SELECT hash, version_id FROM (
          SELECT f.sha256 AS hash, f.version_id, row_number() OVER (PARTITION BY f.sha256 ORDER BY v.rank) AS rn
          FROM files f JOIN versions v ON v.rowid = f.version_rowid
          UNION ALL
          SELECT f.sha1, f.version_id, row_number() OVER (PARTITION BY f.sha1 ORDER BY v.rank)
          FROM files f JOIN versions v ON v.rowid = f.version_rowid WHERE f.sha1 IS NOT NULL
        ) WHERE rn = 1;
      CREATE INDEX temp.hash_owner_version ON hash_owner(version_id);
    `)
    return db
  } catch (err) {
    await db.close()
    throw err
  }
}

/** Writes every version's static files, reading through `db` from prepareVersionFiles (closed when done). */
export async function writeVersionFiles(db: Db, writer: ReleaseSink): Promise<void> {
  type Row = { rowid: number; id: string; number: string; project_id: string; slug: string; json: string; hashes: string }
  const batches = prefetchBatches(0, async (last: number) => {
    const rows = await db.all<Row>(
      `SELECT v.rowid, v.id, v.version_number AS number, v.project_id, p.slug, v.json,
         (SELECT json_group_array(hash) FROM hash_owner h WHERE h.version_id = v.id) AS hashes
       FROM versions v JOIN projects p ON p.id = v.project_id
       WHERE v.rowid > ? ORDER BY v.rowid LIMIT ${BATCH}`,
      [last],
    )
    return rows.length === 0 ? null : { batch: rows, next: rows[rows.length - 1]!.rowid }
  })
  try {
    for await (const rows of batches) {
      for (const r of rows) {
        const names = [
          apiFile(`/versions/${r.id}`),
          apiFile(`/projects/${r.slug}/versions/${r.number}`),
          ...(JSON.parse(r.hashes) as string[]).map((h) => apiFile(`/version-files/${h}`)),
        ]
        writer.write(names, renderRawBytes(r.json))
      }
      await writer.drain()
    }
  } finally {
    await db.close()
  }
}
