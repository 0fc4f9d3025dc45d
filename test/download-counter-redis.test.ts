/**
 * The shared download counter in-process, against a real redis-server: a replica that starts while
 * Redis is down (no day secret anywhere) holds its events and counts them once Redis starts; the
 * day secret is learned a day ahead and expires an hour after its day; store options are checked.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { resolveShimOptions } from '../shim/config.ts'
import { openRedisDownloadCounter } from '../shim/download-counter-redis.ts'
import { closeRedisClient, createRedisClient } from '../shim/redis.ts'
import { freePort } from './harness.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'counter-redis-'))
let server: ChildProcess | null = null
afterAll(() => {
  server?.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('/usr/bin/redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: ['ignore', 'pipe', 'ignore'] })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('Ready to accept connections')) resolve(child)
    })
    child.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)))
  })
}

async function counts(file: string): Promise<Record<string, number>> {
  const db = await openDb(file, { readonly: true })
  const rows = await db.all<{ file_id: string; n: number }>(`SELECT file_id, n FROM file_downloads`)
  await db.close()
  return Object.fromEntries(rows.map((r) => [r.file_id, r.n]))
}

describe('shared download counter', () => {
  it('holds the events of a replica started while Redis is down and counts them once when it starts', async () => {
    const port = await freePort()
    const file = path.join(dir, 'held.sqlite')
    const lines: string[] = []
    const log = (l: string): void => void lines.push(l)
    const now = (): number => Date.parse('2026-06-01T10:00:00Z')
    const redis = createRedisClient(`redis://127.0.0.1:${port}`, 200, log)
    const counter = await openRedisDownloadCounter({ file, redis, secretFile: null, drain: true, now, intervalMs: 100, log })
    const started = performance.now()
    await Promise.all([counter.record('FileA', '203.0.113.5'), counter.record('FileA', '203.0.113.5'), counter.record('FileA', '203.0.113.6')])
    // Served without waiting for Redis; nothing counted yet, three events held.
    expect(performance.now() - started).toBeLessThan(1000)
    expect(counter.backlog()).toBe(3)
    expect(lines.filter((l) => l.includes('[downloads] Redis unavailable'))).toHaveLength(1)
    server = await startRedis(port)
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline && (await counts(file)).FileA !== 2) await new Promise((r) => setTimeout(r, 100))
    expect(await counts(file)).toEqual({ FileA: 2 })
    expect(counter.backlog()).toBe(0)
    await counter.record('FileA', '203.0.113.5')
    await counter.flush()
    expect(await counts(file)).toEqual({ FileA: 2 })
    expect(lines.join('\n')).toContain('[downloads] Redis is back')

    // Today's secret and tomorrow's (learned ahead), each expiring an hour after its day ends.
    const probe = new Redis({ port, host: '127.0.0.1' })
    const ttl = async (day: string): Promise<number> => probe.pttl(`dl:secret:${day}`)
    const end = (day: string): number => Date.parse(`${day}T00:00:00Z`) + 86_400_000 + 3_600_000 - now()
    expect(Math.abs((await ttl('2026-06-01')) - end('2026-06-01'))).toBeLessThan(5000)
    expect(Math.abs((await ttl('2026-06-02')) - end('2026-06-02'))).toBeLessThan(5000)
    probe.disconnect()
    await counter.close()
    await closeRedisClient(redis)
  })

  it('chooses stores by configuration: memory and SQLite by default, Redis only with REDIS_URL', () => {
    const d = resolveShimOptions({}, {})
    expect([d.rateLimitStore, d.downloadStore, d.redisUrl, d.replicas, d.redisTimeoutMs, d.downloadDrain]).toEqual(['memory', 'sqlite', null, 1, 200, true])
    const r = resolveShimOptions({}, { REDIS_URL: 'redis://h:1', RATE_LIMIT_STORE: 'redis', DOWNLOAD_STORE: 'redis', REPLICAS: '3', REDIS_TIMEOUT_MS: '100', DOWNLOAD_DRAIN: '0' })
    expect([r.rateLimitStore, r.downloadStore, r.redisUrl, r.replicas, r.redisTimeoutMs, r.downloadDrain]).toEqual(['redis', 'redis', 'redis://h:1', 3, 100, false])
    expect(() => resolveShimOptions({}, { RATE_LIMIT_STORE: 'redis' })).toThrow(/REDIS_URL/)
    expect(() => resolveShimOptions({}, { DOWNLOAD_STORE: 'postgres', REDIS_URL: 'redis://h:1' })).toThrow(/DOWNLOAD_STORE/)
    // A misspelt value is refused, not read as the default: "false" must not mean "drain".
    expect(() => resolveShimOptions({}, { DOWNLOAD_DRAIN: 'false' })).toThrow('DOWNLOAD_DRAIN must be 0 or 1, got "false"')
    expect(() => resolveShimOptions({}, { CACHE_SCOPE: 'publik' })).toThrow('CACHE_SCOPE must be one of private, public, got "publik"')
    expect(resolveShimOptions({}, { CACHE_SCOPE: 'public', DOWNLOAD_DRAIN: '1' })).toMatchObject({ cacheScope: 'public', downloadDrain: true })
    // The build's parser and wording (build/env.ts): what Number() would accept is not an integer setting,
    // and a count that cannot be zero is refused rather than raised to one.
    for (const [name, value, message] of [
      ['PORT', '0x10', 'PORT must be an integer from 0 to 65535, got "0x10"'],
      ['PORT', ' ', 'PORT must be an integer from 0 to 65535, got " "'],
      ['PORT', '70000', 'PORT must be an integer from 0 to 65535, got "70000"'],
      ['RATE_LIMIT', '1e3', 'RATE_LIMIT must be an integer from 1 up, got "1e3"'],
      ['RATE_LIMIT', '0', 'RATE_LIMIT must be an integer from 1 up, got "0"'],
      ['REPLICAS', '0', 'REPLICAS must be an integer from 1 up, got "0"'],
      ['REDIS_TIMEOUT_MS', '-5', 'REDIS_TIMEOUT_MS must be an integer from 1 up, got "-5"'],
    ] as const) {
      expect(() => resolveShimOptions({}, { [name]: value }), `${name}=${value}`).toThrow(message)
    }
  })
})
