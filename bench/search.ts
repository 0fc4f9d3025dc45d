/**
 * `npm run bench:search -- [--dist DIR] [--requests N] [--like-requests N] [--concurrency C]
 * [--base-root CHECKOUT --base-dist DIR] [--no-index] [--out DIR]`:
 * the search of GET /projects through HTTP against a built release (default the large catalog,
 * /tmp/large-dist), per query class (common words, rare words, prefixes, typos, filters only, q
 * plus filters, each sort, deep pages): p50/p99 latency one request at a time, the shim's CPU
 * time per request (from /proc, so other load on the machine does not inflate it) and
 * throughput with C in flight; the same classes against a naive LIKE-scan server over the same
 * database (`--like-requests 0` skips it) and, with --base-root, against the shim of another
 * checkout (an earlier version) serving --base-dist, class by class in the same run; the search
 * index's size and build time (`--no-index` skips the build). The shim has no result cache, so
 * every request searches. Writes search.json and search.md to --out (default bench/results).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:http'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { createSearchIndex } from '../build/search-index.ts'
import { readMachine } from './machine.ts'
import { deriveQueryClasses } from './search-queries.ts'
import { renderSearchMarkdown, type Measured, type SearchReport } from './search-report.ts'
import { serveLikeBaseline } from './search-like.ts'

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback
}
const ROOT = path.resolve(import.meta.dirname, '..')

/** Starts a child (the shim, or this file serving the LIKE baseline) and resolves its origin once it listens. */
async function startChild(args: string[], env: Record<string, string>, port: number, root = ROOT): Promise<{ child: ChildProcess; origin: string }> {
  const child = spawn(process.execPath, [path.join(root, 'node_modules/vite-node/dist/cli.mjs'), ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  await new Promise<void>((resolve, reject) => {
    let err = ''
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString()
      if (/Serving|listening/.test(err)) resolve()
    })
    child.on('exit', (code) => reject(new Error(`child exited ${code}: ${err}`)))
  })
  return { child, origin: `http://127.0.0.1:${port}` }
}

async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as AddressInfo).port
  await new Promise<void>((r) => s.close(() => r()))
  return port
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN

/** CPU time (user + system, ms) a process has used so far, from /proc (clock ticks of 10 ms). */
function readCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * Latencies one at a time over `count` requests cycling through the URLs (and the server's CPU
 * time per request over them), then throughput with `concurrency` in flight.
 */
async function measure(origin: string, urls: string[], count: number, concurrency: number, pid: number): Promise<Measured> {
  const get = async (u: string): Promise<void> => {
    const res = await fetch(origin + u)
    if (res.status !== 200) throw new Error(`${u}: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  for (const u of urls.slice(0, 3)) await get(u)
  const times: number[] = []
  const cpuBefore = readCpuMs(pid)
  for (let i = 0; i < count; i++) {
    const t = performance.now()
    await get(urls[i % urls.length]!)
    times.push(performance.now() - t)
  }
  const cpuMs = (readCpuMs(pid) - cpuBefore) / count
  times.sort((a, b) => a - b)
  let next = 0
  const started = performance.now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await get(urls[next++ % urls.length]!)
  }))
  const rps = count / ((performance.now() - started) / 1000)
  return { requests: count, p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1]!, rps, cpuMs }
}

/** Sizes of the search tables (dbstat) and, unless dbFile is null, the time to build them from a copy of the projects. */
async function measureIndex(db: Db, dbFile: string | null): Promise<SearchReport['index']> {
  const rows = await db.all<{ name: string; bytes: number }>(
    `SELECT name, sum(pgsize) AS bytes FROM dbstat WHERE name LIKE 'search%' GROUP BY name ORDER BY name`,
  )
  const tables = Object.fromEntries(rows.map((r) => [r.name, r.bytes]))
  const totalBytes = rows.reduce((n, r) => n + r.bytes, 0)
  if (dbFile === null) return { buildSeconds: null, totalBytes, tables }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'search-index-'))
  try {
    const copy = await openDb(path.join(tmp, 'copy.sqlite'))
    await copy.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA page_size = 8192;`)
    await copy.run(`ATTACH DATABASE ? AS src`, [dbFile])
    await copy.exec(`CREATE TABLE projects AS SELECT * FROM src.projects; CREATE TABLE users AS SELECT * FROM src.users;
      CREATE TABLE project_facets AS SELECT * FROM src.project_facets; CREATE UNIQUE INDEX users_id ON users(id); DETACH DATABASE src;`)
    const started = performance.now()
    await createSearchIndex(copy)
    const buildSeconds = (performance.now() - started) / 1000
    await copy.close()
    return { buildSeconds, totalBytes, tables }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  if (process.argv.includes('--serve-like')) return serveLikeBaseline(arg('db', ''), Number(arg('port', '0')))
  const dist = path.resolve(arg('dist', '/tmp/large-dist'))
  const requests = Number(arg('requests', '200'))
  const likeRequests = Number(arg('like-requests', '8'))
  const concurrency = Number(arg('concurrency', '4'))
  const baseRoot = arg('base-root', '')
  const dbFile = path.join(dist, 'current', 'catalog.sqlite')
  const db = await openDb(dbFile, { readonly: true })
  const projects = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM projects`))!.n
  const sqlite = (await db.get<{ v: string }>(`SELECT sqlite_version() AS v`))!.v
  const classes = await deriveQueryClasses(db)
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'search-bench-'))
  const startShim = async (root: string, servedDist: string, name: string): Promise<{ child: ChildProcess; origin: string }> => {
    const port = await freePort()
    return startChild(['shim/cli.ts'], {
      DIST_DIR: servedDist, PORT: String(port), HOST: '127.0.0.1', RATE_LIMIT: '1000000000', RELEASE_POLL_MS: '0',
      // Never write into the benchmarked dist: counters and their secret go to a scratch folder.
      COUNTERS_FILE: path.join(scratch, `${name}-counters.sqlite`), DOWNLOAD_SECRET_FILE: path.join(scratch, `${name}-secret`),
    }, port, root)
  }
  const children: ChildProcess[] = []
  const results: SearchReport['classes'] = []
  try {
    const shim = await startShim(ROOT, dist, 'ours')
    children.push(shim.child)
    const base = baseRoot ? await startShim(path.resolve(baseRoot), path.resolve(arg('base-dist', dist)), 'base') : null
    if (base) children.push(base.child)
    const likePort = await freePort()
    const like = likeRequests > 0 ? await startChild(['bench/search.ts', '--', '--serve-like', '--db', dbFile, '--port', String(likePort)], {}, likePort) : null
    if (like) children.push(like.child)
    for (const c of classes) {
      process.stderr.write(`… ${c.name}\n`)
      const ours = await measure(shim.origin, c.urls, requests, concurrency, shim.child.pid!)
      const before = base ? await measure(base.origin, c.urls, requests, concurrency, base.child.pid!) : undefined
      const naive = like ? await measure(like.origin, c.urls.map((u) => u.replace('/api/v1/projects', '/like')), likeRequests, 2, like.child.pid!) : undefined
      results.push({ name: c.name, examples: c.urls.slice(0, 2), ours, ...(before ? { base: before } : {}), ...(naive ? { like: naive } : {}) })
    }
  } finally {
    for (const child of children) child.kill()
  }
  const index = process.argv.includes('--no-index') ? await measureIndex(db, null) : await measureIndex(db, dbFile)
  await db.close()
  rmSync(scratch, { recursive: true, force: true })
  const report: SearchReport = {
    date: new Date().toISOString(),
    machine: { ...readMachine(), loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100) },
    versions: { node: process.version, sqlite },
    catalog: { dist, projects },
    settings: { requests, likeRequests, concurrency, resultCache: 'none (the shim has no result cache)', ...(baseRoot ? { base: `${baseRoot} serving ${arg('base-dist', dist)}` } : {}) },
    classes: results,
    index,
  }
  const out = path.resolve(arg('out', path.join(ROOT, 'bench/results')))
  mkdirSync(out, { recursive: true })
  writeFileSync(path.join(out, 'search.json'), `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(path.join(out, 'search.md'), renderSearchMarkdown(report))
  process.stdout.write(renderSearchMarkdown(report))
}

await main()
