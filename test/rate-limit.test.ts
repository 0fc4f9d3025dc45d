/** Rate limiting: 120/min per client by default, headers on every response, 429 readable by browsers. */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { errorSchema } from '../build/schema/api.ts'
import { clientKey, createTrustedProxies, resolveClientIp, unmapAddress } from '../shim/client-ip.ts'
import { createMemoryRateLimiter } from '../shim/rate-limit.ts'
import { requestFrom, startServer, type RawResponse, type TestServer } from './harness.ts'

/** GET through a chosen local source address (127.0.0.x are all this machine). */
function getFrom(server: TestServer, localAddress: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return requestFrom(server.origin, path, localAddress, headers)
}

let server: TestServer
beforeAll(async () => {
  server = await startServer(inject('distDir'), { rateLimit: 120, trustedProxies: ['127.0.0.9'] })
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

describe('rate limit', () => {
  it('gives the 121st request of a client a 429 with the headers a browser can read; another client is unaffected', async () => {
    let lastReset = ''
    for (let i = 1; i <= 120; i++) {
      const res = await getFrom(server, '127.0.0.2', i % 2 ? '/api/v1/projects/sodium' : '/api/v1/statistics')
      expect(res.status).toBe(200)
      expect(res.headers['x-ratelimit-limit']).toBe('120')
      expect(res.headers['x-ratelimit-remaining']).toBe(String(120 - i))
      if (lastReset) expect(res.headers['x-ratelimit-reset']).toBe(lastReset)
      lastReset = String(res.headers['x-ratelimit-reset'])
      expect(Number(lastReset)).toBeGreaterThan(Date.now() / 1000)
    }
    for (let i = 0; i < 3; i++) {
      const limited = await getFrom(server, '127.0.0.2', '/api/v1/projects/sodium')
      expect(limited.status).toBe(429)
      expect(limited.headers['x-ratelimit-remaining']).toBe('0')
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(limited.headers['retry-after']).toMatch(/^\d+$/)
      expect(limited.headers['cache-control']).toBe('no-store')
      expect(limited.headers['access-control-allow-origin']).toBe('*')
      expect(String(limited.headers['access-control-expose-headers'])).toContain('Retry-After')
      const body = errorSchema.parse(JSON.parse(limited.body))
      expect(body.error.code).toBe('rate_limited')
      expect(body.error.requestId).toBe(limited.headers['x-request-id'])
    }
    const other = await getFrom(server, '127.0.0.3', '/api/v1/projects/sodium')
    expect(other.status).toBe(200)
    expect(other.headers['x-ratelimit-remaining']).toBe('119')
  })

  it('ignores X-Forwarded-For from an untrusted peer, and reads it from the right behind a trusted proxy', async () => {
    const spoofed = await getFrom(server, '127.0.0.4', '/api/v1/types', { 'X-Forwarded-For': '203.0.113.7' })
    expect(spoofed.headers['x-ratelimit-remaining']).toBe('119')
    const again = await getFrom(server, '127.0.0.4', '/api/v1/types', { 'X-Forwarded-For': '203.0.113.8' })
    expect(again.headers['x-ratelimit-remaining']).toBe('118')
    const viaProxy = await getFrom(server, '127.0.0.9', '/api/v1/types', { 'X-Forwarded-For': '198.51.100.1, 203.0.113.50' })
    const viaProxy2 = await getFrom(server, '127.0.0.9', '/api/v1/types', { 'X-Forwarded-For': '10.9.9.9, 203.0.113.50' })
    expect(viaProxy.headers['x-ratelimit-remaining']).toBe('119')
    expect(viaProxy2.headers['x-ratelimit-remaining']).toBe('118')
  })

  it('does not limit CORS preflights into failures', async () => {
    const res = await server.get('/projects/sodium', { method: 'OPTIONS', headers: { 'Access-Control-Request-Method': 'GET' } })
    expect(res.status).toBe(204)
  })
})

describe('client identity', () => {
  const trusted = createTrustedProxies(['10.0.0.0/8', '2001:db8:ffff::/48'])
  it('unmaps IPv4-mapped IPv6 and buckets IPv6 by /64', () => {
    expect(unmapAddress('::ffff:203.0.113.5')).toBe('203.0.113.5')
    expect(clientKey(unmapAddress('::FFFF:203.0.113.5'))).toBe(clientKey('203.0.113.5'))
    expect(clientKey('203.0.113.5')).not.toBe(clientKey('203.0.113.6'))
    expect(clientKey('2001:db8:1:2::10')).toBe(clientKey('2001:db8:1:2:ffff::99'))
    expect(clientKey('2001:db8:1:2::10')).not.toBe(clientKey('2001:db8:1:3::10'))
  })
  it('walks X-Forwarded-For right to left, skipping trusted hops only', () => {
    expect(resolveClientIp('198.51.100.2', '1.2.3.4', trusted)).toBe('198.51.100.2')
    expect(resolveClientIp('10.0.0.1', '1.2.3.4, 203.0.113.9', trusted)).toBe('203.0.113.9')
    expect(resolveClientIp('10.0.0.1', '1.2.3.4, 203.0.113.9, 10.1.1.1', trusted)).toBe('203.0.113.9')
    expect(resolveClientIp('::ffff:10.0.0.1', ['203.0.113.9'], trusted)).toBe('203.0.113.9')
    expect(resolveClientIp('10.0.0.1', 'garbage', trusted)).toBe('10.0.0.1')
    expect(() => createTrustedProxies(['nonsense'])).toThrow(/TRUSTED_PROXIES/)
  })
  it('keeps Remaining non-negative and Reset constant inside a window; a new window starts afresh', async () => {
    let t = 1_700_000_000_000
    const limiter = createMemoryRateLimiter(3, 60, () => t)
    const a = [await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k'), await limiter.consume('k')]
    expect(a.map((d) => d.allowed)).toEqual([true, true, true, false])
    expect(a.map((d) => d.remaining)).toEqual([2, 1, 0, 0])
    expect(a[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(1)
    t += 1000
    expect((await limiter.consume('other')).remaining).toBe(2)
  })
})
