/**
 * Issue 7 (serving performance): static hits are answered by the listener's fast path before h3.
 * It must be indistinguishable from the app's path (same headers in the same order, same bytes,
 * same 304s and HEADs), count every request exactly once, and the synchronous in-memory limiter
 * must keep the fixed-window semantics of the store it replaced.
 */
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createMemoryRateLimiter, type RateLimiter } from '../shim/rate-limit.ts'
import { startServer, type TestServer } from './harness.ts'

interface RawResponse {
  status: number
  /** Header names in the order the server wrote them, lowercased. */
  names: string[]
  headers: Record<string, string>
  body: string
}

/** A request whose raw header order survives (fetch's Headers sorts them). */
function send(server: TestServer, path: string, method = 'GET', headers: Record<string, string> = {}): Promise<RawResponse> {
  const url = new URL(server.origin + path)
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method, headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => {
        const names: string[] = []
        const all: Record<string, string> = {}
        for (let i = 0; i < res.rawHeaders.length; i += 2) {
          names.push(res.rawHeaders[i]!.toLowerCase())
          all[res.rawHeaders[i]!.toLowerCase()] = res.rawHeaders[i + 1]!
        }
        resolve({ status: res.statusCode!, names, headers: all, body })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** Wraps a limiter to count how many requests it was asked to consume, by either method. */
function countingLimiter(inner: RateLimiter): { limiter: RateLimiter; count: () => number } {
  let n = 0
  return {
    limiter: {
      consume: (key) => (n++, inner.consume(key)),
      consumeNow: (key) => (n++, inner.consumeNow!(key)),
    },
    count: () => n,
  }
}

/**
 * A server over the sample release whose limiter (`limit` per minute) counts its calls, started
 * before and closed after the enclosing suite, with no 5xx allowed in between.
 */
function serverWithCountingLimiter(limit: number): { server: () => TestServer; count: () => number } {
  let server: TestServer
  let counted: ReturnType<typeof countingLimiter>
  beforeAll(async () => {
    counted = countingLimiter(createMemoryRateLimiter(limit, 60))
    server = await startServer(inject('distDir'), {}, { limiter: counted.limiter })
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })
  return { server: () => server, count: () => counted.count() }
}

const main = serverWithCountingLimiter(1_000_000)
let server: TestServer
beforeAll(() => {
  server = main.server()
})

describe('static fast path', () => {
  const variants: [string, string, Record<string, string>][] = [
    ['GET', '/api/v1/projects/sodium', {}],
    ['HEAD', '/api/v1/projects/sodium', {}],
    ['GET', '/api/v1/categories', {}],
  ]
  it.each(variants)('answers %s %s from memory exactly as the app does from disk', async (method, path, headers) => {
    server.ctx.cache.clear()
    const before = main.count()
    const fromApp = await send(server, path, method, headers)
    expect(server.ctx.cache.get?.(path)).toBeDefined()
    const fromFastPath = await send(server, path, method, headers)
    expect(main.count() - before).toBe(2)
    expect(fromApp.status).toBe(200)
    expect(fromFastPath.status).toBe(200)
    expect(fromFastPath.names).toEqual(fromApp.names)
    expect(fromFastPath.body).toBe(fromApp.body)
    if (method === 'GET') expect(fromApp.body.length).toBeGreaterThan(0)
    for (const name of fromApp.names) {
      if (name === 'x-request-id' || name === 'x-ratelimit-remaining' || name === 'date') continue
      expect(fromFastPath.headers[name], name).toBe(fromApp.headers[name])
    }
    expect(Number(fromFastPath.headers['x-ratelimit-remaining'])).toBe(Number(fromApp.headers['x-ratelimit-remaining']) - 1)
    expect(fromFastPath.headers['x-request-id']).not.toBe(fromApp.headers['x-request-id'])
    expect(fromFastPath.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('answers If-None-Match with the same empty 304 on both paths', async () => {
    const path = '/api/v1/projects/sodium'
    const etag = (await send(server, path)).headers.etag!
    server.ctx.cache.clear()
    const fromApp = await send(server, path, 'GET', { 'If-None-Match': `W/${etag}, "other"` })
    const fromFastPath = await send(server, path, 'GET', { 'If-None-Match': `W/${etag}, "other"` })
    for (const res of [fromApp, fromFastPath]) {
      expect(res.status).toBe(304)
      expect(res.body).toBe('')
      expect(res.headers.etag).toBe(etag)
    }
    expect(fromFastPath.names).toEqual(fromApp.names)
    expect(fromFastPath.names).not.toContain('content-length')
  })

  it('leaves query strings, encoded paths and other methods to the app', async () => {
    await send(server, '/api/v1/projects/sodium')
    const encoded = await send(server, '/api/v1/projects/sodi%75m')
    expect(encoded.status).toBe(200)
    const post = await send(server, '/api/v1/projects/sodium', 'POST')
    expect(post.status).toBe(405)
    expect(post.headers.allow).toBe('GET, HEAD, OPTIONS')
    const dotted = await send(server, '/api/v1/projects/.sodium')
    expect(dotted.status).toBe(404)
  })
})

describe('refusals on the fast path', () => {
  const refusing = serverWithCountingLimiter(2)
  let limited: TestServer
  beforeAll(() => {
    limited = refusing.server()
  })

  it('hands a refused static hit to the app, counted once, as the 429 envelope', async () => {
    const a = await send(limited, '/api/v1/projects/sodium')
    const b = await send(limited, '/api/v1/projects/sodium')
    expect([a.status, b.status]).toEqual([200, 200])
    expect(b.headers['x-ratelimit-remaining']).toBe('0')
    const refused = await send(limited, '/api/v1/projects/sodium')
    expect(refused.status).toBe(429)
    expect(refusing.count()).toBe(3)
    expect(refused.headers['x-ratelimit-remaining']).toBe('0')
    expect(refused.headers['x-ratelimit-reset']).toBe(a.headers['x-ratelimit-reset'])
    expect(JSON.parse(refused.body).error.code).toBe('rate_limited')
    expect(JSON.parse(refused.body).error.requestId).toBe(refused.headers['x-request-id'])
  })
})

describe('in-memory limiter', () => {
  it('keeps one window per key until it ends, then starts afresh; Reset is the window end', async () => {
    let t = 1_700_000_000_250
    const limiter = createMemoryRateLimiter(2, 60, () => t)
    const first = limiter.consumeNow!('k')
    expect(first).toEqual({ allowed: true, limit: 2, remaining: 1, resetEpochSeconds: Math.ceil((t + 60_000) / 1000), retryAfterSeconds: 60 })
    t += 59_000
    expect(limiter.consumeNow!('k')).toMatchObject({ allowed: true, remaining: 0, resetEpochSeconds: first.resetEpochSeconds })
    const refused = await limiter.consume('k')
    expect(refused).toMatchObject({ allowed: false, remaining: 0, resetEpochSeconds: first.resetEpochSeconds, retryAfterSeconds: 1 })
    t += 1_000
    expect(limiter.consumeNow!('k')).toMatchObject({ allowed: true, remaining: 1, resetEpochSeconds: Math.ceil((t + 60_000) / 1000) })
  })

  it('forgets windows that ended, across the generation swaps that bound its memory', () => {
    let t = 0
    const limiter = createMemoryRateLimiter(3, 10, () => t)
    for (let i = 0; i < 3; i++) limiter.consumeNow!('busy')
    t = 9_999
    expect(limiter.consumeNow!('busy').allowed).toBe(false)
    t = 10_000
    expect(limiter.consumeNow!('busy')).toMatchObject({ allowed: true, remaining: 2 })
    t = 15_000
    expect(limiter.consumeNow!('busy')).toMatchObject({ allowed: true, remaining: 1 })
    t = 21_000
    // Its window (10 000–20 000) ended; a new one starts at 21 000 and holds through the next swap.
    expect(limiter.consumeNow!('busy')).toMatchObject({ allowed: true, remaining: 2, resetEpochSeconds: 31 })
    t = 30_999
    expect(limiter.consumeNow!('busy')).toMatchObject({ allowed: true, remaining: 1, resetEpochSeconds: 31 })
  })

  it('treats a window of 0 s as one window forever, as RateLimiterMemory did', () => {
    let t = 5_000
    const limiter = createMemoryRateLimiter(1, 0, () => t)
    expect(limiter.consumeNow!('k').allowed).toBe(true)
    t += 10 ** 9
    expect(limiter.consumeNow!('k')).toMatchObject({ allowed: false, remaining: 0, retryAfterSeconds: 1 })
  })
})
