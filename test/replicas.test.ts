/**
 * Shared state for replicas: two shim processes on one real redis-server (started here on an
 * ephemeral port, no persistence) hold one rate limit and count a visitor's download once; with
 * Redis stalled (SIGSTOP) or killed, every request is still served (no 5xx), the limiter falls back
 * to the per-process budget, download events are spooled and, once Redis is back, counted once.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { openDb } from '../build/db/sqlite.ts'
import { runBuild } from '../build/index.ts'
import { errorSchema } from '../build/schema/api.ts'
import { freePort, json, requestFrom, startServer, type RawResponse } from './harness.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'replicas-'))
const counters = path.join(dir, 'counters.sqlite')

/** Spawns a process and resolves once its output contains `ready`; `out()` is everything it printed. */
async function startProcess(cmd: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; out: () => string }> {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      out += chunk.toString()
      if (ready.test(out)) resolve()
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', (code) => reject(new Error(`${cmd} exited with ${code}: ${out}`)))
    setTimeout(() => reject(new Error(`${cmd} did not start: ${out}`)), 60_000).unref()
  })
  return { child, out: () => out }
}

let redisPort = 0
let redisServer: ChildProcess | null = null
const startRedis = async (): Promise<void> => {
  const started = await startProcess('/usr/bin/redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], process.env, /Ready to accept connections/)
  redisServer = started.child
}

interface Replica {
  origin: string
  child: ChildProcess
  log: () => string
  secretFile: string
}
const replicas: Replica[] = []
let probe: Redis

async function startReplica(name: string): Promise<Replica> {
  const port = await freePort()
  const secretFile = path.join(dir, `secret-${name}.json`)
  const { child, out } = await startProcess(
    process.execPath,
    ['node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'],
    {
      ...process.env,
      DIST_DIR: inject('distDir'),
      COUNTERS_FILE: counters,
      // One tmpfs file per replica, as on two hosts: the shared secret can only come from Redis.
      DOWNLOAD_SECRET_FILE: secretFile,
      HOST: '127.0.0.1',
      PORT: String(port),
      RATE_LIMIT: '120',
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      RATE_LIMIT_STORE: 'redis',
      DOWNLOAD_STORE: 'redis',
      REPLICAS: '2',
      REDIS_TIMEOUT_MS: '500',
      RELEASE_POLL_MS: '0',
    },
    /\[redis\] connected[\s\S]*Serving release|Serving release[\s\S]*\[redis\] connected/,
  )
  return { origin: `http://127.0.0.1:${port}`, child, log: out, secretFile }
}



async function countOf(fileId: string): Promise<{ n: number; visits: number }> {
  const db = await openDb(counters, { readonly: true, busyTimeout: 5000 })
  try {
    const n = (await db.get<{ n: number }>(`SELECT n FROM file_downloads WHERE file_id = ?`, [fileId]))?.n ?? 0
    const visits = (await db.get<{ c: number }>(`SELECT count(*) AS c FROM download_visits WHERE file_id = ?`, [fileId]))!.c
    return { n, visits }
  } finally {
    await db.close()
  }
}

/** Waits until the folded count of `fileId` is `n`, then checks it stays there (nothing doubled later). */
async function expectCount(fileId: string, n: number): Promise<void> {
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline && (await countOf(fileId)).n < n) await new Promise((r) => setTimeout(r, 200))
  await new Promise((r) => setTimeout(r, 2500))
  expect(await countOf(fileId)).toEqual({ n, visits: n })
}

/** Waits (up to 5 s) until `log()` contains `line`: a replica's stderr may arrive after its HTTP answer. */
async function expectLogLine(log: () => string, line: string): Promise<void> {
  const deadline = Date.now() + 5000
  while (Date.now() < deadline && !log().includes(line)) await new Promise((r) => setTimeout(r, 50))
  expect(log()).toContain(line)
}

/** The day secrets in Redis, by key. */
async function readSecrets(): Promise<Record<string, string | null>> {
  const keys = (await probe.keys('dl:secret:*')).sort()
  const values = keys.length > 0 ? await probe.mget(keys) : []
  return Object.fromEntries(keys.map((k, i) => [k, values[i] ?? null]))
}

const occurrences = (text: string, needle: string): number => text.split(needle).length - 1

let fileId = ''
beforeAll(async () => {
  redisPort = await freePort()
  await startRedis()
  probe = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 200 })
  probe.on('error', () => {})
  replicas.push(...(await Promise.all([startReplica('a'), startReplica('b')])))
  const detail = JSON.parse((await requestFrom(replicas[0]!.origin, '/api/v1/projects/sodium', '127.0.0.99')).body)
  fileId = detail.data.currentVersion.files[0].id
})
afterAll(async () => {
  for (const r of replicas) r.child.kill('SIGKILL')
  probe?.disconnect()
  if (redisServer && redisServer.exitCode === null) {
    redisServer.kill('SIGCONT')
    redisServer.kill('SIGKILL')
  }
  rmSync(dir, { recursive: true, force: true })
})

describe('two replicas on one Redis', () => {
  it('hold one rate limit: the 121st request of a client across both is a 429', async () => {
    let firstReset = 0
    for (let i = 1; i <= 120; i++) {
      const res = await requestFrom(replicas[i % 2]!.origin, i % 3 ? '/api/v1/projects/sodium' : '/api/v1/statistics', '127.0.0.2')
      expect(res.status).toBe(200)
      expect(res.headers['x-ratelimit-limit']).toBe('120')
      expect(res.headers['x-ratelimit-remaining']).toBe(String(120 - i))
      const reset = Number(res.headers['x-ratelimit-reset'])
      firstReset ||= reset
      // Epoch seconds of the one shared window end (each replica rounds its own clock: ±1 s).
      expect(Math.abs(reset - firstReset)).toBeLessThanOrEqual(1)
      expect(reset).toBeGreaterThan(Date.now() / 1000)
    }
    for (const r of replicas) {
      const limited = await requestFrom(r.origin, '/api/v1/projects/sodium', '127.0.0.2')
      expect(limited.status).toBe(429)
      expect(limited.headers['retry-after']).toMatch(/^\d+$/)
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(limited.headers['x-ratelimit-remaining']).toBe('0')
      expect(limited.headers['cache-control']).toBe('no-store')
      expect(errorSchema.parse(JSON.parse(limited.body)).error.code).toBe('rate_limited')
    }
    const other = await requestFrom(replicas[1]!.origin, '/api/v1/types', '127.0.0.3')
    expect(other.status).toBe(200)
    expect(other.headers['x-ratelimit-remaining']).toBe('119')
  })

  it("count one visitor's downloads through both replicas once, with one day secret and no address in Redis", async () => {
    const url = `/api/v1/files/${fileId}/download`
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => requestFrom(replicas[i % 2]!.origin, url, '127.0.0.21')))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(302))
    expect(results[0]!.headers.location).toMatch(/^\/objects\/[0-9a-f]{64}\//)
    expect((await requestFrom(replicas[1]!.origin, url, '127.0.0.22')).status).toBe(302)
    await expectCount(fileId, 2)
    // Both replicas learned the same secret from Redis (their tmpfs copies agree).
    const [a, b] = replicas.map((r) => JSON.parse(readFileSync(r.secretFile, 'utf8')) as { key: string })
    expect(a!.key).toBe(b!.key)
    await probe.connect()
    const keys = await probe.keys('*')
    // One dedup key per visitor, whichever replica and however often it downloaded.
    expect(keys.filter((k) => k.startsWith('dl:v:'))).toHaveLength(2)
    // Download state holds only HMACs; rate-limit windows are keyed by client and expire with the window.
    const dl = keys.filter((k) => k.startsWith('dl:'))
    const values = await Promise.all(dl.map(async (k) => ((await probe.type(k)) === 'list' ? (await probe.lrange(k, 0, -1)).join() : String(await probe.get(k)))))
    expect(JSON.stringify([dl, values])).not.toContain('127.0.0')
    for (const k of keys.filter((k) => k.startsWith('rl:'))) expect(await probe.pttl(k)).toBeGreaterThan(0)
    // A visit lives 48 h; a day secret until an hour after its day ends, and tomorrow's is learned
    // ahead (shim/download-shared-secret.ts), so in the first hour of a UTC day it has up to 49 h.
    for (const k of dl) {
      const ttl = await probe.ttl(k)
      if (k === 'dl:events') continue
      expect(ttl, k).toBeGreaterThan(0)
      expect(ttl, k).toBeLessThanOrEqual(k.startsWith('dl:secret:') ? 49 * 3600 : 172_800)
    }
    expect(await probe.llen('dl:events')).toBe(0)
  })

  it('serve every request with Redis stalled (SIGSTOP): per-process budget, downloads spooled, logged once, counted once after', async () => {
    const [A, B] = [replicas[0]!, replicas[1]!]
    const logA = A.log().length
    redisServer!.kill('SIGSTOP')
    const statuses: number[] = []
    for (let i = 1; i <= 61; i++) {
      const res = await requestFrom(A.origin, '/api/v1/projects/sodium', '127.0.0.41')
      statuses.push(res.status)
      if (i <= 60) expect([res.status, res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-remaining']]).toEqual([200, '60', String(60 - i)])
      else expect([res.status, Number(res.headers['retry-after']) >= 1]).toEqual([429, true])
    }
    const url = `/api/v1/files/${fileId}/download`
    // A new visitor (counted once Redis is back) and an already counted one (never counted again).
    expect((await requestFrom(A.origin, url, '127.0.0.23')).status).toBe(302)
    expect((await requestFrom(B.origin, url, '127.0.0.23')).status).toBe(302)
    expect((await requestFrom(B.origin, url, '127.0.0.21')).status).toBe(302)
    const during = A.log().slice(logA)
    expect(occurrences(during, '[rate-limit] Redis unavailable')).toBe(1)
    expect(occurrences(during, '[downloads] Redis unavailable')).toBe(1)
    redisServer!.kill('SIGCONT')
    await expectCount(fileId, 3)
    await new Promise((r) => setTimeout(r, 1100))
    for (const r of replicas) {
      const back = await requestFrom(r.origin, '/api/v1/types', '127.0.0.42')
      expect([back.status, back.headers['x-ratelimit-limit']]).toEqual([200, '120'])
    }
    // The line goes to the replica's stderr before its answer, but the two pipes reach this process
    // in either order: wait for it rather than read the log at once.
    await expectLogLine(() => A.log().slice(logA), '[rate-limit] Redis is back')
    await expectLogLine(() => B.log(), '[rate-limit] Redis is back')
  })

  it('serve every request with Redis killed, and count spooled downloads once after it restarts empty', async () => {
    const [A, B] = [replicas[0]!, replicas[1]!]
    const secretBefore = await readSecrets()
    const logs = replicas.map((r) => r.log().length)
    redisServer!.kill('SIGKILL')
    await new Promise<void>((resolve) => redisServer!.once('exit', () => resolve()))
    const url = `/api/v1/files/${fileId}/download`
    const statuses: number[] = []
    for (let i = 0; i < 40; i++) statuses.push((await requestFrom(replicas[i % 2]!.origin, '/api/v1/search?q=sod', '127.0.0.51')).status)
    expect(statuses).toEqual(Array(40).fill(200))
    expect((await requestFrom(A.origin, url, '127.0.0.24')).status).toBe(302)
    expect((await requestFrom(B.origin, url, '127.0.0.24')).status).toBe(302)
    // Counted before the outage: Redis loses its dedup keys on restart, the counter file's rows hold.
    expect((await requestFrom(B.origin, url, '127.0.0.22')).status).toBe(302)
    for (const [i, r] of replicas.entries()) {
      const during = r.log().slice(logs[i])
      expect(occurrences(during, '[rate-limit] Redis unavailable')).toBe(1)
      expect(occurrences(during, '[downloads] Redis unavailable')).toBe(1)
    }
    await startRedis()
    await expectCount(fileId, 4)
    // The replicas put back the day secret they use, so visitors keep their ids.
    expect(await readSecrets()).toEqual(secretBefore)
    // Both replicas share the counter file here, so either may replay the spool.
    expect(replicas.map((r, i) => r.log().slice(logs[i])).join()).toMatch(/\[downloads\] replayed \d+ spooled download event/)
    expect(await probe.llen('dl:events')).toBe(0)
    for (const r of replicas) expect((await requestFrom(r.origin, '/api/v1/types', '127.0.0.52')).status).toBe(200)
  })

  it('the next build folds the four counted downloads into the version, once', async () => {
    const dist = path.join(dir, 'dist')
    expect((await runBuild(resolveBuildOptions({ dataDir: 'data', distDir: dist, countersFile: counters, log: () => {} }))).ok).toBe(true)
    const [before, after] = await Promise.all([startServer(inject('distDir')), startServer(dist, { countersFile: path.join(dir, 'unused.sqlite'), downloadSecretFile: null })])
    const read = async (server: typeof before): Promise<{ downloads: number; files: { id: string }[] }> => (await json(await server.get('/projects/sodium'))).data.currentVersion
    const [v0, v1] = [await read(before), await read(after)]
    expect(v1.files.map((f) => f.id)).toContain(fileId)
    expect(v1.downloads).toBe(v0.downloads + 4)
    await Promise.all([before.close(), after.close()])
  })
})
