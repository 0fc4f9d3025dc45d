/**
 * The fixed query mix of bench/search.ts, derived deterministically from the catalog database
 * (its vocabulary, names and filter values), so any generated catalog gets a comparable mix.
 */
import type { Db } from '../build/db/sqlite.ts'

/** A query class: a name and the request paths it cycles through. */
export interface QueryClass {
  name: string
  urls: string[]
}

const url = (params: Record<string, string | number>): string =>
  `/api/v1/projects?${Object.entries(params).map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join('&')}`

/** Deletes the middle character of a word, or swaps two inner characters (every other word). */
function misspell(word: string, k: number): string {
  const m = Math.floor(word.length / 2)
  return k % 2 === 0 ? word.slice(0, m) + word.slice(m + 1) : word.slice(0, m - 1) + word[m] + word[m - 1] + word.slice(m + 1)
}

/** The query classes of the benchmark. */
export async function deriveQueryClasses(db: Db): Promise<QueryClass[]> {
  const words = async (sql: string): Promise<string[]> => (await db.all<{ t: string }>(sql)).map((r) => r.t)
  const plainWord = `term GLOB '[a-z][a-z][a-z]*' AND term NOT GLOB '*[^a-z]*'`
  const common = await words(`SELECT term AS t FROM search_vocab WHERE ${plainWord} ORDER BY doc DESC, term LIMIT 12`)
  // Rare words that are not whole joined names (those are the "joined words" class); a generated
  // catalog's prose has a small vocabulary, so "rare" is the least frequent tenth of it.
  const rare = await words(`SELECT term AS t FROM search_vocab v WHERE ${plainWord} AND length(term) >= 4
    AND NOT EXISTS (SELECT 1 FROM search_vocab j WHERE j.term = char(57347) || v.term) ORDER BY doc, term LIMIT 24`)
  const names = await words(`SELECT name AS t FROM projects ORDER BY id LIMIT 40`)
  const facets = async (prefix: string, n: number): Promise<string[]> =>
    words(`SELECT substr(facet, 3) AS t FROM project_facets WHERE facet GLOB '${prefix}:*' GROUP BY facet ORDER BY count(*) DESC, facet LIMIT ${n}`)
  const categories = await facets('c', 8)
  const versions = await facets('g', 6)
  const platforms = await facets('p', 3)
  const tags = await facets('t', 6)
  const lower = names.map((n) => n.toLowerCase())
  const firstWords = lower.map((n) => n.split(/\s+/)[0]!).filter((w) => w.length >= 4)
  const longWords = lower.flatMap((n) => n.split(/\s+/)).filter((w) => /^[a-z]{5,}$/.test(w))
  const pick = <T>(list: T[], i: number): T => list[i % list.length]!
  const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i)
  const filters: Record<string, string>[] = range(12).map((i) => [
    { category: pick(categories, i) },
    { gameVersion: `${pick(versions, i)},${pick(versions, i + 1)}`, platform: pick(platforms, i) },
    { type: 'mod', category: pick(categories, i + 3) },
    { tag: pick(tags, i) },
  ][i % 4] as Record<string, string>)
  const sorts = ['downloads', 'favorites', 'updated', 'newest', 'name'] as const
  return [
    { name: 'common words', urls: range(12).map((i) => url({ q: i % 3 === 2 ? `${pick(common, i)} ${pick(common, i + 5)}` : pick(common, i) })) },
    { name: 'rare words', urls: rare.map((q) => url({ q })) },
    { name: 'exact names', urls: names.map((q) => url({ q })) },
    { name: 'prefixes', urls: range(20).map((i) => url({ q: i % 2 ? pick(firstWords, i).slice(0, 3) : `${pick(lower, i).split(/\s+/)[0]} ${(pick(lower, i).split(/\s+/)[1] ?? '').slice(0, 4)}` })) },
    { name: 'typos', urls: range(20).map((i) => url({ q: misspell(pick(longWords, i * 3), i) })) },
    { name: 'joined words', urls: names.slice(0, 20).map((n) => url({ q: n.toLowerCase().replace(/[^a-z0-9]/g, '') })) },
    { name: 'filters only', urls: filters.map((f) => url(f)) },
    { name: 'q + filters', urls: range(12).map((i) => url({ q: i % 2 ? pick(common, i) : pick(firstWords, i), ...pick(filters, i) })) },
    ...sorts.map((sort) => ({
      name: `sort=${sort}`,
      urls: range(12).map((i) => url(i % 3 === 0 ? { q: pick(common, i), sort } : i % 3 === 1 ? { ...pick(filters, i), sort } : { q: pick(firstWords, i), sort, page: 2 })),
    })),
    {
      name: 'deep pages',
      urls: range(12).map((i) => url(i % 3 === 0 ? { q: pick(common, i), page: 50 + 40 * i } : i % 3 === 1 ? { ...pick(filters, i), page: 40 + i } : { q: pick(common, i), sort: 'name', page: 100 + 30 * i })),
    },
  ]
}
