/**
 * Relevance order of a full-text search. The result is a sequence of segments: small "stages"
 * (exact name, whole-name completion, name prefix, words in the name, in tags/author, in the
 * summary; shim/search-expr.ts renderStages), each listed by downloads and capped, then the rest
 * of the matches by downloads. search_all rowids are download ranks, so every part is an FTS5
 * doclist read in rowid order: no score is computed per row, and a common word costs a count and
 * a few capped reads instead of a sort of every match.
 */
import type { Db, SqlValue } from '../build/db/sqlite.ts'
import { renderCountParts, renderMatchAll, renderStages, withFilter, type CountParts } from './search-expr.ts'
import { renderCountSql } from './search-sort.ts'
import type { SearchPlan } from './search-plan.ts'

/** Results taken from the stages in all; beyond them the order is by downloads (still exact and stable). */
const STAGE_CAP = 600

type Segment = { ranks: number[] } | { match: string; count: number; exclude: number[] }

/** Ranks (search_docs.rank) of one page in relevance order, and the exact total. */
export async function listRelevancePage(
  db: Db,
  plan: SearchPlan,
  filter: string | null,
  offset: number,
  limit: number,
  coreCount: number | null,
): Promise<{ ranks: number[]; total: number }> {
  const typos = plan.typos.size > 0
  const want = Math.min(STAGE_CAP, offset + limit)
  const full = withFilter(renderMatchAll(plan, typos), filter)
  const segments: Segment[] = []
  let total: number
  if (typos && plan.demoted) {
    // A corrected word also exists as typed: every exact result first, then the corrected ones.
    const exact = withFilter(renderMatchAll(plan, false), filter)
    const corrected = `${full} NOT ${exact}`
    const exactStages = renderStages(plan, false).map((s) => withFilter(s, filter))
    const typoStages = renderStages(plan, true).map((s) => `(${withFilter(s, filter)}) NOT ${exact}`)
    const read = await readStages(db, [...exactStages, ...typoStages], exactStages.length, [{ ...renderCountParts(plan, false), coreCount }, { ...renderCountParts(plan, true), coreCount }], filter, want)
    const [first, second] = read.taken
    const [exactCount, fullCount] = read.counts as [number, number]
    total = fullCount
    segments.push({ ranks: first }, { match: exact, count: exactCount - first.length, exclude: first })
    segments.push({ ranks: second }, { match: corrected, count: fullCount - exactCount - second.length, exclude: second })
  } else {
    const stages = renderStages(plan, typos).map((s) => withFilter(s, filter))
    const read = await readStages(db, stages, stages.length, [{ ...renderCountParts(plan, typos), coreCount }], filter, want)
    const [taken] = read.taken
    total = read.counts[0]!
    segments.push({ ranks: taken }, { match: full, count: total - taken.length, exclude: taken })
  }
  return { ranks: await readSegments(db, segments, offset, limit), total }
}

/**
 * Stages read per statement: all of them for a first page (a few rows each: one round trip),
 * else a few at a time, since the first ones usually fill `want` and later ones are then not read.
 */
const stagesPerRead = (want: number): number => (want <= 100 ? 64 : 4)

/**
 * Reads the first `want` (at most STAGE_CAP) ranks of the stages' order: every result of the
 * first stage by rowid, then the new ones of the next, and so on. The first `want` rows of a stage
 * always hold enough new ones (at most `seen` of them are repeats), so a first page reads a few
 * rows per stage, and any page sees the same order. Split at stage `at` into two groups; the
 * counts of the full expressions come with the first statement. Either `want` ranks are taken, or
 * every stage was read to its end (the stages' whole union, fewer than `want`).
 */
async function readStages(db: Db, stages: string[], at: number, counted: CountParts[], filter: string | null, want: number): Promise<{ taken: [number[], number[]]; counts: number[] }> {
  const seen = new Set<number>()
  const taken: [number[], number[]] = [[], []]
  let counts: number[] = []
  for (let from = 0; from < stages.length && seen.size < want; from += stagesPerRead(want)) {
    const params: SqlValue[] = []
    const bind = (value: SqlValue): string => `?${params.push(value)}`
    const chunk = stages.slice(from, from + stagesPerRead(want))
    const columns = [
      ...chunk.map((s) => `(SELECT group_concat(rowid) FROM (SELECT rowid FROM search_all WHERE search_all MATCH ${bind(s)} ORDER BY rowid LIMIT ${want}))`),
      ...(from === 0 ? counted.map((c) => `(${renderCountSql(c, filter, bind)})`) : []),
    ]
    const row = await db.get<Record<string, string | number | null>>(`SELECT ${columns.map((c, i) => `${c} AS c${i}`).join(', ')}`, params)
    const values = columns.map((_, i) => row?.[`c${i}`] ?? null)
    if (from === 0) counts = values.slice(chunk.length).map((v) => Number(v ?? 0))
    chunk.forEach((_, k) => {
      const v = values[k]
      if (typeof v !== 'string' || v === '') return
      for (const rank of v.split(',').map(Number)) {
        if (seen.size >= want) return
        if (seen.has(rank)) continue
        seen.add(rank)
        taken[from + k < at ? 0 : 1].push(rank)
      }
    })
  }
  return { taken, counts }
}

/** Cuts the page [offset, offset + limit) out of the segments, reading only the rest parts it needs. */
async function readSegments(db: Db, segments: Segment[], offset: number, limit: number): Promise<number[]> {
  const out: number[] = []
  let skip = offset
  for (const segment of segments) {
    const want = limit - out.length
    if (want <= 0) break
    const size = 'ranks' in segment ? segment.ranks.length : segment.count
    if (skip >= size) {
      skip -= size
      continue
    }
    if ('ranks' in segment) {
      out.push(...segment.ranks.slice(skip, skip + want))
    } else {
      const rows = await db.all<{ r: number }>(
        `SELECT rowid AS r FROM search_all WHERE search_all MATCH ?1 AND rowid NOT IN (SELECT value FROM json_each(?2)) ORDER BY rowid LIMIT ?3 OFFSET ?4`,
        [segment.match, JSON.stringify(segment.exclude), want, skip],
      )
      out.push(...rows.map((r) => r.r))
    }
    skip = 0
  }
  return out
}
