/**
 * Pre-renders each visible version under the names clients use most: `/versions/{id}`,
 * `/projects/{slug}/versions/{number}` and each file hash that resolves to it (a hash in several
 * versions of a project resolves to the newest). One body, hard links for the other names. The other
 * spellings (project id, version id under a project, any case) reach the shim, which answers with
 * these same files: at the large catalog every extra name per version costs a million links.
 */
import type { Db } from '../db/sqlite.ts'
import { renderRawBody } from '../render/body.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { apiFile } from '../static-paths.ts'
import { prefetchBatches } from './prefetch.ts'

const BATCH = 2000

/** Writes every version's static files. */
export async function writeVersionFiles(db: Db, writer: ReleaseSink): Promise<void> {
  await db.exec(`
    CREATE TEMP TABLE hash_owner AS
      SELECT hash, version_id FROM (
        SELECT f.sha256 AS hash, f.version_id, row_number() OVER (PARTITION BY f.sha256 ORDER BY v.rank) AS rn
        FROM files f JOIN versions v ON v.id = f.version_id
        UNION ALL
        SELECT f.sha1, f.version_id, row_number() OVER (PARTITION BY f.sha1 ORDER BY v.rank)
        FROM files f JOIN versions v ON v.id = f.version_id WHERE f.sha1 IS NOT NULL
      ) WHERE rn = 1;
    CREATE INDEX temp.hash_owner_version ON hash_owner(version_id);
  `)
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
  for await (const rows of batches) {
    for (const r of rows) {
      const names = [
        apiFile(`/versions/${r.id}`),
        apiFile(`/projects/${r.slug}/versions/${r.number}`),
        ...(JSON.parse(r.hashes) as string[]).map((h) => apiFile(`/version-files/${h}`)),
      ]
      writer.write(names, renderRawBody(r.json).bytes)
    }
    await writer.drain()
  }
  await db.exec(`DROP TABLE temp.hash_owner`)
}
