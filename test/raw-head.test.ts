/**
 * Issue 7 (static reads ≥ 0.8× raw node): the fast path hands Node a response head it built as one
 * string (shim/raw-head.ts), relying on ServerResponse internals. These tests pin that: on the wire,
 * byte for byte, the raw head is what writeHead writes for the same lines, on kept-alive sockets with
 * and without a per-socket request cap; every case Node would treat differently (Connection: close,
 * HTTP/1.0, the socket's last allowed request) is refused; and the shim's fast path, which uses it,
 * still answers exactly as the app path does.
 */
import { connect, type Socket } from 'node:net'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { setRawHead } from '../shim/raw-head.ts'
import { startServer, type TestServer } from './harness.ts'

/** One response read off a socket: the head's bytes (to the blank line) and the body. */
interface WireResponse {
  head: string
  body: Buffer
}

/** A client socket that sends raw requests and reads one whole response at a time. */
function openWire(port: number): Promise<{ send: (request: string, hasBody?: boolean) => Promise<WireResponse>; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let buffered = Buffer.alloc(0)
    let waiting: (() => void) | null = null
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      waiting?.()
    })
    socket.on('end', () => waiting?.())
    const send = async (request: string, hasBody = true): Promise<WireResponse> => {
      socket.write(request)
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n')
        if (end >= 0) {
          const head = buffered.subarray(0, end + 4).toString('latin1')
          const length = hasBody ? Number(/\r\ncontent-length: (\d+)\r\n/i.exec(head)?.[1] ?? 0) : 0
          if (buffered.length >= end + 4 + length) {
            const body = buffered.subarray(end + 4, end + 4 + length)
            buffered = buffered.subarray(end + 4 + length)
            return { head, body: Buffer.from(body) }
          }
        }
        if (socket.readableEnded) throw new Error(`connection closed with ${buffered.length} bytes unread`)
        await new Promise<void>((r) => (waiting = r))
        waiting = null
      }
    }
    socket.once('connect', () => resolve({ send, socket }))
    socket.once('error', reject)
  })
}

const get = (path: string, extra = '', method = 'GET', version = '1.1'): string => `${method} ${path} HTTP/${version}\r\nHost: test\r\n${extra}\r\n`
/** The head without its Date line (two requests may straddle a second). */
const withoutDate = (head: string): string => head.replace(/\r\nDate: [^\r]+/, '\r\nDate: -')

const BODY = Buffer.from('{"data":{"id":"abc","name":"Ünïcode ✓"}}')
const LINES = 'Access-Control-Allow-Origin: *\r\nX-Request-Id: 0b8f2f7e-1f7c-4d8e-9a7e-3f7c2a9d1e10\r\nETag: "abc-29"\r\nCache-Control: private, max-age=60\r\n'
const HEADERS = ['Access-Control-Allow-Origin', '*', 'X-Request-Id', '0b8f2f7e-1f7c-4d8e-9a7e-3f7c2a9d1e10', 'ETag', '"abc-29"', 'Cache-Control', 'private, max-age=60']

/**
 * A bare node:http server: /head/<status> answers through writeHead, /raw/<status> through
 * setRawHead with the same lines (falling back to writeHead when it refuses, as the fast path does,
 * and saying which in X-Used — added after the comparison's lines, on both routes).
 */
function startBare(maxRequestsPerSocket: number): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const [, route, code] = (req.url ?? '').split('/')
    const status = code === '304' ? 304 : 200
    const typed = status === 200 ? 'Content-Type: application/json\r\n' : ''
    const used = route === 'raw' && setRawHead(res, status, `${LINES}${typed}X-Used: raw\r\n`, BODY.length)
    if (!used) {
      const headers = [...HEADERS]
      if (status === 200) headers.push('Content-Type', 'application/json')
      headers.push('X-Used', route === 'raw' ? 'raw' : 'writeHead')
      if (status === 200) headers.push('Content-Length', String(BODY.length))
      res.writeHead(status, headers)
    }
    res.end(status === 200 && req.method !== 'HEAD' ? BODY : undefined)
    if (route === 'raw' && !used) fallbacks++
  })
  server.keepAliveTimeout = 65_000
  server.maxRequestsPerSocket = maxRequestsPerSocket
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}
let fallbacks = 0

describe('raw head against writeHead, byte for byte', () => {
  let plain: Server
  let capped: Server
  beforeAll(async () => {
    plain = await startBare(0)
    capped = await startBare(4)
  })
  afterAll(() => {
    for (const s of [plain, capped]) {
      s.closeAllConnections()
      s.close()
    }
  })
  const portOf = (s: Server): number => (s.address() as AddressInfo).port
  const cases: [string, string, string, boolean][] = [
    ['200 GET', 'GET', '200', true],
    ['200 HEAD', 'HEAD', '200', false],
    ['304 GET', 'GET', '304', false],
  ]

  it.each(cases)('%s on a kept-alive socket', async (_name, method, status, hasBody) => {
    const wire = await openWire(portOf(plain))
    const before = fallbacks
    const expected = await wire.send(get(`/head/${status}`, '', method), hasBody)
    const actual = await wire.send(get(`/raw/${status}`, '', method), hasBody)
    expect(fallbacks).toBe(before)
    expect(withoutDate(actual.head).replace('X-Used: raw', 'X-Used: writeHead')).toBe(withoutDate(expected.head))
    expect(actual.head).toMatch(/\r\nConnection: keep-alive\r\nKeep-Alive: timeout=65\r\n\r\n$/)
    expect(actual.body.equals(expected.body)).toBe(true)
    if (hasBody) expect(actual.body.equals(BODY)).toBe(true)
    // The connection is still usable after a raw head: a third request on it is answered.
    const again = await wire.send(get(`/raw/${status}`, '', method), hasBody)
    expect(withoutDate(again.head)).toBe(withoutDate(actual.head))
    wire.socket.destroy()
  })

  it('writes the per-socket cap as writeHead does and refuses the last request', async () => {
    const wire = await openWire(portOf(capped))
    const before = fallbacks
    const expected = await wire.send(get('/head/200'))
    const first = await wire.send(get('/raw/200'))
    expect(first.head).toContain('\r\nKeep-Alive: timeout=65, max=4\r\n')
    expect(withoutDate(first.head).replace('X-Used: raw', 'X-Used: writeHead')).toBe(withoutDate(expected.head))
    await wire.send(get('/raw/200'))
    expect(fallbacks).toBe(before)
    // The 4th request is the socket's last: Node closes it, so the raw head must not be used.
    const last = await wire.send(get('/raw/200'))
    expect(fallbacks).toBe(before + 1)
    expect(last.head).toContain('\r\nConnection: close\r\n')
    expect(last.body.equals(BODY)).toBe(true)
    wire.socket.destroy()
  })

  it.each([
    ['Connection: close', get('/raw/200', 'Connection: close\r\n')],
    ['HTTP/1.0', get('/raw/200', '', 'GET', '1.0')],
  ])('refuses a request Node answers differently (%s)', async (_name, request) => {
    const wire = await openWire(portOf(plain))
    const before = fallbacks
    const res = await wire.send(request)
    expect(fallbacks).toBe(before + 1)
    expect(res.head).not.toContain('Keep-Alive')
    expect(res.body.equals(BODY)).toBe(true)
    wire.socket.destroy()
  })
})

describe('the shim fast path on a kept-alive socket', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer(inject('distDir'))
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })
  /** The head with the values that differ per request blanked. */
  const comparable = (head: string): string =>
    withoutDate(head)
      .replace(/\r\nX-Request-Id: [0-9a-f-]{36}/, '\r\nX-Request-Id: -')
      .replace(/\r\nX-Ratelimit-Remaining: \d+/, '\r\nX-Ratelimit-Remaining: -')

  it.each([
    ['GET', '', true],
    ['HEAD', '', false],
    ['GET', 'If-None-Match: *\r\n', false],
  ])('answers %s %s with the app path\'s exact head and body', async (method, extra, hasBody) => {
    const path = '/api/v1/projects/sodium'
    const wire = await openWire(Number(new URL(server.shimOrigin).port))
    server.ctx.cache.clear()
    const fromApp = await wire.send(get(path, extra, method), hasBody)
    expect(server.ctx.cache.get?.(path)).toBeDefined()
    const fromFastPath = await wire.send(get(path, extra, method), hasBody)
    expect(comparable(fromFastPath.head)).toBe(comparable(fromApp.head))
    expect(fromFastPath.head).toMatch(extra ? /^HTTP\/1\.1 304 Not Modified\r\n/ : /^HTTP\/1\.1 200 OK\r\n/)
    expect(fromFastPath.head).toMatch(/\r\nConnection: keep-alive\r\nKeep-Alive: timeout=65\r\n\r\n$/)
    expect(fromFastPath.body.equals(fromApp.body)).toBe(true)
    if (hasBody) expect(JSON.parse(fromFastPath.body.toString('utf8')).data.slug).toBe('sodium')
    wire.socket.destroy()
  })

  it('answers pipelined requests in order, each with its own head and body', async () => {
    const wire = await openWire(Number(new URL(server.shimOrigin).port))
    const paths = ['/api/v1/projects/sodium', '/api/v1/categories', '/api/v1/projects/sodium']
    for (const p of paths) await wire.send(get(p))
    const answers: WireResponse[] = []
    // All three requests in one write: Node queues the later responses until the earlier ones finish.
    answers.push(await wire.send(paths.map((p) => get(p)).join('')))
    answers.push(await wire.send(''))
    answers.push(await wire.send(''))
    expect(JSON.parse(answers[0]!.body.toString('utf8')).data.slug).toBe('sodium')
    expect(Array.isArray(JSON.parse(answers[1]!.body.toString('utf8')).data)).toBe(true)
    expect(answers[2]!.body.equals(answers[0]!.body)).toBe(true)
    for (const a of answers) expect(a.head).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\nConnection: keep-alive\r\n/)
    expect(new Set(answers.map((a) => /X-Request-Id: (\S+)/.exec(a.head)?.[1])).size).toBe(3)
    wire.socket.destroy()
  })
})
