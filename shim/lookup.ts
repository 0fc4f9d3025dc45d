/** Lookups shared by the dynamic routes: resolving path parameters against the live catalog. */
import { mutableCacheControl } from './app.ts'
import type { ShimContext } from './context.ts'
import { notFound } from './errors.ts'
import { sendBody } from './respond.ts'
import type { RouteInput } from './routes/index.ts'

/** A visible project's keys. */
export interface ProjectKey {
  rowid: number
  id: string
  slug: string
}

/** Finds a visible project by id (exact) or slug (case-insensitive); null when absent. */
export async function findProject(ctx: ShimContext, idOrSlug: string): Promise<ProjectKey | null> {
  const row = await ctx.release.db.get<ProjectKey>(
    `SELECT rowid, id, slug FROM projects WHERE id = ?1 UNION ALL SELECT rowid, id, slug FROM projects WHERE slug = lower(?1) LIMIT 1`,
    [idOrSlug],
  )
  return row ?? null
}

/** Finds a visible project or throws 404 naming it. */
export async function requireProject(ctx: ShimContext, idOrSlug: string): Promise<ProjectKey> {
  const project = await findProject(ctx, idOrSlug)
  if (!project) throw notFound(`Project ${JSON.stringify(idOrSlug)}`)
  return project
}

/**
 * Answers with the pre-rendered file of a canonical API path (e.g. `/projects/sodium` for a request
 * of `/projects/Sodium?x=1`), so both paths return the same bytes; 404 naming `what` when absent.
 */
export async function sendStatic(input: RouteInput, apiPath: string, what: string): Promise<void> {
  const body = await input.ctx.cache.read(input.ctx.release.dir, `/api/v1${apiPath}`)
  if (!body) throw notFound(what)
  sendBody(input.event, body, mutableCacheControl(input.ctx))
}
