/**
 * The project search of GET /projects and /search: filters over project_facets, full text over
 * projects_fts (build/search-index.ts) and sorts from an allow-list. Every value the user typed is
 * a bound parameter; the SQL text is assembled only from the fixed fragments below.
 */
import type { z } from 'zod'
import type { Db, SqlValue } from '../build/db/sqlite.ts'
import type { projectsQuerySchema } from '../build/schema/query.ts'
import { searchColumns } from '../build/search-index.ts'

/** Validated parameters of a project search. */
export type ProjectsQuery = z.output<typeof projectsQuerySchema>

/** One page of a search: stored summary JSON of its items, and the exact total. */
export interface SearchPage {
  items: string[]
  total: number
}

const MAX_TOKENS = 32
const MAX_TOKEN_LENGTH = 64

/**
 * bm25 weight of each projects_fts column, in searchColumns order: the name and its slug forms
 * decide most, the long description least (it mentions many other projects by name).
 */
const columnWeights: Record<(typeof searchColumns)[number], number> = {
  name: 10,
  slug: 8,
  joined: 8,
  summary: 3,
  tags: 4,
  author: 3,
  description: 1,
}
const bm25Args = searchColumns.map((c) => columnWeights[c]).join(', ')

/**
 * Sort keys; each ends in the unique `id` so pages never overlap or skip. `downloads` must stay
 * `downloads DESC, id` exactly: build/static/site.ts pre-renders the first page with it.
 */
const orderBy = {
  downloads: 'p.downloads DESC, p.id',
  favorites: 'p.favorites DESC, p.id',
  updated: 'p.updated_at DESC, p.id',
  newest: 'p.published_at DESC, p.id',
  name: 'p.name COLLATE NOCASE, p.id',
} as const

/**
 * Splits what the user typed into search tokens: runs of letters and digits, lowercased, at most
 * MAX_TOKENS. Everything else (quotes, parentheses, `*`, `:`, `^`, `-`) is a separator, which is
 * what keeps FTS5 operators out of the query.
 */
export function getSearchTokens(q: string | undefined): string[] {
  if (!q) return []
  return q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((t) => t !== '')
    .slice(0, MAX_TOKENS)
    .map((t) => t.slice(0, MAX_TOKEN_LENGTH))
}

/**
 * The FTS5 MATCH expression of search tokens: each token a quoted string (it holds only letters
 * and digits, so it cannot close its quotes), all required; the last one also matches as a prefix
 * (`"sod"*` finds Sodium while typing) when it has 2+ characters, the shortest indexed prefix.
 */
export function renderMatchExpression(tokens: readonly string[]): string {
  return tokens.map((t, i) => (i === tokens.length - 1 && t.length >= 2 ? `"${t}"*` : `"${t}"`)).join(' ')
}

/** Runs a search and returns the requested page with the exact total. */
export async function listSearchPage(db: Db, query: ProjectsQuery): Promise<SearchPage> {
  const params: SqlValue[] = []
  const bind = (value: SqlValue): string => `?${params.push(value)}`
  const tokens = getSearchTokens(query.q)
  const fullText = tokens.length > 0

  let from = 'projects p'
  const where: string[] = []
  if (fullText) {
    from = `(SELECT rowid, bm25(projects_fts, ${bm25Args}) AS score FROM projects_fts WHERE projects_fts MATCH ${bind(renderMatchExpression(tokens))}) h
      JOIN projects p ON p.rowid = h.rowid`
  }
  if (query.type) where.push(`p.type = ${bind(query.type)}`)
  const facets: [string, string[] | undefined][] = [
    ['c:', query.category],
    ['g:', query.gameVersion],
    ['p:', query.platform],
    ['t:', query.tag],
  ]
  for (const [prefix, values] of facets) {
    if (!values || values.length === 0) continue
    // Any of the values (one facet lookup per value); different filters combine with AND.
    where.push(
      `p.rowid IN (SELECT f.project_rowid FROM project_facets f WHERE f.facet IN (SELECT '${prefix}' || j.value FROM json_each(${bind(JSON.stringify(values))}) j))`,
    )
  }
  if (query.author !== undefined) where.push(`p.author_username = lower(${bind(query.author)})`)
  const filter = where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''

  const countRow = await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${from} ${filter}`, params)
  const total = countRow?.n ?? 0
  const offset = (query.page - 1) * query.limit
  if (offset >= total) return { items: [], total }

  let order: string
  if (query.sort === 'relevance' && fullText) {
    // An exact name or slug match first, then the weighted bm25 score (lower is better).
    const typed = (query.q ?? '').trim().toLowerCase()
    const exact = `(lower(p.name) = ${bind(typed)} OR p.slug = ${bind(typed)} OR p.slug = ${bind(tokens.join('-'))})`
    order = `${exact} DESC, h.score, ${orderBy.downloads}`
  } else {
    order = orderBy[query.sort === 'relevance' ? 'downloads' : query.sort]
  }
  const rows = await db.all<{ json: string }>(
    `SELECT p.summary_json AS json FROM ${from} ${filter} ORDER BY ${order} LIMIT ${bind(query.limit)} OFFSET ${bind(offset)}`,
    params,
  )
  return { items: rows.map((r) => r.json), total }
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
