/**
 * Routes of users (SPEC.md §4 "Users"): the bulk read, and the profile and project list of one user
 * when they reach the shim (a username in another case, or a query string), answered with the
 * pre-rendered bytes of the canonical path.
 */
import { renderRawListBody } from '../../build/render/body.ts'
import { usersQuerySchema } from '../../build/schema/query.ts'
import { mutableCacheControl } from '../app.ts'
import type { ShimContext } from '../context.ts'
import { notFound } from '../errors.ts'
import { sendStatic } from '../lookup.ts'
import { readQuery } from '../query.ts'
import { sendBody } from '../respond.ts'
import type { Route, RouteInput } from './index.ts'

/**
 * Profiles of the users named by id (exact) or username (case-insensitive), in the order first
 * asked; a user named twice (even once by id and once by username) is listed once.
 */
const usersByIdsSql = `
  SELECT profile_json FROM (
    SELECT u.id, u.profile_json, CAST(j.key AS INTEGER) AS k FROM json_each(?1) j JOIN users u ON u.id = j.value
    UNION ALL
    SELECT u.id, u.profile_json, CAST(j.key AS INTEGER) AS k FROM json_each(?1) j JOIN users u ON u.username = lower(j.value)
  ) GROUP BY id ORDER BY min(k)`

/** A user's canonical username; null when absent. Usernames are stored lowercase. */
async function findUsername(ctx: ShimContext, idOrUsername: string): Promise<string | null> {
  const row = await ctx.release.db.get<{ username: string }>(
    `SELECT username FROM users WHERE id = ?1 UNION ALL SELECT username FROM users WHERE username = lower(?1) LIMIT 1`,
    [idOrUsername],
  )
  return row?.username ?? null
}

/** GET /users?ids=: profiles in the order asked, unknown left out, no meta. */
async function handleUsers(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const { ids } = readQuery(input.search, usersQuerySchema)
  const rows = await ctx.release.db.all<{ profile_json: string }>(usersByIdsSql, [JSON.stringify(ids)])
  sendBody(event, renderRawListBody(rows.map((r) => r.profile_json)), mutableCacheControl(ctx))
}

/** Answers with a pre-rendered file of the user's canonical path, `suffix` appended. */
async function sendUserFile(input: RouteInput, suffix: string): Promise<void> {
  const given = input.params.username!
  const what = `User ${JSON.stringify(given)}`
  const username = await findUsername(input.ctx, given)
  if (!username) throw notFound(what)
  await sendStatic(input, `/users/${username}${suffix}`, what)
}

/** The users routes (literal paths first). */
export const usersRoutes: Route[] = [
  { pattern: ['users'], handler: handleUsers },
  { pattern: ['users', ':username'], handler: (input) => sendUserFile(input, '') },
  { pattern: ['users', ':username', 'projects'], handler: (input) => sendUserFile(input, '/projects') },
]
