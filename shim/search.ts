/**
 * The project search of GET /projects and /search. Without q or filters: the projects table and
 * its sort indexes. Otherwise the search index (build/search-index.ts): relevance through ranking
 * stages (shim/search-rank.ts), other orders through shim/search-sort.ts. Every value the user
 * typed is a bound parameter or a quoted token of an FTS5 expression (shim/search-expr.ts).
 */
import type { z } from 'zod'
import type { Db, SqlValue } from '../build/db/sqlite.ts'
import type { projectsQuerySchema } from '../build/schema/query.ts'
import { hasBitmap } from '../build/search-bitmaps.ts'
import { countByBitmaps } from './search-count.ts'
import { listFilterGroups, renderCountParts, renderFilterExpression, renderMatchAll, withFilter } from './search-expr.ts'
import { getSearchTokens, planSearch } from './search-plan.ts'
import { listRelevancePage } from './search-rank.ts'
import { countMatches, listSortedPage } from './search-sort.ts'

/** Validated parameters of a project search. */
export type ProjectsQuery = z.output<typeof projectsQuerySchema>

/** One page of a search: stored summary JSON of its items, and the exact total. */
export interface SearchPage {
  items: string[]
  total: number
}

/**
 * Sort keys of the unfiltered list; each ends in the unique `id` so pages never overlap or skip.
 * `downloads` must stay `downloads DESC, id` exactly: build/static/site.ts pre-renders the first
 * page with it, and search_docs.rank (build/search-index.ts) numbers projects in that order.
 */
const orderBy = {
  downloads: 'p.downloads DESC, p.id',
  favorites: 'p.favorites DESC, p.id',
  updated: 'p.updated_at DESC, p.id',
  newest: 'p.published_at DESC, p.id',
  name: 'p.name COLLATE NOCASE, p.id',
} as const

/** Runs a search and returns the requested page with the exact total. */
export async function listSearchPage(db: Db, query: ProjectsQuery): Promise<SearchPage> {
  const tokens = getSearchTokens(query.q)
  const groups = listFilterGroups(query)
  const filter = renderFilterExpression(groups)
  const offset = (query.page - 1) * query.limit
  if (tokens.length === 0 && filter === null) return listAllPage(db, query, offset)
  const sort = query.sort === 'relevance' && tokens.length === 0 ? 'downloads' : query.sort
  const plan = tokens.length > 0 ? await planSearch(db, tokens) : null
  // Every plain word AND the filters: from bitmaps when all are common (one word alone has a stored
  // count; a rare word has no bitmap, and FTS5 counts cheaply from its short doclist).
  const common = plan === null || plan.docs.every((d) => hasBitmap(d, plan.documents))
  const coreCount = (tokens.length > 1 || filter !== null) && common ? await countByBitmaps(db, tokens, groups) : null
  let ranks: number[]
  let total: number
  if (sort === 'relevance') {
    ;({ ranks, total } = await listRelevancePage(db, plan!, filter, offset, query.limit, coreCount))
  } else {
    // Other orders list the same matches as relevance does (typo candidates included).
    const typos = plan !== null && plan.typos.size > 0
    const match = plan ? withFilter(renderMatchAll(plan, typos), filter) : filter!
    const parts = plan ? renderCountParts(plan, typos) : { core: filter!, word: null, extra: null }
    total = await countMatches(db, { ...parts, coreCount }, plan ? filter : null)
    ranks = offset < total ? await listSortedPage(db, match, sort, offset, query.limit) : []
  }
  return { items: await readSummaries(db, ranks), total }
}

/** The unfiltered list in one of the orders (indexes of the projects table). */
async function listAllPage(db: Db, query: ProjectsQuery, offset: number): Promise<SearchPage> {
  const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM projects`))?.n ?? 0
  if (offset >= total) return { items: [], total }
  const params: SqlValue[] = [query.limit, offset]
  const rows = await db.all<{ json: string }>(
    `SELECT p.summary_json AS json FROM projects p ORDER BY ${orderBy[query.sort === 'relevance' ? 'downloads' : query.sort]} LIMIT ? OFFSET ?`,
    params,
  )
  return { items: rows.map((r) => r.json), total }
}

/** Stored summaries of projects by download rank, in the order given. */
async function readSummaries(db: Db, ranks: number[]): Promise<string[]> {
  if (ranks.length === 0) return []
  const rows = await db.all<{ json: string }>(
    `SELECT p.summary_json AS json FROM json_each(?) j JOIN search_docs d ON d.rank = j.value JOIN projects p ON p.rowid = d.project_rowid ORDER BY j.key`,
    [JSON.stringify(ranks)],
  )
  return rows.map((r) => r.json)
}

/**
 * Stored summaries of projects asked by id (exact) or slug (case-insensitive), in the order asked;
 * unknown ones are left out and a project asked twice (by id and slug too) is listed once.
 */
export async function listProjectsByIds(db: Db, ids: readonly string[]): Promise<string[]> {
  const rows = await db.all<{ json: string }>(
    `WITH asked AS (
       SELECT j.key AS k, coalesce((SELECT rowid FROM projects WHERE id = j.value), (SELECT rowid FROM projects WHERE slug = lower(j.value))) AS r
       FROM json_each(?1) j
     )
     SELECT p.summary_json AS json FROM (SELECT r, min(k) AS k FROM asked WHERE r IS NOT NULL GROUP BY r) a
     JOIN projects p ON p.rowid = a.r ORDER BY a.k`,
    [JSON.stringify(ids)],
  )
  return rows.map((r) => r.json)
}
