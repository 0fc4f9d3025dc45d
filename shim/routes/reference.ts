/**
 * Routes of reference data (SPEC.md §4 "Reference") when they reach the shim: a query string is
 * present. Without a filter the answer is the pre-rendered file (same bytes); a filter lists the
 * reference table with the same raw-list renderer the build uses.
 */
import { renderRawListBody } from '../../build/render/body.ts'
import { categoriesQuerySchema, emptyQuerySchema, gameVersionsQuerySchema } from '../../build/schema/query.ts'
import { mutableCacheControl } from '../app.ts'
import { notFound } from '../errors.ts'
import { sendStatic } from '../lookup.ts'
import { readQuery } from '../query.ts'
import { sendBody } from '../respond.ts'
import type { Route, RouteInput } from './index.ts'

/** Stored JSON of one kind of reference item, in catalog order, optionally of one filter value. */
async function listReference(input: RouteInput, kind: string, filter?: string): Promise<string[]> {
  const rows = await input.ctx.release.db.all<{ json: string }>(
    filter === undefined
      ? `SELECT json FROM reference WHERE kind = ? ORDER BY position`
      : `SELECT json FROM reference WHERE kind = ? AND filter = ? ORDER BY position`,
    filter === undefined ? [kind] : [kind, filter],
  )
  return rows.map((r) => r.json)
}

/** GET /categories?type=: all categories (static bytes), or those of one project type. */
async function handleCategories(input: RouteInput): Promise<void> {
  const { type } = readQuery(input.search, categoriesQuerySchema)
  if (type === undefined) return sendStatic(input, '/categories', 'Categories')
  sendBody(input.event, renderRawListBody(await listReference(input, 'category', type)), mutableCacheControl(input.ctx))
}

/**
 * GET /{game}/versions?snapshots=: releases only (the static file) by default, every game version
 * newest first with snapshots=true. Any first segment other than the catalog's game is a 404.
 */
async function handleGameVersions(input: RouteInput): Promise<void> {
  const { ctx } = input
  if (input.params.game !== ctx.release.game) throw notFound(`The path /api/v1/${input.params.game}/versions`)
  const { snapshots } = readQuery(input.search, gameVersionsQuerySchema)
  if (!snapshots) return sendStatic(input, `/${ctx.release.game}/versions`, 'Game versions')
  sendBody(input.event, renderRawListBody(await listReference(input, 'game-version')), mutableCacheControl(ctx))
}

/** A reference path without parameters: its pre-rendered file (unknown parameters are ignored). */
function serveStaticPath(apiPath: string, what: string): Route['handler'] {
  return async (input) => {
    readQuery(input.search, emptyQuerySchema)
    await sendStatic(input, apiPath, what)
  }
}

/**
 * The reference routes. The game route is a `:param` pattern of two segments and must stay LAST of
 * all routes (index.ts lists this file last), so `/projects/versions` and the like reach their own
 * routes first; it answers 404 for any segment but the catalog's game.
 */
export const referenceRoutes: Route[] = [
  { pattern: ['categories'], handler: handleCategories },
  { pattern: ['types'], handler: serveStaticPath('/types', 'Content types') },
  { pattern: ['statistics'], handler: serveStaticPath('/statistics', 'Statistics') },
  { pattern: ['openapi.json'], handler: serveStaticPath('/openapi.json', 'The API description') },
  { pattern: [':game', 'versions'], handler: handleGameVersions },
]
