/**
 * The static fast path's response head as one string. `res.writeHead(status, headers)` validates
 * every header name and value with two regexes, lowercases names to look for the ones it manages,
 * and concatenates; on a static read with the contract's twelve header lines that was about 2 µs of
 * a 20 µs request (bench/results/PROFILE.md, session 4). Here the lines are concatenated from values
 * the caller made itself, of shapes that cannot hold a character Node refuses (numbers, a UUID, a
 * content ETag, Cache-Control from an enum and integers), and
 * the head is handed to the ServerResponse exactly as `_storeHeader` would leave it: `_header` set,
 * `_headerSent` false; `res.end(bytes)` then sends head and body in one corked write, as before.
 *
 * These are ServerResponse internals (unchanged from Node 12 to 24). Only the plain case is taken,
 * where Node itself would add nothing but Date, `Connection: keep-alive` and Keep-Alive; anything
 * else (HTTP/1.0, `Connection: close`, the last request a socket may serve, Expect) returns false and
 * the caller writes the head through writeHead. test/raw-head.test.ts compares the bytes on the wire
 * with writeHead's, so a Node whose internals differ fails the suite instead of serving bad heads.
 */
import { STATUS_CODES, type ServerResponse } from 'node:http'

/** The ServerResponse fields `writeHead`/`_storeHeader` read or set for a head like ours. */
interface ResponseInternals {
  _header: string | null
  _headerSent: boolean
  _hasBody: boolean
  _contentLength: number | null
  _removedConnection: boolean
  _defaultKeepAlive: boolean
  _keepAliveTimeout: number
  _maxRequestsPerSocket: number
  _expect_continue: boolean
  maxRequestsOnConnectionReached: boolean
  useChunkedEncodingByDefault: boolean
  shouldKeepAlive: boolean
  sendDate: boolean
  statusMessage: string
}

let dateSecond = -1
let dateLine = ''
let keepAliveKey = -1
let keepAliveLines = ''

/** `Date: …` for the current second, as Node's own cached utcDate() gives it. */
function currentDateLine(): string {
  const second = Math.floor(Date.now() / 1000)
  if (second !== dateSecond) {
    dateSecond = second
    dateLine = `Date: ${new Date(second * 1000).toUTCString()}\r\n`
  }
  return dateLine
}

/** The connection lines `_storeHeader` writes on a kept-alive response of this server. */
function connectionLines(timeoutMs: number, maxRequests: number): string {
  const key = timeoutMs * 65536 + (maxRequests | 0)
  if (key !== keepAliveKey) {
    const seconds = Math.floor(timeoutMs / 1000)
    const max = ~~maxRequests > 0 ? `, max=${maxRequests}` : ''
    keepAliveKey = key
    keepAliveLines = timeoutMs ? `Connection: keep-alive\r\nKeep-Alive: timeout=${seconds}${max}\r\n` : 'Connection: keep-alive\r\n'
  }
  return keepAliveLines
}

/**
 * Sets the head of a 200 (with Content-Length `length`) or 304 on `res`, whose own headers are
 * `lines` (each `Name: value\r\n`, in order); the caller then calls `res.end(bytes)` or `res.end()`.
 * False, with `res` untouched, when the response is not the plain kept-alive case.
 */
export function setRawHead(res: ServerResponse, status: 200 | 304, lines: string, length: number): boolean {
  const r = res as unknown as ResponseInternals
  if (
    r._header !== null ||
    r.shouldKeepAlive !== true ||
    r.sendDate !== true ||
    r.useChunkedEncodingByDefault !== true ||
    r.maxRequestsOnConnectionReached === true ||
    r._removedConnection !== false ||
    r._defaultKeepAlive !== true ||
    r._expect_continue === true ||
    res.statusMessage
  ) {
    return false
  }
  res.statusCode = status
  r.statusMessage = STATUS_CODES[status]!
  if (status === 304) {
    r._hasBody = false
  } else {
    r._contentLength = length
  }
  r._header = `HTTP/1.1 ${status} ${r.statusMessage}\r\n${lines}${status === 200 ? `Content-Length: ${length}\r\n` : ''}${currentDateLine()}${connectionLines(r._keepAliveTimeout, r._maxRequestsPerSocket)}\r\n`
  r._headerSent = false
  return true
}
