/**
 * A full-text or filtered search listed in a non-relevance order. Each order has its own copy of
 * the index whose rowids are positions in that order (build/search-index.ts sortedTables), so
 * every sort is a doclist read in rowid order: no sort of the matches, whatever their number.
 */
import type { Db } from '../build/db/sqlite.ts'

/** Sorts other than relevance: the FTS5 table whose rowid is the position in that order, and the position column. */
export const sortTables = {
  downloads: ['search_all', 'rank'],
  favorites: ['search_by_favorites', 'favorites_pos'],
  updated: ['search_by_updated', 'updated_pos'],
  newest: ['search_by_newest', 'newest_pos'],
  name: ['search_by_name', 'name_pos'],
} as const

/** Counts the matches of an expression. */
export async function countMatches(db: Db, match: string): Promise<number> {
  return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM search_all WHERE search_all MATCH ?`, [match]))?.n ?? 0
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
