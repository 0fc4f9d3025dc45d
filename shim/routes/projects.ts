/**
 * Routes of projects (SPEC.md §4 "Projects"): search and bulk read, and the single-project reads
 * that reach the shim (non-canonical path or a query string), answered with the static bytes.
 */
import { renderBody, renderPageMeta, renderRawListBody } from '../../build/render/body.ts'
import { filesQuerySchema, projectsQuerySchema } from '../../build/schema/query.ts'
import { mutableCacheControl } from '../app.ts'
import { requireProject, sendStatic } from '../lookup.ts'
import { readQuery } from '../query.ts'
import { sendBody } from '../respond.ts'
import { listProjectsByIds, listSearchPage } from '../search.ts'
import type { Route, RouteInput } from './index.ts'

/** GET /projects and /search: a bulk read when `ids` is given (no meta), a search otherwise. */
async function handleSearch(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, projectsQuerySchema)
  const db = ctx.release.db
  if (query.ids) {
    sendBody(event, renderRawListBody(await listProjectsByIds(db, query.ids)), mutableCacheControl(ctx))
    return
  }
  const page = await listSearchPage(db, query)
  sendBody(event, renderRawListBody(page.items, renderPageMeta(query.page, query.limit, page.total)), mutableCacheControl(ctx))
}

/** GET /projects/{idOrSlug}: the pre-rendered detail of the canonical slug path. */
async function handleProject(input: RouteInput): Promise<void> {
  const project = await requireProject(input.ctx, input.params.idOrSlug!)
  await sendStatic(input, `/projects/${project.slug}`, `Project ${JSON.stringify(input.params.idOrSlug)}`)
}

/** GET /projects/{idOrSlug}/dependencies: the pre-rendered dependencies of the canonical slug path. */
async function handleDependencies(input: RouteInput): Promise<void> {
  const project = await requireProject(input.ctx, input.params.idOrSlug!)
  await sendStatic(input, `/projects/${project.slug}/dependencies`, `Project ${JSON.stringify(input.params.idOrSlug)}`)
}

/**
 * GET /projects/{idOrSlug}/files: the current version's files (static), or with all=true the files
 * of every published version, newest version first, primary first then by position. The File
 * objects come from the stored version JSON, so they are the same bytes as inside the versions.
 */
async function handleFiles(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const { all } = readQuery(input.search, filesQuerySchema)
  const project = await requireProject(ctx, input.params.idOrSlug!)
  if (!all) {
    await sendStatic(input, `/projects/${project.slug}/files`, `Project ${JSON.stringify(input.params.idOrSlug)}`)
    return
  }
  const rows = await ctx.release.db.all<{ json: string }>(
    `SELECT f.value AS json FROM versions v, json_each(v.json, '$.files') f
     WHERE v.project_id = ? ORDER BY v.rank, f.value->>'primary' DESC, f.key`,
    [project.id],
  )
  const files: unknown[] = rows.map((r) => JSON.parse(r.json))
  sendBody(event, renderBody(files), mutableCacheControl(ctx))
}

/** The projects routes (literal paths first). */
export const projectsRoutes: Route[] = [
  { pattern: ['projects'], handler: handleSearch },
  { pattern: ['search'], handler: handleSearch },
  { pattern: ['projects', ':idOrSlug'], handler: handleProject },
  { pattern: ['projects', ':idOrSlug', 'dependencies'], handler: handleDependencies },
  { pattern: ['projects', ':idOrSlug', 'files'], handler: handleFiles },
]
