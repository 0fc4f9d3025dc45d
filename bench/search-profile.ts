/**
 * `npx vite-node bench/search-profile.ts -- --db FILE [--runs N] [--class NAME] [--sql]`: a
 * development aid for the search's tail latency. Runs the benchmark's query mix (bench/search-queries.ts)
 * in process, without HTTP, and reports per class the p50/p99 wall time, the CPU time per query,
 * the number of SQL statements per query and, with --sql, the CPU time of each statement of the slowest queries.
 */
import { openDb, type Db } from '../build/db/sqlite.ts'
import { projectsQuerySchema } from '../build/schema/query.ts'
import { readQuery } from '../shim/query.ts'
import { listSearchPage } from '../shim/search.ts'
import { listFilterGroups, renderCountParts, renderFilterExpression, renderStages } from '../shim/search-expr.ts'
import { getSearchTokens, planSearch } from '../shim/search-plan.ts'
import { deriveQueryClasses } from './search-queries.ts'

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN

/** A Db whose all/get record the wall time of each statement. */
function traceDb(db: Db, log: { sql: string; ms: number }[]): Db {
  const wrap = <F extends (sql: string, params?: never) => Promise<unknown>>(f: F): F =>
    (async (sql: string, params?: never) => {
      const c = process.cpuUsage()
      try {
        return await f(sql, params)
      } finally {
        const used = process.cpuUsage(c)
        log.push({ sql, ms: (used.user + used.system) / 1000 })
      }
    }) as F
  return { ...db, all: wrap(db.all.bind(db)), get: wrap(db.get.bind(db)) }
}

/** CPU milliseconds of one statement, run `n` times. */
async function timeSql(db: Db, sql: string, params: string[], n = 5): Promise<string> {
  const c = process.cpuUsage()
  let row: unknown
  for (let i = 0; i < n; i++) row = await db.get(sql, params)
  const used = process.cpuUsage(c)
  return `${((used.user + used.system) / 1000 / n).toFixed(2)}ms ${JSON.stringify(row).slice(0, 60)}`
}

/** Prints the plan, the stages and the CPU time of each stage read and count part of one query. */
async function explain(db: Db, q: string, want: number, filter: string | null): Promise<void> {
  const plan = await planSearch(db, getSearchTokens(q))
  const withF = (e: string): string => (filter ? `(${e}) AND ${filter}` : e)
  const typos = plan.typos.size > 0
  process.stdout.write(`${JSON.stringify({ ...plan, typos: [...plan.typos] })}\n`)
  const show = (e: string): string => e.replace(/[\uE000-\uE005]/g, (m) => `<${'NMSJWF'[m.charCodeAt(0) - 0xe000]}>`)
  for (const stage of renderStages(plan, typos).map(withF)) {
    process.stdout.write(`stage ${await timeSql(db, `SELECT count(*) FROM (SELECT rowid FROM search_all WHERE search_all MATCH ? ORDER BY rowid LIMIT ${want})`, [stage])} ${show(stage).slice(0, 200)}\n`)
  }
  const parts = renderCountParts(plan, typos)
  for (const e of [withF(parts.core), parts.extra ? `(${withF(parts.extra)}) NOT (${withF(parts.core)})` : null]) {
    if (e) process.stdout.write(`count ${await timeSql(db, `SELECT count(*) FROM search_all WHERE search_all MATCH ?`, [e])} ${show(e).slice(0, 300)}\n`)
  }
}

async function main(): Promise<void> {
  const db = await openDb(arg('db', ''), { readonly: true })
  for (const pragma of arg('pragma', '').split(';').filter(Boolean)) await db.exec(`PRAGMA ${pragma}`)
  if (arg('explain', '')) {
    const filter = arg('filter', '')
    const groups = filter ? listFilterGroups(readQuery(filter, projectsQuerySchema)) : []
    return explain(db, arg('explain', ''), Number(arg('want', '20')), renderFilterExpression(groups))
  }
  const runs = Number(arg('runs', '3'))
  const only = arg('class', '')
  const log: { sql: string; ms: number }[] = []
  const traced = traceDb(db, log)
  const classes = (await deriveQueryClasses(db)).filter((c) => !only || c.name === only)
  for (const c of classes) {
    const times: number[] = []
    let cpu = 0
    let statements = 0
    const slow: { url: string; ms: number; sql: string[] }[] = []
    for (let r = 0; r < runs; r++) {
      for (const url of c.urls) {
        log.length = 0
        const query = readQuery(url.slice(url.indexOf('?') + 1), projectsQuerySchema)
        const c0 = process.cpuUsage()
        const t = performance.now()
        await listSearchPage(traced, query)
        const ms = performance.now() - t
        const used = process.cpuUsage(c0)
        cpu += (used.user + used.system) / 1000
        statements += log.length
        times.push(ms)
        if (r === runs - 1) slow.push({ url, ms, sql: log.map((l) => `${l.ms.toFixed(2)}ms ${l.sql.replace(/\s+/g, ' ').slice(0, 160)}`) })
      }
    }
    times.sort((a, b) => a - b)
    const n = times.length
    process.stdout.write(`${c.name.padEnd(16)} p50 ${percentile(times, 50).toFixed(2)} p99 ${percentile(times, 99).toFixed(2)} max ${times[n - 1]!.toFixed(2)} cpu/q ${(cpu / n).toFixed(2)} stmts/q ${(statements / n).toFixed(1)}\n`)
    if (process.argv.includes('--sql')) {
      for (const s of slow.sort((a, b) => b.ms - a.ms).slice(0, 3)) process.stdout.write(`  ${s.ms.toFixed(2)}ms ${decodeURIComponent(s.url)}\n${s.sql.map((l) => `    ${l}\n`).join('')}`)
    }
  }
  await db.close()
}

await main()
