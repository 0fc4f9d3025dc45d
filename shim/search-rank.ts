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
const STAGE_CAP = 2000

type Segment = { ranks: number[] } | { match: string; count: number; exclude: number[] }

/** Ranks (search_docs.rank) of one page in relevance order, and the exact total. */
export async function listRelevancePage(db: Db, plan: SearchPlan, filter: string | null, offset: number, limit: number): Promise<{ ranks: number[]; total: number }> {
  const typos = plan.typos.size > 0
  const full = withFilter(renderMatchAll(plan, typos), filter)
  const segments: Segment[] = []
  let total: number
  if (typos && plan.demoted) {
    // A corrected word also exists as typed: every exact result first, then the corrected ones.
    const exact = withFilter(renderMatchAll(plan, false), filter)
    const corrected = `${full} NOT ${exact}`
    const exactStages = renderStages(plan, false).map((s) => withFilter(s, filter))
    const typoStages = renderStages(plan, true).map((s) => `(${withFilter(s, filter)}) NOT ${exact}`)
    const read = await readStages(db, [...exactStages, ...typoStages], [renderCountParts(plan, false), renderCountParts(plan, true)], filter)
    const [first, second] = splitTaken(read.lists, exactStages.length)
    const [exactCount, fullCount] = read.counts as [number, number]
    total = fullCount
    segments.push({ ranks: first }, { match: exact, count: exactCount - first.length, exclude: first })
    segments.push({ ranks: second }, { match: corrected, count: fullCount - exactCount - second.length, exclude: second })
  } else {
    const stages = renderStages(plan, typos).map((s) => withFilter(s, filter))
    const read = await readStages(db, stages, [renderCountParts(plan, typos)], filter)
    const [taken] = splitTaken(read.lists, stages.length)
    total = read.counts[0]!
    segments.push({ ranks: taken }, { match: full, count: total - taken.length, exclude: taken })
  }
  return { ranks: await readSegments(db, segments, offset, limit), total }
}

/** Reads every stage (capped, in rowid order) and counts every full expression, in one statement. */
async function readStages(db: Db, stages: string[], counted: CountParts[], filter: string | null): Promise<{ lists: number[][]; counts: number[] }> {
  const params: SqlValue[] = []
  const bind = (value: SqlValue): string => `?${params.push(value)}`
  const columns = [
    ...stages.map((s) => `(SELECT group_concat(rowid) FROM (SELECT rowid FROM search_all WHERE search_all MATCH ${bind(s)} ORDER BY rowid LIMIT ${STAGE_CAP}))`),
    ...counted.map((c) => `(${renderCountSql(c, filter, bind)})`),
  ]
  const row = await db.get<Record<string, string | number | null>>(`SELECT ${columns.map((c, i) => `${c} AS c${i}`).join(', ')}`, params)
  const values = columns.map((_, i) => row?.[`c${i}`] ?? null)
  const lists = values.slice(0, stages.length).map((v) => (typeof v === 'string' && v !== '' ? v.split(',').map(Number) : []))
  return { lists, counts: values.slice(stages.length).map((v) => Number(v ?? 0)) }
}

/** Concatenates stage lists without repeats, at most STAGE_CAP in all, split at `at` into two groups. */
function splitTaken(lists: number[][], at: number): [number[], number[]] {
  const seen = new Set<number>()
  const groups: [number[], number[]] = [[], []]
  lists.forEach((list, s) => {
    for (const rank of list) {
      if (seen.size >= STAGE_CAP) return
      if (seen.has(rank)) continue
      seen.add(rank)
      groups[s < at ? 0 : 1].push(rank)
    }
  })
  return groups
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
