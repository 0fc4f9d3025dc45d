/**
 * Node's limit: a bare node:http server answering the same release bytes from memory, with the
 * same ETag and Content-Type as the shim and a plain If-None-Match equality check — nothing else.
 * Usage: node .out/bench/raw-server.js -- <port> <map file of "url<TAB>release file" lines>
 */
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import { createBody, type Body } from '../build/render/body.ts'

const [portArg, mapFile] = process.argv.slice(2).filter((a) => a !== '--')
if (!portArg || !mapFile) throw new Error('usage: raw-server.ts <port> <map file>')

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
  if (req.headers['if-none-match'] === body.etag) {
    res.writeHead(304, { ETag: body.etag })
    res.end()
    return
  }
  res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.bytes.length, ETag: body.etag })
  res.end(body.bytes)
})
server.keepAliveTimeout = 65_000
server.listen(Number(portArg), '127.0.0.1', () => process.stdout.write(`raw server: ${bodies.size} bodies on ${portArg}\n`))
