/**
 * `npm run bench`: static reads (shim vs nginx vs raw node), dynamic endpoints, memory and start-up
 * of the shim against the catalog of --dist, written to bench/results/serve.{json,md,svg}; then the
 * search benchmark (bench/search.ts) when it exists. All load is bounded in time and on 127.0.0.1.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { openDb } from '../build/db/sqlite.ts'
import { MAX_CATALOG_MMAP_BYTES, shimDefaults } from '../shim/config.ts'
import { createDynamicWorkloads } from './dynamic-urls.ts'
import { runDynamic } from './dynamic.ts'
import { checkGoals } from './goals.ts'
import { readMachine, readVersions } from './machine.ts'
import { resolveBenchOptions } from './options.ts'
import { readMemoryMb } from './proc.ts'
import { renderServeMarkdown } from './report-md.ts'
import { renderServeSvg } from './report-svg.ts'
import { serveResultsSchema, type Scenario, type ServeResults } from './results-schema.ts'
import { ROOT, shimHeapMb, shimInitialOldSpaceMb, shimSemiSpaceMb, startNginx, startRaw, startShim, type ServerHandle, type ShimStart } from './servers.ts'
import { SHIM_V8_FLAGS } from '../shim/heap.ts'
import { measureStartup } from './startup.ts'
import { createStaticWorkload } from './static-urls.ts'
import { runStaticReads } from './static-reads.ts'
import { verifySameAnswers } from './verify.ts'

const options = resolveBenchOptions(process.argv.slice(2), process.env, ROOT)
const log = (line: string): void => void process.stderr.write(`${line}\n`)
if (options.render) {
  // Re-renders serve.md and serve.svg from a results file, without measuring anything.
  const results = serveResultsSchema.parse(JSON.parse(readFileSync(options.render, 'utf8')))
  const dir = path.dirname(options.render)
  writeFileSync(path.join(dir, 'serve.md'), renderServeMarkdown(results))
  writeFileSync(path.join(dir, 'serve.svg'), renderServeSvg(results))
  log(`Rendered ${path.relative(ROOT, dir)}/serve.{md,svg} from ${path.relative(ROOT, options.render)}`)
  process.exit(0)
}
const pointer = path.join(options.distDir, 'current')
if (!existsSync(pointer)) throw new Error(`no release at ${pointer}: build one first (bench/README.md)`)
const releaseDir = realpathSync(pointer)
mkdirSync(options.workDir, { recursive: true })
mkdirSync(options.outDir, { recursive: true })

const running = new Set<ServerHandle>()
const stopAll = async (): Promise<void> => {
  for (const h of running) await h.stop()
  running.clear()
}
// vite-node may exit on a signal before an async cleanup finishes: kill the servers synchronously.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const h of running) h.kill()
    process.exit(130)
  })
}
const started = (h: ServerHandle): ServerHandle => (running.add(h), h)

const catalog = await readCatalogCounts()
log(`Catalog ${options.distDir} (release ${path.basename(releaseDir)}): ${catalog.projects} projects, ${catalog.versions} versions, ${catalog.files} files`)
const cacheBytes = options.cacheBytes === '' ? shimDefaults.cacheBytes : Number(options.cacheBytes)
const shimStart = (probePath: string, port: number): ShimStart => ({
  distDir: options.distDir,
  port,
  workDir: options.workDir,
  probePath,
  env: options.cacheBytes === '' ? {} : { CACHE_BYTES: options.cacheBytes },
  nodeArgs: options.shimNodeArgs,
})

log('Drawing the workloads...')
const workload = await createStaticWorkload(releaseDir, options.workDir, options.requests, options.seed, options.zipfExponent)
log(`  static: ${workload.requests} requests over ${workload.distinctUrls} distinct URLs (${(workload.distinctBytes / 2 ** 20).toFixed(1)} MB), top 1% of URLs = ${(100 * workload.top1PctShare).toFixed(0)}% of requests`)
const dynamicWorkloads = options.only.has('dynamic') ? await createDynamicWorkloads(releaseDir, options.workDir, options.dynamicDistinct, options.seed, options.zipfExponent) : []

const scenarios: Scenario[] = []
/** Notes of this run for the report: workloads skipped, and each cache-off shim's memory. */
const runNotes: string[] = []
let rssStaticMax: number | null = null
let memory: ServeResults['memory'] = null
const peakRss = new Map<number, number>()
try {
  const shim = started(await startShim(shimStart(workload.probePath, options.basePort)))
  await new Promise((r) => setTimeout(r, 1000))
  const rssAfterStart = readMemoryMb(shim.pid)?.rssMb ?? Number.NaN
  log(`Shim up after ${Math.round(shim.startMs)} ms, RSS ${Math.round(rssAfterStart)} MB`)
  if (options.only.has('static')) {
    const nginx = started(await startNginx(options.basePort + 1, options.distDir, `127.0.0.1:${options.basePort}`, options.workDir, workload.probePath))
    const raw = started(await startRaw(options.basePort + 2, workload.mapFile, workload.probePath))
    const rawHeaders = started(await startRaw(options.basePort + 4, workload.mapFile, workload.probePath, true))
    const contenders = [
      { handle: raw, listFile: workload.nodeListFile },
      { handle: shim, listFile: workload.nodeListFile },
      { handle: nginx, listFile: workload.nginxListFile },
      { handle: rawHeaders, listFile: workload.nodeListFile },
    ]
    await verifySameAnswers(contenders.map((c) => ({ name: c.handle.name, port: c.handle.port, listFile: c.listFile })), workload.mapFile, 300)
    log('Same bytes, Content-Type and 304s from all four servers.')
    const common = { reps: options.reps, durationSeconds: options.durationSeconds, connections: options.connections, log, peakRss }
    scenarios.push(...(await runStaticReads(contenders, { ...common, warmupSeconds: options.warmupSeconds, baseline: raw.name, listRequests: workload.requests })))
    rssStaticMax = peakRss.get(shim.pid) ?? null
    for (const h of [nginx, raw, rawHeaders]) {
      await h.stop()
      running.delete(h)
    }
  }
  if (dynamicWorkloads.length > 0) {
    const dynamic = await runDynamic(shim, dynamicWorkloads, { reps: options.dynamicReps, durationSeconds: options.dynamicDurationSeconds, concurrencies: options.dynamicConcurrencies, warmupSeconds: options.warmupSeconds, log, peakRss })
    scenarios.push(...dynamic.scenarios)
    runNotes.push(...dynamic.skipped)
  }
  const end = readMemoryMb(shim.pid)
  await stopAll()
  // Issue 7 asks for any result cache off and on: the workloads the static cache helps, again on a
  // shim with CACHE_BYTES=0 (every hash and every update through SQLite), after the measured shim has
  // stopped; and once more with the catalog memory-mapped (CATALOG_MMAP_BYTES, off by default: the
  // mapped pages count in RSS), to show what that option buys on the same SQLite-bound path.
  const cached = dynamicWorkloads.filter((w) => w.usesStaticCache)
  // None when no measured workload used the cache.
  const variants: { suffix: string; env: Record<string, string>; what: string }[] = cached.length === 0 ? [] : [
    { suffix: 'cache-off', env: { CACHE_BYTES: '0' }, what: 'static cache off (CACHE_BYTES=0)' },
    { suffix: 'cache-off-mapped', env: { CACHE_BYTES: '0', CATALOG_MMAP_BYTES: String(MAX_CATALOG_MMAP_BYTES) }, what: `static cache off, catalog memory-mapped (CACHE_BYTES=0, CATALOG_MMAP_BYTES=${MAX_CATALOG_MMAP_BYTES})` },
  ]
  for (const [i, variant] of variants.entries()) {
    log(`Dynamic endpoints, ${variant.what}:`)
    const cold = started(await startShim({ ...shimStart(workload.probePath, options.basePort + 5 + i), env: variant.env }))
    const off = await runDynamic(
      cold,
      cached.map((w) => ({ ...w, name: `${w.name}-${variant.suffix}`, description: `${w.description}; ${variant.what}` })),
      { reps: options.dynamicReps, durationSeconds: options.dynamicDurationSeconds, concurrencies: options.dynamicConcurrencies, warmupSeconds: options.warmupSeconds, log, peakRss },
    )
    scenarios.push(...off.scenarios)
    runNotes.push(...off.skipped)
    const mem = readMemoryMb(cold.pid)
    if (mem) {
      const line = `"${variant.suffix}" rows: the shim's RSS after them ${Math.round(mem.rssMb)} MB (peak ${Math.round(mem.peakMb)} MB), of which private memory (RssAnon) ${Math.round(mem.anonMb)} MB and mapped file pages (RssFile: node's binary${variant.env.CATALOG_MMAP_BYTES !== undefined ? ', and the catalog pages each connection has mapped, counted once per connection' : ''}) ${Math.round(mem.fileMb)} MB.`
      log(`  ${line}`)
      runNotes.push(line)
    }
    await stopAll()
  }
  if (options.only.has('memory')) {
    log('Start-up:')
    const startup = await measureStartup(shimStart(workload.probePath, options.basePort + 3), options.startups, log)
    memory = {
      startMs: startup.startMs,
      rssAfterStartMb: Math.max(rssAfterStart, startup.rssAfterStartMb),
      rssStaticMaxMb: rssStaticMax,
      rssUnderLoadMaxMb: peakRss.get(shim.pid) ?? Number.NaN,
      peakRssMb: end?.peakMb ?? Number.NaN,
      cacheBytes,
    }
  }
} finally {
  await stopAll()
}

const results = serveResultsSchema.parse({
  date: new Date().toISOString(),
  catalog: { distDir: options.distDir, release: path.basename(releaseDir), ...catalog },
  machine: readMachine(),
  versions: readVersions(),
  method: {
    repetitions: options.reps,
    durationSeconds: options.durationSeconds,
    connections: options.connections,
    wrkThreads: 1,
    zipfExponent: options.zipfExponent,
    notes: [
      'wrk 1 thread, keep-alive, 127.0.0.1; client and server share the 2 cores, so CPU columns show who used what.',
      'Every repetition runs each server once, order rotated; ratios are per repetition, then the median.',
      '"raw node + headers" is raw node sending every header line the shim sends on a static read (CORS, expose list, rate-limit headers, request id, Cache-Control) with no work behind them: the same response bytes as the shim. The goal is against plain raw node; this row shows how much of the gap is the contract\'s headers.',
      `The shim runs as \`npm run serve\` does (compiled by tsc, plain node --max-old-space-size=${shimHeapMb()} --max-semi-space-size=${shimSemiSpaceMb()} --initial-old-space-size=${shimInitialOldSpaceMb()} ${SHIM_V8_FLAGS.join(' ')} .out/shim/cli.js, node:http${options.shimNodeArgs.length > 0 ? `, plus ${options.shimNodeArgs.join(' ')}` : ''}) with RATE_LIMIT raised to 1e9: the limiter still runs on every request.`,
      `Static cache of the shim: CACHE_BYTES = ${cacheBytes}; every server is warmed by at least one full pass over the URL list (runs of ${options.warmupSeconds} s) before measuring.`,
      'nginx: 1 worker, try_files $uri.json, open_file_cache (10,000 entries, under the 20,000 open-file limit here), sendfile, access_log off, the same Content-Type; its ETag is its own (mtime-size).',
      `Dynamic endpoints: ${options.dynamicReps} × ${options.dynamicDurationSeconds} s per concurrency, after passes over each workload's list (warm-up, as for the static servers: one, or two for bulk-hashes and bulk-update, whose answers the shim keeps from the second time a request is asked); bulk-hashes splices single lookups kept in the static cache (CACHE_BYTES), finds the rest in one SQL batch and keeps the plan of its answer in that cache, and bulk-update's answers are kept whole in it, both under their query's text (the lists are cycled, so after the warm-up every bulk-hashes and bulk-update request is a repeat answered from memory while what it needs is kept, as a modpack's check repeated by its users is), so both are measured again on a shim with CACHE_BYTES=0 ("cache-off" rows: every hash and every update through SQLite); bulk-hashes-unique draws 100 hashes afresh from bulk-hashes' list for every request (no request asked twice: only the single lookups are kept for it), and bulk-hashes-foreign the same from that list with one hash in ten replaced by one of no file (the catalog's index of known hashes, hash_index, rules nearly all of them out without a query); every other request runs its SQLite query.`,
      ...runNotes,
    ],
  },
  staticWorkload: { requests: workload.requests, kinds: workload.kinds, distinctUrls: workload.distinctUrls, distinctBytes: workload.distinctBytes, top1PctShare: Math.round(workload.top1PctShare * 1000) / 1000 },
  scenarios,
  memory,
  goals: checkGoals(scenarios, memory),
})
writeFileSync(path.join(options.outDir, 'serve.json'), JSON.stringify(results, null, 2) + '\n')
writeFileSync(path.join(options.outDir, 'serve.md'), renderServeMarkdown(results))
writeFileSync(path.join(options.outDir, 'serve.svg'), renderServeSvg(results))
log(`Wrote ${path.relative(ROOT, options.outDir)}/serve.{json,md,svg}`)
for (const g of results.goals) log(`  ${g.met ? 'met   ' : 'MISSED'} ${g.goal}: ${g.measured}`)

if (options.only.has('search') && existsSync(path.join(ROOT, 'bench', 'search.ts'))) {
  log('Running bench/search.ts...')
  const res = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'vite-node', 'dist', 'cli.mjs'), 'bench/search.ts', '--', '--dist', options.distDir], { cwd: ROOT, stdio: 'inherit' })
  if (res.status !== 0) process.exitCode = res.status ?? 1
}

async function readCatalogCounts(): Promise<{ projects: number; versions: number; files: number; users: number }> {
  const db = await openDb(path.join(releaseDir, 'catalog.sqlite'), { readonly: true })
  try {
    const count = async (table: string): Promise<number> => (await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n
    return { projects: await count('projects'), versions: await count('versions'), files: await count('files'), users: await count('users') }
  } finally {
    await db.close()
  }
}
