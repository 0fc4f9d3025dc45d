/**
 * A full-text or filtered search listed in a non-relevance order. Each order has its own copy of
 * the index whose rowids are positions in that order (build/search-index.ts sortedTables), so
 * every sort is a doclist read in rowid order: no sort of the matches, whatever their number.
 */
import type { Db, SqlValue } from '../build/db/sqlite.ts'
import { isAsciiWord } from '../build/search-bitmaps.ts'
import { withFilter, type CountParts } from './search-expr.ts'

/** Sorts other than relevance: the FTS5 table whose rowid is the position in that order, and the position column. */
export const sortTables = {
  downloads: ['search_all', 'rank'],
  favorites: ['search_by_favorites', 'favorites_pos'],
  updated: ['search_by_updated', 'updated_pos'],
  newest: ['search_by_newest', 'newest_pos'],
  name: ['search_by_name', 'name_pos'],
} as const

/**
 * SQL of the exact number of matches of an expression split by renderCountParts, with the filter:
 * count(core) (known from bitmaps, or a stored document count for one plain word without filters)
 * + count(extra NOT core).
 */
export function renderCountSql(parts: CountParts, filter: string | null, bind: (value: SqlValue) => string): string {
  const core = withFilter(parts.core, filter)
  const counts = [
    parts.coreCount != null
      ? String(parts.coreCount)
      : // Stored counts are keyed by FTS5's terms: only an ASCII word is certainly its own term.
        parts.word !== null && filter === null && isAsciiWord(parts.word)
      ? `coalesce((SELECT docs FROM search_terms WHERE term = ${bind(parts.word)}), 0)`
      : `(SELECT count(*) FROM search_all WHERE search_all MATCH ${bind(core)})`,
  ]
  if (parts.extra) counts.push(`(SELECT count(*) FROM search_all WHERE search_all MATCH ${bind(`(${withFilter(parts.extra, filter)}) NOT (${core})`)})`)
  return counts.join(' + ')
}

/** Counts the matches of an expression split by renderCountParts. */
export async function countMatches(db: Db, parts: CountParts, filter: string | null): Promise<number> {
  if (parts.coreCount != null && parts.extra === null) return parts.coreCount
  const params: SqlValue[] = []
  const sql = renderCountSql(parts, filter, (v) => `?${params.push(v)}`)
  return (await db.get<{ n: number }>(`SELECT ${sql} AS n`, params))?.n ?? 0
}

/** Download ranks of one page of the matches in the given order: a doclist read in rowid order. */
export async function listSortedPage(db: Db, match: string, sort: keyof typeof sortTables, offset: number, limit: number): Promise<number[]> {
  const [table, column] = sortTables[sort]
  const rows = await db.all<{ r: number }>(
    `SELECT d.rank AS r FROM (SELECT rowid AS pos FROM ${table} WHERE ${table} MATCH ?1 ORDER BY rowid LIMIT ?2 OFFSET ?3) h
     JOIN search_docs d ON d.${column} = h.pos ORDER BY h.pos`,
    [match, limit, offset],
  )
  return rows.map((r) => r.r)
}
