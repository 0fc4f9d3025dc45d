/**
 * Exact counts from search_bitmaps (build/search-bitmaps.ts): the number of documents having every
 * plain word of the query and, for each filter, any of its values, when every one of those terms
 * is common enough to have a bitmap. Otherwise null, and FTS5 counts (a rare term makes that
 * cheap: its short doclist drives the intersection).
 */
import type { Db } from '../build/db/sqlite.ts'
import { isAsciiWord } from '../build/search-bitmaps.ts'

/** Set bits per byte value. */
const POPCOUNT = Uint8Array.from({ length: 256 }, (_, b) => {
  let n = 0
  for (let v = b; v > 0; v >>= 1) n += v & 1
  return n
})

/** Counts `words AND (group1 values OR ...) AND ...` from bitmaps; null when a term has none. */
export async function countByBitmaps(db: Db, words: readonly string[], groups: readonly (readonly string[])[]): Promise<number | null> {
  if (!words.every(isAsciiWord)) return null
  const terms = [...new Set([...words, ...groups.flat()])]
  if (terms.length === 0) return null
  const rows = await db
    .all<{ term: string; bits: Buffer }>(`SELECT term, bits FROM search_bitmaps WHERE term IN (SELECT value FROM json_each(?))`, [JSON.stringify(terms)])
    // A release built before search_bitmaps existed: FTS5 counts.
    .catch((err: Error) => (/no such table: search_bitmaps/.test(err.message) ? [] : Promise.reject(err)))
  if (rows.length !== terms.length) return null
  const bits = new Map(rows.map((r) => [r.term, r.bits]))
  const sets = [...words.map((w) => [bits.get(w)!]), ...groups.map((g) => [...new Set(g)].map((v) => bits.get(v)!))]
  const size = rows[0]!.bits.length
  let total = 0
  for (let i = 0; i < size; i++) {
    let all = 0xff
    for (const set of sets) {
      let any = 0
      for (const b of set) any |= b[i]!
      all &= any
      if (all === 0) break
    }
    total += POPCOUNT[all]!
  }
  return total
}
