/**
 * search_bitmaps: one bitmap of documents (bit r = download rank r, the search_all rowid) per
 * common plain word and per common filter value. An exact total needs every match counted; for
 * common words and filters that is an intersection of long doclists (milliseconds at 100,000
 * projects), while the same intersection of bitmaps is microseconds (shim/search-count.ts).
 * Rare terms need none: FTS5 intersects a short doclist with seeks into the long ones.
 */
import type { Db } from './db/sqlite.ts'
import { MARK } from './search-text.ts'

/** A term gets a bitmap when at least this share of the documents has it (and at least 2). */
export const BITMAP_SHARE = 0.02

/** Words the shim may look up as typed (ASCII letters and digits): FTS5 folds diacritics, so other words may be stored under another spelling. */
export const isAsciiWord = (term: string): boolean => /^[a-z0-9]+$/.test(term)

/** Fewest documents a term has to be in to get a bitmap, out of `documents`. */
const minBitmapDocs = (documents: number): number => Math.max(2, Math.ceil(documents * BITMAP_SHARE))

/** Whether a term in `docs` of the `documents` has a bitmap (an ASCII word or a filter value). */
export const hasBitmap = (docs: number, documents: number): boolean => docs >= minBitmapDocs(documents)

/** Creates and fills search_bitmaps from search_all and search_terms. */
export async function writeSearchBitmaps(db: Db): Promise<void> {
  const docs = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM search_docs`))?.n ?? 0
  const min = minBitmapDocs(docs)
  await db.exec(`CREATE TABLE search_bitmaps (term TEXT PRIMARY KEY, bits BLOB NOT NULL)`)
  const words = (await db.all<{ term: string }>(`SELECT term FROM search_terms WHERE term < ? AND docs >= ? ORDER BY term`, [MARK.name, min]))
    .map((r) => r.term)
    .filter(isAsciiWord)
  // Filter values are not in search_terms; fts5vocab reads only the range asked for.
  const facets = (await db.all<{ term: string }>(`SELECT term FROM search_vocab WHERE term >= ? AND term < ? AND doc >= ? ORDER BY term`, [MARK.facet, String.fromCharCode(MARK.facet.charCodeAt(0) + 1), min]))
    .map((r) => r.term)
  const bytes = (docs >> 3) + 1
  for (const term of [...words, ...facets]) {
    const row = await db.get<{ r: string | null }>(`SELECT group_concat(rowid) AS r FROM search_all WHERE search_all MATCH ?`, [`"${term}"`])
    const bits = Buffer.alloc(bytes)
    for (const rank of (row?.r ?? '').split(',')) {
      if (rank === '') continue
      const r = Number(rank)
      bits[r >> 3] = bits[r >> 3]! | (1 << (r & 7))
    }
    await db.run(`INSERT INTO search_bitmaps (term, bits) VALUES (?, ?)`, [term, bits])
  }
}
