/**
 * Routes of versions (SPEC.md §4 "Versions"): the filtered, paged versions list of a project, the
 * bulk read by ids, and the single-version reads that reach the shim (non-canonical path or a query
 * string), answered with the pre-rendered bytes of the canonical path.
 */
import { renderPageMeta, renderRawListBody } from '../../build/render/body.ts'
import { omitChangelog } from '../../build/render/resources.ts'
import { versionSchema } from '../../build/schema/api.ts'
import { versionsBulkQuerySchema, versionsListQuerySchema } from '../../build/schema/query.ts'
import { mutableCacheControl } from '../app.ts'
import { notFound } from '../errors.ts'
import { requireProject, sendStatic } from '../lookup.ts'
import { readQuery } from '../query.ts'
import { sendBody } from '../respond.ts'
import { listVersionPage, listVersionsByIds } from '../versions-query.ts'
import type { Route, RouteInput } from './index.ts'

/**
 * Stored Version JSON without its changelog (includeChangelog=false). Parsing through the schema
 * keeps the field order of the stored rendering, so every other byte stays the same.
 */
function renderWithoutChangelogs(items: readonly string[]): string[] {
  return items.map((json) => JSON.stringify(omitChangelog(versionSchema.parse(JSON.parse(json)))))
}

/** GET /projects/{idOrSlug}/versions: newest first, filtered, paged; the default page is the static file's bytes. */
async function handleProjectVersions(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, versionsListQuerySchema)
  const project = await requireProject(ctx, input.params.idOrSlug!)
  const page = await listVersionPage(ctx.release.db, project.id, query, query.page, query.limit)
  const items = query.includeChangelog ? page.items : renderWithoutChangelogs(page.items)
  sendBody(event, renderRawListBody(items, renderPageMeta(query.page, query.limit, page.total)), mutableCacheControl(ctx))
}

/** GET /projects/{idOrSlug}/versions/{version}: by id or (case-sensitive) number, within that project. */
async function handleProjectVersion(input: RouteInput): Promise<void> {
  const { ctx, params } = input
  const project = await requireProject(ctx, params.idOrSlug!)
  // An id names one version exactly, so it wins over a number that happens to be equal to it.
  const version = await ctx.release.db.get<{ number: string }>(
    `SELECT version_number AS number FROM versions WHERE project_id = ?1 AND (id = ?2 OR version_number = ?2) ORDER BY id = ?2 DESC LIMIT 1`,
    [project.id, params.version!],
  )
  const what = `Version ${JSON.stringify(params.version)} of project ${JSON.stringify(params.idOrSlug)}`
  if (!version) throw notFound(what)
  await sendStatic(input, `/projects/${project.slug}/versions/${version.number}`, what)
}

/** GET /versions/{id}: the pre-rendered version of its canonical path. */
async function handleVersion(input: RouteInput): Promise<void> {
  const id = input.params.id!
  const what = `Version ${JSON.stringify(id)}`
  // Checked in the catalog first, so a path-like id never reaches the file lookup.
  const version = await input.ctx.release.db.get<{ id: string }>(`SELECT id FROM versions WHERE id = ?`, [id])
  if (!version) throw notFound(what)
  await sendStatic(input, `/versions/${version.id}`, what)
}

/** GET /versions?ids=: the versions asked for, in that order, each once; unknown ones left out; no meta. */
async function handleVersionsBulk(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, versionsBulkQuerySchema)
  const items = await listVersionsByIds(ctx.release.db, [...new Set(query.ids)])
  sendBody(event, renderRawListBody(query.includeChangelog ? items : renderWithoutChangelogs(items)), mutableCacheControl(ctx))
}

/** The versions routes (literal paths first). */
export const versionsRoutes: Route[] = [
  { pattern: ['versions'], handler: handleVersionsBulk },
  { pattern: ['versions', ':id'], handler: handleVersion },
  { pattern: ['projects', ':idOrSlug', 'versions'], handler: handleProjectVersions },
  { pattern: ['projects', ':idOrSlug', 'versions', ':version'], handler: handleProjectVersion },
]
