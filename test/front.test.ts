/**
 * The nginx front server (issue 8): nginx really serves the static reads (the shim sees none of
 * them) with the shim's bytes and headers, ETag included, for every file of the sample release;
 * everything else reaches the shim with the real client in X-Forwarded-For; nginx's own errors are
 * envelopes; a release swap causes no 404; the generated configuration passes `nginx -t`.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { request, type IncomingHttpHeaders } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild } from '../build/index.ts'
import { contentEtag, contentMtime } from '../build/render/etag.ts'
import { errorSchema } from '../build/schema/api.ts'
import { renderFrontConfig } from '../shim/front-config.ts'
import { NGINX, startNginxFront, type FrontServer } from './front.ts'
import { startServer, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'front-test-'))
const data = path.join(root, 'data')
const dist = path.join(root, 'dist')
let shim: TestServer
let nginx: FrontServer

async function build(): Promise<string> {
  const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, keepReleases: 2, log: () => {} }))
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.file}: ${p.path}: ${p.message}`).join('\n'))
  return result.releaseDir
}

/** A request from a chosen loopback address, with any headers (fetch can set neither). */
function send(origin: string, target: string, init: { method?: string; headers?: Record<string, string>; localAddress?: string } = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  const url = new URL(origin)
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: target, method: init.method ?? 'GET', headers: init.headers, localAddress: init.localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** URL of a release file (`public/...` of the manifest), as the API links it. */
function urlOf(name: string): string {
  const p = name.slice('public'.length)
  if (p.startsWith('/api/v1/')) return p.slice(0, -'.json'.length)
  const parts = p.split('/')
  return parts.map((s, i) => (i === parts.length - 1 ? encodeURIComponent(s) : s)).join('/')
}

/** Every served file of a release: the manifest (API bodies and objects) plus the mirror documents. */
function listServedFiles(releaseDir: string): { name: string; sha256: string | null; size: number }[] {
  const out = readFileSync(path.join(releaseDir, 'manifest.tsv'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [name, sha256, size] = line.split('\t') as [string, string, string]
      return { name, sha256: sha256 as string | null, size: Number(size) }
    })
  const mirror = path.join(releaseDir, 'public', 'mirror')
  for (const entry of readdirSync(mirror, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.name.startsWith('.')) continue
    const file = path.join(entry.parentPath, entry.name)
    out.push({ name: path.relative(releaseDir, file), sha256: null, size: statSync(file).size })
  }
  return out
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const NGINX_ID = /^[0-9a-f]{32}$/
const SAME = ['etag', 'cache-control', 'content-type', 'content-length', 'content-disposition', 'access-control-allow-origin', 'access-control-expose-headers', 'x-ratelimit-limit']

beforeAll(async () => {
  cpSync('data', data, { recursive: true })
  await build()
  shim = await startServer(dist, { trustedProxies: ['127.0.0.1'] })
  nginx = await startNginxFront({ ...shim.ctx.options, shim: shim.shimOrigin.slice('http://'.length) })
})

afterAll(async () => {
  await nginx?.close()
  expect(shim.serverErrors()).toBe(0)
  await shim?.close()
  rmSync(root, { recursive: true, force: true })
})

describe('nginx in front of the shim', () => {
  it('serves static reads itself (GET, HEAD, 304, ranges ignored): the shim sees none of them', async () => {
    const objectName = listServedFiles(shim.ctx.release.dir).find((f) => f.name.startsWith('public/objects/'))!.name
    const before = shim.shimRequests()
    const plus = listServedFiles(shim.ctx.release.dir).find((f) => f.name.includes('+'))!.name
    const targets = ['/api/v1/projects/sodium', '/api/v1/projects/%73odium', '/api/v1/types', '/api/v1/openapi.json', urlOf(plus), urlOf(plus).replaceAll('+', '%2B'), urlOf(objectName), '/mirror/pointer.json']
    for (const target of targets) {
      const get = await send(nginx.origin, target)
      expect(get.status, target).toBe(200)
      // nginx's request id (hex), not the shim's (a UUID); no per-client counters: the shim was not asked.
      expect(get.headers['x-request-id'], target).toMatch(NGINX_ID)
      expect(get.headers['x-ratelimit-remaining'], target).toBeUndefined()
      expect(get.headers['last-modified'], target).toBeUndefined()
      const head = await send(nginx.origin, target, { method: 'HEAD' })
      expect([head.status, head.headers.etag, head.headers['content-length'], head.body.length]).toEqual([200, get.headers.etag, String(get.body.length), 0])
      const cached = await send(nginx.origin, target, { headers: { 'If-None-Match': `"x", W/${get.headers.etag}` } })
      expect([cached.status, cached.body.length, cached.headers.etag, cached.headers['cache-control']]).toEqual([304, 0, get.headers.etag, get.headers['cache-control']])
      const ranged = await send(nginx.origin, target, { headers: { Range: 'bytes=0-9' } })
      expect([ranged.status, ranged.body.length], target).toEqual([200, get.body.length])
    }
    expect(shim.shimRequests()).toBe(before)
  })

  it('sends misses, queries, other methods, preflights, odd encodings and If-Match to the shim', async () => {
    const cases: { target: string; method?: string; headers?: Record<string, string>; status: number }[] = [
      { target: '/api/v1/projects/no-such-project', status: 404 },
      { target: '/api/v1/nothing/at/all', status: 404 },
      { target: '/objects/0000000000000000000000000000000000000000000000000000000000000000/x.jar', status: 404 },
      { target: '/mirror/no-such-file', status: 404 },
      { target: '/mirror/.pointer.tmp', status: 404 },
      { target: '/', status: 404 },
      { target: '/api/v1/projects/sodium?x=1', status: 200 },
      { target: '/api/v1/projects/sodium?', status: 200 },
      { target: '/api/v1/projects?q=sod', status: 200 },
      { target: '/api/v1/projects/sodium', method: 'POST', status: 405 },
      { target: '/api/v1/projects/sodium', method: 'DELETE', status: 405 },
      { target: '/api/v1/projects/sodium', method: 'OPTIONS', headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'GET' }, status: 204 },
      { target: '/api/v1/projects%2Fsodium', status: 404 },
      { target: '//api/v1/projects/sodium', status: 404 },
      { target: '/api/v1/%2e%2e/%2e%2e/catalog.sqlite', status: 404 },
      { target: '/api/v1/projects/SODIUM', status: 200 },
      { target: '/api/v1/projects/sod%69um/', status: 200 },
      { target: '/api/v1/projects/sodium', headers: { 'If-Match': '"x"' }, status: 200 },
      { target: '/api/v1/projects/sodium', headers: { 'If-None-Match': '"x", *' }, status: 304 },
      { target: '/__catalog-error/400', status: 404 },
    ]
    for (const c of cases) {
      const before = shim.shimRequests()
      const res = await send(nginx.origin, c.target, { method: c.method, headers: c.headers })
      const label = `${c.method ?? 'GET'} ${c.target}`
      expect(res.status, label).toBe(c.status)
      expect(shim.shimRequests(), label).toBe(before + 1)
      expect(res.headers['x-request-id'], label).toMatch(UUID)
      expect(res.headers['access-control-allow-origin'], label).toBe('*')
      if (c.method !== 'OPTIONS') expect(res.headers['x-ratelimit-remaining'], label).toMatch(/^\d+$/)
      if (c.status >= 400) {
        const body = errorSchema.parse(JSON.parse(res.body.toString()))
        expect(body.error.requestId, label).toBe(res.headers['x-request-id'])
        expect(res.headers['cache-control'], label).toBe('no-store')
      }
      if (c.status === 405) expect(res.headers.allow).toBe('GET, HEAD, OPTIONS')
    }
  })

  it("answers nginx's own errors (malformed targets) in the envelope, with the request id", async () => {
    const before = shim.shimRequests()
    for (const target of ['/api/v1/projects/sod%00ium', '/api/v1/projects/%E0%A4%A', '/api/v1/projects/foo%']) {
      const res = await send(nginx.origin, target)
      expect(res.status, target).toBe(400)
      const body = errorSchema.parse(JSON.parse(res.body.toString()))
      expect(body.error.code).toBe('bad_request')
      expect(body.error.requestId).toBe(res.headers['x-request-id'])
      expect(res.headers['access-control-allow-origin']).toBe('*')
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    }
    expect(shim.shimRequests()).toBe(before)
  })

  it('gives every file of the release the bytes, ETag and headers of the shim, and 304s to both ETags', async () => {
    const files = listServedFiles(shim.ctx.release.dir)
    expect(files.length).toBeGreaterThan(1000)
    const before = shim.shimRequests()
    for (const file of files) {
      const target = urlOf(file.name)
      const [viaNginx, direct] = await Promise.all([send(nginx.origin, target), send(shim.shimOrigin, target)])
      expect([viaNginx.status, direct.status], target).toEqual([200, 200])
      expect(viaNginx.body.equals(direct.body), target).toBe(true)
      for (const h of SAME) expect(viaNginx.headers[h], `${target} ${h}`).toBe(direct.headers[h])
      // Content-based: the manifest's SHA-256 and size alone give the ETag.
      if (file.sha256) expect(viaNginx.headers.etag, target).toBe(contentEtag(file.sha256, file.size))
      const inm = { 'If-None-Match': viaNginx.headers.etag! }
      const [again, againDirect] = await Promise.all([send(nginx.origin, target, { headers: inm }), send(shim.shimOrigin, target, { headers: inm })])
      expect([again.status, againDirect.status], target).toEqual([304, 304])
    }
    // Only the direct requests reached the shim.
    expect(shim.shimRequests() - before).toBe(files.length * 2)
  })

  it("stamps every stored body with its content mtime, the mtime nginx's ETag is made of, in the release and in its archive", () => {
    const releaseDir = shim.ctx.release.dir
    const extracted = mkdtempSync(path.join(root, 'tree-'))
    const archive = readdirSync(path.join(releaseDir, 'public', 'mirror')).find((n) => n.endsWith('.tar.gz'))!
    execFileSync('tar', ['-xzf', path.join(releaseDir, 'public', 'mirror', archive), '-C', extracted])
    let checked = 0
    for (const file of listServedFiles(releaseDir)) {
      if (!file.sha256) continue
      const mtime = Math.floor(statSync(path.join(releaseDir, file.name)).mtimeMs / 1000)
      expect(mtime, file.name).toBe(contentMtime(file.sha256))
      if (!file.name.startsWith('public/api/')) continue
      expect(Math.floor(statSync(path.join(extracted, file.name)).mtimeMs / 1000), `archive ${file.name}`).toBe(contentMtime(file.sha256))
      checked++
    }
    expect(checked).toBeGreaterThan(1000)
  })

  it('swaps releases without a 404: nginx serves the new bytes within open_file_cache_valid, with the shim ETag', async () => {
    const file = path.join(data, 'projects', 'sodium', 'project.json')
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), summary: 'Swapped summary for the front test' }, null, 2))
    const statuses = new Map<number, number>()
    let building = true
    const hammer = (async () => {
      while (building) {
        const res = await send(nginx.origin, '/api/v1/projects/sodium')
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      }
    })()
    await build()
    await shim.ctx.reload()
    const deadline = Date.now() + 10_000
    let body = ''
    while (Date.now() < deadline && !body.includes('Swapped summary')) {
      body = (await send(nginx.origin, '/api/v1/projects/sodium')).body.toString()
      if (!body.includes('Swapped summary')) await new Promise((r) => setTimeout(r, 100))
    }
    building = false
    await hammer
    expect(body).toContain('Swapped summary')
    expect([...statuses.keys()]).toEqual([200])
    const [viaNginx, direct] = await Promise.all([send(nginx.origin, '/api/v1/projects/sodium'), send(shim.shimOrigin, '/api/v1/projects/sodium')])
    expect(viaNginx.headers.etag).toBe(direct.headers.etag)
    expect(viaNginx.body.equals(direct.body)).toBe(true)
  })
})

describe('the shim behind nginx', () => {
  it('sees the real client (X-Forwarded-For from a trusted nginx), and nginx answers 503 in the envelope when the shim is down', async () => {
    const limited = await startServer(dist, { trustedProxies: ['127.0.0.1'], rateLimit: 2 })
    const front = await startNginxFront({ ...limited.ctx.options, shim: limited.shimOrigin.slice('http://'.length) })
    try {
      const q = '/api/v1/projects?q=sodium'
      const remaining = async (localAddress: string, headers: Record<string, string> = {}): Promise<string | number> => {
        const res = await send(front.origin, q, { localAddress, headers })
        return res.status === 429 ? 429 : String(res.headers['x-ratelimit-remaining'])
      }
      expect(await remaining('127.0.0.21')).toBe('1')
      expect(await remaining('127.0.0.21')).toBe('0')
      const over = await send(front.origin, q, { localAddress: '127.0.0.21' })
      expect(over.status).toBe(429)
      expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1)
      expect(errorSchema.parse(JSON.parse(over.body.toString())).error.code).toBe('rate_limited')
      // Another client has its own budget; a forged X-Forwarded-For does not move the real one.
      expect(await remaining('127.0.0.22', { 'X-Forwarded-For': '127.0.0.21' })).toBe('1')
      // Static reads are nginx's: not counted by the shim, never limited by it.
      expect((await send(front.origin, '/api/v1/projects/sodium', { localAddress: '127.0.0.21' })).status).toBe(200)
      expect(front.config).toContain('X-Ratelimit-Limit "2"')
      expect(limited.serverErrors()).toBe(0)
      limited.server.closeAllConnections()
      await new Promise<void>((resolve) => limited.server.close(() => resolve()))
      const down = await send(front.origin, q)
      expect(down.status).toBe(503)
      expect(down.headers['retry-after']).toBe('5')
      const body = errorSchema.parse(JSON.parse(down.body.toString()))
      expect([body.error.code, body.error.requestId]).toEqual(['unavailable', down.headers['x-request-id']])
    } finally {
      await front.close()
      await limited.ctx.close()
    }
  })
})

describe('the generated configuration', () => {
  const options = { distDir: dist, shim: '127.0.0.1:3000', listen: '127.0.0.1:8080', rateLimit: 120, cacheScope: 'private', maxAge: 60, staleWhileRevalidate: 600 } as const

  it('is valid for nginx -t as a conf.d include and as a complete file, with and without static limiting', () => {
    for (const staticRateLimit of [0, 120]) {
      const include = renderFrontConfig({ ...options, staticRateLimit })
      const prefix = mkdtempSync(path.join(root, 'nginx-t-'))
      writeFileSync(path.join(prefix, 'front.conf'), include)
      writeFileSync(path.join(prefix, 'nginx.conf'), `pid ${prefix}/nginx.pid;\nerror_log ${prefix}/error.log;\nevents {}\nhttp {\n  include ${prefix}/front.conf;\n}\n`)
      execFileSync(NGINX, ['-t', '-q', '-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', path.join(prefix, 'nginx.conf')], { stdio: 'pipe' })
      writeFileSync(path.join(prefix, 'complete.conf'), renderFrontConfig({ ...options, staticRateLimit, completePrefix: prefix }))
      execFileSync(NGINX, ['-t', '-q', '-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', path.join(prefix, 'complete.conf')], { stdio: 'pipe' })
    }
  })

  it('refuses values that would inject configuration', () => {
    expect(() => renderFrontConfig({ ...options, distDir: '/srv/x; include /etc/passwd' })).toThrow(/distDir/)
    expect(() => renderFrontConfig({ ...options, shim: 'http://127.0.0.1:3000' })).toThrow(/shim/)
    expect(() => renderFrontConfig({ ...options, listen: '8080 default_server' })).toThrow(/listen/)
  })

  it('limits static reads per client when asked, with a 429 envelope', async () => {
    const server = await startServer(dist, { trustedProxies: ['127.0.0.1'] })
    const front = await startNginxFront({ ...server.ctx.options, shim: server.shimOrigin.slice('http://'.length), staticRateLimit: 3 })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) statuses.push((await send(front.origin, '/api/v1/types', { localAddress: '127.0.0.31' })).status)
      expect(statuses).toEqual([200, 200, 200, 429])
      const limited = await send(front.origin, '/api/v1/types', { localAddress: '127.0.0.31' })
      expect(limited.headers['retry-after']).toBe('1')
      const body = errorSchema.parse(JSON.parse(limited.body.toString()))
      expect([body.error.code, body.error.requestId]).toEqual(['rate_limited', limited.headers['x-request-id']])
      expect((await send(front.origin, '/api/v1/types', { localAddress: '127.0.0.32' })).status).toBe(200)
    } finally {
      await front.close()
      await server.close()
    }
  })
})
