/**
 * Issue "Foundation": the sample catalog builds into a release that the shim serves with the
 * contract's headers, conditional requests, errors and path safety.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { dataEnvelope, errorSchema, projectDetailSchema, versionSchema } from '../build/schema/api.ts'
import { createShimListener } from '../shim/app.ts'
import { configureServer } from '../shim/server.ts'
import { json, startServer, type TestServer } from './harness.ts'

interface SampleProject {
  id: string
  slug: string
  status: string
}

function readSampleProjects(): SampleProject[] {
  return readdirSync('data/projects').map((folder) => JSON.parse(readFileSync(path.join('data/projects', folder, 'project.json'), 'utf8')) as SampleProject)
}

/**
 * Sends raw bytes to a server (the shim itself: nginx in front answers malformed requests on its own)
 * and reads until it closes; `afterFirstAnswer` is written once the first answer has arrived.
 */
function exchange(origin: string, bytes: string, afterFirstAnswer?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const url = new URL(origin)
    const socket = connect(Number(url.port), url.hostname, () => socket.write(bytes))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      text += chunk
      if (afterFirstAnswer && text.endsWith('}')) socket.write(afterFirstAnswer, () => (afterFirstAnswer = undefined))
    })
    socket.on('end', () => resolve(text))
    socket.on('error', reject)
    socket.setTimeout(10_000, () => reject(new Error(`no answer to ${JSON.stringify(bytes.slice(0, 60))}`)))
  })
}

/** Status line, lowercase headers and body of a raw HTTP/1.1 answer. */
function parseRaw(text: string): { statusLine: string; headers: Map<string, string>; body: string } {
  const [head, body] = text.split('\r\n\r\n') as [string, string]
  const lines = head.split('\r\n')
  const headers = new Map(lines.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
  return { statusLine: lines[0]!, headers, body }
}

let server: TestServer
const projects = readSampleProjects()
const visible = projects.filter((p) => p.status === 'published')
const invisible = projects.filter((p) => p.status !== 'published')

beforeAll(async () => {
  server = await startServer(inject('distDir'))
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

describe('static release served by the shim', () => {
  it('answers every visible project by slug and by id with the same ProjectDetail body', async () => {
    expect(visible.length).toBeGreaterThanOrEqual(35)
    for (const p of visible) {
      const bySlug = await server.get(`/projects/${p.slug}`)
      const byId = await server.get(`/projects/${p.id}`)
      expect(bySlug.status, p.slug).toBe(200)
      expect(byId.status, p.id).toBe(200)
      expect(bySlug.headers.get('content-type')).toBe('application/json; charset=utf-8')
      const a = await bySlug.text()
      expect(await byId.text()).toBe(a)
      const detail = dataEnvelope(projectDetailSchema).parse(JSON.parse(a)).data
      expect(detail.id).toBe(p.id)
      expect(detail.slug).toBe(p.slug)
      expect(detail.status).toBe('published')
      expect(detail.members[0]?.role).toBe('owner')
      expect(detail.members[0]?.user.id).toBe(detail.author.id)
      if (detail.currentVersion) expect(detail.currentVersion.projectId).toBe(p.id)
    }
  })

  it('treats every invisible project as absent, with the error envelope', async () => {
    expect(new Set(invisible.map((p) => p.status))).toEqual(new Set(['draft', 'private', 'archived', 'withheld']))
    for (const p of invisible) {
      for (const key of [p.slug, p.id]) {
        for (const suffix of ['', '/versions', '/files', '/dependencies']) {
          const res = await server.get(`/projects/${key}${suffix}`)
          expect(res.status, `${key}${suffix}`).toBe(404)
          const body = errorSchema.parse(await json(res))
          expect(body.error.code).toBe('not_found')
          expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
        }
      }
    }
    const search = await json(await server.get('/projects'))
    const listed = new Set((search.data as { id: string }[]).map((p) => p.id))
    for (const p of invisible) expect(listed.has(p.id)).toBe(false)
  })

  it('finds the version containing a blob by its SHA-1 and SHA-256', async () => {
    const detail = (await json(await server.get('/projects/sodium'))).data
    const file = detail.currentVersion.files[0]
    for (const hash of [file.sha1, file.sha256]) {
      const res = await server.get(`/version-files/${hash}`)
      expect(res.status).toBe(200)
      const version = dataEnvelope(versionSchema).parse(await json(res)).data
      expect(version.files.some((f) => f.sha1 === file.sha1 && f.sha256 === file.sha256)).toBe(true)
      expect(version.projectId).toBe(detail.id)
    }
  })

  it('serves the blob bytes content-addressed and immutable, with hashes that are true', async () => {
    const detail = (await json(await server.get('/projects/sodium'))).data
    const file = detail.currentVersion.files[0]
    const res = await server.get(`/objects/${file.sha256}/${encodeURIComponent(file.filename)}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const bytes = Buffer.from(await res.arrayBuffer())
    expect(bytes.length).toBe(file.size)
    const { createHash } = await import('node:crypto')
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256)
    expect(createHash('sha1').update(bytes).digest('hex')).toBe(file.sha1)
  })
})

describe('HTTP rules on static responses', () => {
  it('sends ETag, Cache-Control, CORS, expose list, rate-limit announcement and a request id', async () => {
    const res = await server.get('/projects/sodium')
    expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/)
    expect(res.headers.get('cache-control')).toMatch(/max-age=\d+, stale-while-revalidate=\d+/)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('vary')).toBeNull()
    const exposed = res.headers.get('access-control-expose-headers')!.toLowerCase()
    for (const h of ['etag', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) expect(exposed).toContain(h)
    expect(res.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/)
    expect(res.headers.get('x-request-id')).toBeTruthy()
  })

  it('answers If-None-Match with an empty 304 (exact, weak, list, star) and 200 otherwise', async () => {
    const first = await server.get('/projects/sodium')
    const etag = first.headers.get('etag')!
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
      const res = await server.get('/projects/sodium', { headers: { 'If-None-Match': inm } })
      expect(res.status, inm).toBe(304)
      expect(await res.text()).toBe('')
      expect(res.headers.get('etag')).toBe(etag)
      expect(res.headers.get('cache-control')).toBe(first.headers.get('cache-control'))
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
    }
    for (const inm of ['"nope"', 'abc', '"unbalanced', ','.repeat(8000)]) {
      const res = await server.get('/projects/sodium', { headers: { 'If-None-Match': inm, 'If-Modified-Since': 'Wed, 01 Jan 2100 00:00:00 GMT' } })
      expect(res.status).toBe(200)
      expect((await res.text()).length).toBeGreaterThan(100)
    }
  })

  it('answers HEAD like GET without a body', async () => {
    const get = await server.get('/projects/sodium')
    const head = await server.get('/projects/sodium', { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('etag')).toBe(get.headers.get('etag'))
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'))
    expect(await head.text()).toBe('')
  })

  it('rejects other methods with 405, Allow and the envelope', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await server.get('/projects/sodium', { method })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      const body = errorSchema.parse(await json(res))
      expect(body.error.code).toBe('method_not_allowed')
    }
  })

  it('answers what never reaches the app (CONNECT, an oversized or malformed request) with the envelope and common headers, then closes', async () => {
    const sodium = 'GET /api/v1/projects/sodium HTTP/1.1\r\nHost: x\r\n\r\n'
    const cases: [string, string, number, string][] = [
      ['CONNECT', 'CONNECT /api/v1/search HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'method_not_allowed'],
      ['a 17 KB request target', `GET /api/v1/projects/${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers_too_large'],
      ['a header block over 16 KiB', `GET /api/v1/projects/sodium HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(17_000)}\r\n\r\n`, 431, 'headers_too_large'],
      ['Content-Length "1 2"', 'GET /api/v1/projects/sodium HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n', 400, 'bad_request'],
      ['chunked and Content-Length', 'GET /api/v1/projects/sodium HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n', 400, 'bad_request'],
      ['a bad request after a good one on the same connection', sodium, 400, 'bad_request'],
    ]
    for (const [name, bytes, status, code] of cases) {
      const second = name.includes('after a good one') ? 'GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n' : undefined
      let text = await exchange(server.shimOrigin, bytes, second)
      if (second) {
        expect(text.startsWith('HTTP/1.1 200 '), name).toBe(true)
        text = text.slice(text.indexOf('HTTP/1.1 ', 10))
      }
      const { statusLine, headers, body } = parseRaw(text)
      expect(statusLine, name).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
      expect(headers.get('access-control-allow-origin'), name).toBe('*')
      expect(headers.get('access-control-expose-headers'), name).toContain('X-Request-Id')
      expect(headers.get('x-ratelimit-limit'), name).toBe(String(server.ctx.options.rateLimit))
      expect(headers.get('cache-control'), name).toBe('no-store')
      expect(headers.get('connection'), name).toBe('close')
      expect(Number(headers.get('content-length')), name).toBe(Buffer.byteLength(body))
      const envelope = errorSchema.parse(JSON.parse(body))
      expect(envelope.error.code, name).toBe(code)
      expect(envelope.error.requestId, name).toBe(headers.get('x-request-id'))
      if (status === 405) expect(headers.get('allow')).toBe('GET, HEAD, OPTIONS')
    }
    expect(server.serverErrors()).toBe(0)
  })

  it('drops a client that sends its headers a byte at a time (slowloris) with a 408 envelope once headersTimeout passes', async () => {
    // The shim's own settings, with timeouts short enough for a test (the CLI's: 15 s and 30 s).
    const slow = createServer({ connectionsCheckingInterval: 100 }, createShimListener(server.ctx))
    configureServer(slow, 7)
    slow.headersTimeout = 600
    slow.requestTimeout = 1_200
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    try {
      const started = Date.now()
      const url = new URL(`http://127.0.0.1:${(slow.address() as AddressInfo).port}`)
      const text = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname, () => socket.write('GET /api/v1/projects/sodium HTTP/1.1\r\nHost: x\r\nX-Slow: '))
        const drip = setInterval(() => socket.writable && socket.write('a'), 100)
        let received = ''
        socket.setEncoding('latin1')
        socket.on('data', (chunk: string) => (received += chunk))
        socket.on('close', () => (clearInterval(drip), resolve(received)))
        socket.on('error', () => {})
        setTimeout(() => (clearInterval(drip), socket.destroy(), reject(new Error('the slow client was not dropped'))), 5_000)
      })
      const elapsed = Date.now() - started
      const { statusLine, headers, body } = parseRaw(text)
      expect(statusLine).toBe('HTTP/1.1 408 Request Timeout')
      expect(headers.get('access-control-allow-origin')).toBe('*')
      expect(headers.get('x-ratelimit-limit')).toBe('7')
      expect(errorSchema.parse(JSON.parse(body)).error).toMatchObject({ code: 'request_timeout', requestId: headers.get('x-request-id') })
      expect(elapsed).toBeGreaterThanOrEqual(500)
      expect(elapsed).toBeLessThan(3_000)
    } finally {
      slow.closeAllConnections()
      await new Promise<void>((resolve) => slow.close(() => resolve()))
    }
  })

  it('answers a CORS preflight that asks for If-None-Match', async () => {
    const res = await server.get('/projects/sodium', {
      method: 'OPTIONS',
      headers: { Origin: 'https://launcher.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'if-none-match' },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-allow-methods')).toContain('GET')
    expect(res.headers.get('access-control-allow-headers')!.toLowerCase()).toContain('if-none-match')
    expect(Number(res.headers.get('access-control-max-age'))).toBeLessThanOrEqual(7200)
  })

  it('never reads outside the tree: traversal, encoded dots and backslashes are not found', async () => {
    const attempts = [
      '/api/v1/../../etc/passwd', '/api/v1/%2e%2e/%2e%2e/catalog.sqlite', '/api/v1/%252e%252e/x', '/api/v1/..%5c..%5ccatalog.sqlite',
      '/api/v1/.%2e/release', '/api/v1/projects%2Fsodium', '/objects/../catalog.sqlite', '/objects/%2e%2e/%2e%2e/catalog.sqlite',
      '/api/v1/projects/sodium\\..\\..\\x', '//api/v1/projects/sodium', '/catalog.sqlite', '/release.json', '/manifest.tsv',
    ]
    for (const p of attempts) {
      const res = await fetch(server.origin + p)
      expect([400, 404], p).toContain(res.status)
      const body = await res.text()
      expect(body, p).not.toContain('SQLite format')
      if (res.status !== 400 || body.startsWith('{')) expect(errorSchema.safeParse(JSON.parse(body)).success, p).toBe(true)
    }
  })

  it('answers NUL bytes and malformed escapes with 400 in the envelope', async () => {
    for (const p of ['/api/v1/projects/sod%00ium', '/api/v1/projects/%E0%A4%A', '/api/v1/projects/foo%']) {
      const res = await fetch(server.origin + p)
      expect(res.status, p).toBe(400)
      const body = errorSchema.parse(await res.json())
      expect(body.error.code).toBe('bad_request')
      expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
    }
  })

  it('answers unknown paths with 404 in the envelope', async () => {
    for (const p of ['/api/v1/nothing', '/api/v2/projects', '/', '/api/v1/projects/sodium/nothing']) {
      const res = await fetch(server.origin + p)
      expect(res.status, p).toBe(404)
      const body = errorSchema.parse(await res.json())
      expect(body.error.code).toBe('not_found')
    }
  })
})
