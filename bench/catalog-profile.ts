/**
 * `npx vite-node bench/catalog-profile.ts -- --staging FILE [--live FILE] [--out FILE] [--top N] [--search]`: a
 * development aid for the build's catalog phase. Runs writeCatalog (build/catalog.ts) on a kept
 * staging (`<dist>/.cache/staging.sqlite`, with the `s_touched` of the build that kept it) into a new
 * catalog file, reusing the live release's catalog (`--live`, e.g. `<dist>/current/catalog.sqlite`)
 * as a rebuild from that staging does, and prints the catalog's progress lines, its wall and CPU
 * time, and the statements that took longest (wall time, summed by text; a script of several
 * statements is run one statement at a time). Without `--live`, as a full build. With `--search`, it
 * then waits for the search index, which the build finishes beside the render, copies it into the
 * catalog as the build copies it into the compacted one, and prints when that was done (from the
 * start, and after writeCatalog returned): how long the index outlasts the catalog phase. Without
 * it the index is stopped. Nothing of the dist is written: the catalog and the search index go to
 * `--out` (default: a temporary folder).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { writeCatalog } from '../build/catalog.ts'
import type { MemoSource } from '../build/catalog-memo.ts'
import type { BuildContext, BuildOptions } from '../build/context.ts'
import { openDb, type Db } from '../build/db/sqlite.ts'

const { values } = parseArgs({
  options: { staging: { type: 'string' }, live: { type: 'string' }, out: { type: 'string' }, top: { type: 'string', default: '25' }, search: { type: 'boolean', default: false } },
})
if (!values.staging) throw new Error('--staging FILE is required (a kept staging: <dist>/.cache/staging.sqlite)')
for (const file of [values.staging, values.live]) if (file !== undefined && !existsSync(file)) throw new Error(`${file}: no such file`)
const outDir = values.out ? path.resolve(values.out) : mkdtempSync(path.join(os.tmpdir(), 'catalog-profile-'))
mkdirSync(outDir, { recursive: true })
const catalogFile = path.join(outDir, 'catalog.sqlite')
rmSync(catalogFile, { force: true })
rmSync(path.join(outDir, '.search.sqlite'), { force: true })

/** Wall milliseconds of each statement run through the returned Db. */
const timings: { sql: string; ms: number }[] = []
function timedDb(db: Db): Db {
  const timed = async <T>(sql: string, run: () => Promise<T>): Promise<T> => {
    const started = performance.now()
    try {
      return await run()
    } finally {
      timings.push({ sql: sql.replace(/\s+/g, ' ').trim(), ms: performance.now() - started })
    }
  }
  return {
    ...db,
    raw: db.raw,
    file: db.file,
    run: (sql, params) => timed(sql, () => db.run(sql, params)),
    all: (sql, params) => timed(sql, () => db.all(sql, params)),
    get: (sql, params) => timed(sql, () => db.get(sql, params)),
    // The scripts of build/ separate their statements with `;` at the end of a line.
    exec: async (sql) => {
      for (const one of sql.split(/;\s*\n/).map((s) => s.trim()).filter(Boolean)) await timed(one, () => db.exec(one))
    },
  }
}

const staging = await openDb(path.resolve(values.staging))
const db = await openDb(catalogFile)
// The search index in its worker process, as the build's default (BUILD_SEARCH_WORKER).
const options = { countersFile: null, searchWorker: true } as Partial<BuildOptions> as BuildOptions
const ctx: BuildContext = { options, problems: [], staging, releaseDir: outDir }
const memo: MemoSource = values.live ? { catalogFile: path.resolve(values.live), release: 'live' } : { catalogFile: null, reason: 'not asked' }
const started = performance.now()
const cpu = process.cpuUsage()
const seconds = (): string => ((performance.now() - started) / 1000).toFixed(1)
const { search } = await writeCatalog(ctx, timedDb(db), { baseUrl: 'https://catalog.example' }, (done) => console.log(`… ${done} after ${seconds()}s`), memo)
const used = process.cpuUsage(cpu)
console.log(`writeCatalog: ${seconds()} s wall, ${((used.user + used.system) / 1e6).toFixed(1)} s CPU (SQLite's threads included; the search index goes on beside, in its worker process)`)
if (values.search) {
  const returned = performance.now()
  const worker = await search.finish(db)
  const all = process.cpuUsage(cpu)
  const after = ((performance.now() - returned) / 1000).toFixed(1)
  const cpuInAll = (all.user + all.system) / 1e6 + (worker?.cpuSeconds ?? 0)
  console.log(`search index finished and copied in: ${seconds()} s wall (${after} s after writeCatalog returned), ${cpuInAll.toFixed(1)} s CPU in all (its worker's ${worker?.cpuSeconds.toFixed(1) ?? 0} s included)`)
} else {
  await search.close()
}
await db.close()
await staging.close()

const bySql = new Map<string, { ms: number; n: number }>()
for (const { sql, ms } of timings) {
  const key = sql.slice(0, 140)
  const seen = bySql.get(key) ?? { ms: 0, n: 0 }
  bySql.set(key, { ms: seen.ms + ms, n: seen.n + 1 })
}
for (const [sql, { ms, n }] of [...bySql].sort((a, b) => b[1].ms - a[1].ms).slice(0, Number(values.top))) {
  console.log(`${(ms / 1000).toFixed(2).padStart(7)} s ${`×${n}`.padStart(5)}  ${sql}`)
}
if (!values.out) rmSync(outDir, { recursive: true, force: true })
