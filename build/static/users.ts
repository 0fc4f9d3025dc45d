/** Pre-renders each user's profile and project list (not paginated: all public projects, downloads desc). */
import { keepingStatements, type Db } from '../db/sqlite.ts'
import { renderRawBytes, renderRawListBytes } from '../render/body.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { apiFile } from '../static-paths.ts'
import { prefetchBatches } from './prefetch.ts'
import { groupBy } from './projects.ts'

const BATCH = 2000

/** SQL listing a user's public projects (member or owner) in the one order both paths use. */
export const userProjectsSql = `
  SELECT m.user_id, p.summary_json AS json FROM (SELECT DISTINCT user_id, project_id FROM project_members) m
  JOIN projects p ON p.id = m.project_id
  WHERE m.user_id IN (SELECT value FROM json_each(?))
  ORDER BY m.user_id, p.downloads DESC, p.id`

/** Writes every user's static files. */
export async function writeUserFiles(catalog: Db, writer: ReleaseSink): Promise<void> {
  // Kept prepared, so the page asked for ahead runs while this thread writes the last (db/sqlite.ts).
  const db = keepingStatements(catalog, 2)
  const batches = prefetchBatches('', async (last: string) => {
    const users = await db.all<{ id: string; username: string; profile_json: string }>(
      `SELECT id, username, profile_json FROM users WHERE id > ? ORDER BY id LIMIT ${BATCH}`,
      [last],
    )
    if (users.length === 0) return null
    const projects = groupBy(
      await db.all<{ user_id: string; json: string }>(userProjectsSql, [JSON.stringify(users.map((u) => u.id))]),
      (r) => r.user_id,
    )
    return { batch: { users, projects }, next: users[users.length - 1]!.id }
  })
  try {
    for await (const { users, projects } of batches) {
      for (const u of users) {
        writer.write([apiFile(`/users/${u.username}`), apiFile(`/users/${u.id}`)], renderRawBytes(u.profile_json))
        const list = renderRawListBytes((projects.get(u.id) ?? []).map((r) => r.json))
        writer.write([apiFile(`/users/${u.username}/projects`), apiFile(`/users/${u.id}/projects`)], list)
      }
      await writer.drain()
    }
  } finally {
    await db.release()
  }
}
