/**
 * Node's limit: a bare node:http server answering the same release bytes from memory, with the
 * same ETag and Content-Type as the shim and a plain If-None-Match equality check — nothing else.
 * With `headers`, it also sends every other header line the shim sends on a static read (CORS,
 * the expose list, the three rate-limit headers, a request id, Cache-Control), with no work
 * behind them: the same response bytes as the shim, so the gap between the two is the shim's own
 * work (the limiter, its routing, the cache) and the gap to plain raw node is the contract's headers.
 * Usage: node .out/bench/raw-server.js -- <port> <map file of "url<TAB>release file" lines> [headers]
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import { createBody, type Body } from '../build/render/body.ts'
import { EXPOSED_HEADERS } from '../shim/respond.ts'

const [portArg, mapFile, mode] = process.argv.slice(2).filter((a) => a !== '--')
if (!portArg || !mapFile) throw new Error('usage: raw-server.ts <port> <map file> [headers]')
const contractHeaders = mode === 'headers'
/** As the shim under the benchmark's RATE_LIMIT of 1e9, with its default Cache-Control. */
const RATE_LIMIT = '1000000000'
const CACHE_CONTROL = 'private, max-age=60, stale-while-revalidate=600'
const common = (): string[] => [
  'Access-Control-Allow-Origin', '*',
  'Access-Control-Expose-Headers', EXPOSED_HEADERS,
  'X-Ratelimit-Limit', RATE_LIMIT,
  'X-Ratelimit-Remaining', '999999999',
  'X-Ratelimit-Reset', String(Math.ceil(Date.now() / 1000) + 60),
  'X-Request-Id', randomUUID(),
]

const bodies = new Map<string, Body>()
for (const line of readFileSync(mapFile, 'utf8').split('\n')) {
  const [url, file] = line.split('\t')
  if (url && file && !bodies.has(url)) bodies.set(url, createBody(readFileSync(file)))
}

const server = createServer((req, res) => {
  const body = bodies.get(req.url ?? '')
  if (!body) {
    res.writeHead(404, { 'Content-Length': 0 })
    res.end()
    return
  }
  if (contractHeaders) {
    const headers = common()
    headers.push('ETag', body.etag, 'Cache-Control', CACHE_CONTROL)
    if (req.headers['if-none-match'] === body.etag) {
      res.writeHead(304, headers)
      res.end()
      return
    }
    headers.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(body.bytes.length))
    res.writeHead(200, headers)
    res.end(body.bytes)
    return
  }
  if (req.headers['if-none-match'] === body.etag) {
    res.writeHead(304, { ETag: body.etag })
    res.end()
    return
  }
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.bytes.length, ETag: body.etag })
  res.end(body.bytes)
})
server.keepAliveTimeout = 65_000
server.listen(Number(portArg), '127.0.0.1', () => process.stdout.write(`raw server${contractHeaders ? ' (contract headers)' : ''}: ${bodies.size} bodies on ${portArg}\n`))
