/**
 * A full-text or filtered search listed in a non-relevance order. By downloads the FTS5 rowid
 * order is the answer. For the other orders (positions precomputed in search_docs) one of two
 * plans, whichever reads fewer rows: sort the matches (cheap when they are few), or walk the
 * order's index and probe each row against the match (cheap when most rows match).
 */
import type { Db } from '../build/db/sqlite.ts'

/** Sorts other than relevance, and their position column in search_docs (null: the rowid order). */
export const sortPositions = {
  downloads: null,
  favorites: 'favorites_pos',
  updated: 'updated_pos',
  newest: 'newest_pos',
  name: 'name_pos',
} as const

/** Cost of one probe of the match for one row, relative to reading one match row (measured ≈ 15×). */
const PROBE_COST = 16

const documentCounts = new WeakMap<Db, number>()

/** Number of indexed projects (cached per opened release database). */
async function countDocuments(db: Db): Promise<number> {
  let n = documentCounts.get(db)
  if (n === undefined) {
    n = (await db.get<{ n: number }>(`SELECT coalesce(max(rank), 0) AS n FROM search_docs`))?.n ?? 0
    documentCounts.set(db, n)
  }
  return n
}

/** Counts the matches of an expression. */
export async function countMatches(db: Db, match: string): Promise<number> {
  return (await db.get<{ n: number }>(`SELECT count(*) AS n FROM search_all WHERE search_all MATCH ?`, [match]))?.n ?? 0
}

/** Ranks of one page of the matches (`total` of them) in the given order. */
export async function listSortedPage(
  db: Db,
  match: string,
  total: number,
  sort: keyof typeof sortPositions,
  offset: number,
  limit: number,
): Promise<number[]> {
  const column = sortPositions[sort]
  let rows: { r: number }[]
  if (column === null) {
    rows = await db.all(`SELECT rowid AS r FROM search_all WHERE search_all MATCH ? ORDER BY rowid LIMIT ? OFFSET ?`, [match, limit, offset])
  } else if (total <= (PROBE_COST * (offset + limit) * (await countDocuments(db))) / Math.max(total, 1)) {
    rows = await db.all(
      `SELECT d.rank AS r FROM search_all h JOIN search_docs d ON d.rank = h.rowid WHERE search_all MATCH ? ORDER BY d.${column} LIMIT ? OFFSET ?`,
      [match, limit, offset],
    )
  } else {
    rows = await db.all(
      `SELECT d.rank AS r FROM search_docs d INDEXED BY search_docs_${column}
       WHERE EXISTS (SELECT 1 FROM search_all WHERE search_all MATCH ?1 AND rowid = d.rank) ORDER BY d.${column} LIMIT ?2 OFFSET ?3`,
      [match, limit, offset],
    )
  }
  return rows.map((r) => r.r)
}
