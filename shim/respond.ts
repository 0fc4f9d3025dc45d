/**
 * Writing responses: the headers every response carries (CORS, expose list, rate limit, request
 * id), bodies with their ETag and conditional 304s, and the error envelope of SPEC.md §7.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { H3Event } from 'h3'
import type { Body } from '../build/render/body.ts'
import { contentEtag } from '../build/render/etag.ts'
import { JSON_CONTENT_TYPE } from '../build/static-paths.ts'

/** Headers a browser may read (none of them is CORS-safelisted). */
export const EXPOSED_HEADERS = 'ETag, Retry-After, X-Ratelimit-Limit, X-Ratelimit-Remaining, X-Ratelimit-Reset, X-Request-Id'
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS'
export const JSON_TYPE = JSON_CONTENT_TYPE

/** Per-request state kept on event.context. */
export interface RequestState {
  requestId: string
  /** Rate-limit headers computed for this request (set by the limiter). */
  rateHeaders: Record<string, string>
  /** The client's key (IPv4, or IPv6 /64), set once resolved. */
  clientKey: string
}

/** State of the request, created on first use. */
export function getRequestState(event: H3Event): RequestState {
  let state = event.context.catalog as RequestState | undefined
  if (!state) {
    state = { requestId: randomUUID(), rateHeaders: {}, clientKey: '' }
    event.context.catalog = state
  }
  return state
}

/** Sets the headers every response carries, whatever its status. */
export function setCommonHeaders(event: H3Event, rateLimit: number): void {
  const res = event.node.res
  const state = getRequestState(event)
  res.setHeader('Access-Control-Allow-Origin', '*')
  res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS)
  res.setHeader('X-Ratelimit-Limit', String(rateLimit))
  for (const [name, value] of Object.entries(state.rateHeaders)) res.setHeader(name, value)
  res.setHeader('X-Request-Id', state.requestId)
}

/**
 * Whether If-None-Match matches an ETag: `*`, a list, and weak comparison (`W/"x"` equals `"x"`),
 * as RFC 9110 §13.1.2 requires. Malformed values simply do not match.
 */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false
  // The common case (a client sending back the one ETag it got) without splitting the header.
  if (header === etag) return true
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag
  for (const raw of header.split(',')) {
    const tag = raw.trim()
    if (tag === '*') return true
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true
  }
  return false
}

/** Sends a body (200, or an empty 304 when If-None-Match matches; no body for HEAD). */
export function sendBody(event: H3Event, body: Body, cacheControl: string, contentType = JSON_TYPE): void {
  sendBodyParts(event, { etag: body.etag, length: body.bytes.length, parts: [body.bytes] }, cacheControl, contentType)
}

/** A body sent as the concatenation of its parts, copied into a pooled buffer as it is sent (sendBodyParts), never kept whole. */
export interface BodyParts {
  etag: string
  length: number
  /** Buffers, or a Splice of whole bodies into a text (shim/routes/version-files.ts). */
  parts: readonly Uint8Array[] | Splice
}

/**
 * Pieces of other bodies spliced into a text, as a body's parts: the text before piece `i` ends at
 * `ends[i]` of `between`, the rest of `between` comes after the last piece, and of each piece's
 * bytes the first `trimStart` and the last `trimEnd` are left out (a single lookup's
 * `{"data":<Version>}` gives its `<Version>`). Each piece is copied whole, so that the bytes left
 * out fall on the text around it, and that text is then copied over them (copyInto): no view is
 * made per piece. A view of the text before each piece and of each `<Version>`, 201 objects for
 * 100 hashes, each `set` in turn, took 68–88 µs an answer with the text's making, against 50–53
 * this way (bench/splice-copy.ts; bench/results/PROFILE.md, Session 54). So that a piece never
 * covers another, the text before each piece is at least `trimStart` bytes and the text after it
 * at least `trimEnd` (checked when made).
 */
export class Splice {
  readonly between: Buffer
  readonly ends: readonly number[]
  readonly pieces: readonly Uint8Array[]
  readonly trimStart: number
  readonly trimEnd: number
  constructor(between: Buffer, ends: readonly number[], pieces: readonly Uint8Array[], trimStart: number, trimEnd: number) {
    if (pieces.length !== ends.length) throw new Error(`a splice of ${pieces.length} pieces has ${ends.length} ends`)
    for (let i = 0, at = 0; i <= ends.length; i++) {
      const end = i < ends.length ? ends[i]! : between.length
      const piece = i < ends.length ? pieces[i]! : undefined
      if (end < at || (piece !== undefined && (end - at < trimStart || piece.length < trimStart + trimEnd)) || (i > 0 && end - at < trimEnd)) {
        throw new Error(`a splice's text around piece ${i} is shorter than the ${trimStart} and ${trimEnd} bytes trimmed off its pieces`)
      }
      at = end
    }
    this.between = between
    this.ends = ends
    this.pieces = pieces
    this.trimStart = trimStart
    this.trimEnd = trimEnd
  }

  /**
   * Writes the spliced bytes (`length` of them, the caller's sum) to the start of `out`, which has
   * room for `between` after them. The text is put there first, so that each of its segments is
   * then copied down with copyWithin, which makes no view, right after the piece that covered its
   * ends.
   */
  copyInto(out: Buffer, length: number): void {
    const { between, ends, pieces, trimStart, trimEnd } = this
    out.set(between, length)
    let at = 0
    let o = 0
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      const end = ends[i]!
      const start = o + end - at
      out.set(piece, start - trimStart)
      out.copyWithin(o, length + at, length + end)
      o = start + piece.length - trimStart - trimEnd
      at = end
    }
    out.copyWithin(o, length + at, length + between.length)
  }
}

/**
 * Wraps parts (e.g. slices of cached bodies) and their total `length` (the caller summed it as it
 * cut them) with an ETag derived from `identity` instead of from their bytes: pieces that, in turn,
 * determine the bytes, such as the text between the spliced bodies and each body's own content ETag
 * in order. The ETag keeps the one format (build/render/etag.ts: the first
 * bits of a SHA-256, and the total length), is strong, and changes whenever a part's ETag or the
 * text between parts does, that is whenever the bytes do (a changed part keeps its ETag with
 * probability about 2^-30, the rule's own odds). Hashing the identity (a few KB) rather than a
 * 100 KB answer was 13% of a bulk hash lookup's CPU (bench/results/PROFILE.md). Pieces rather than
 * one string: a string built by `+=` is a rope that hashing must first copy flat.
 */
export function createDerivedBodyParts({ parts, length }: { parts: BodyParts['parts']; length: number }, identity: readonly (string | Buffer)[]): BodyParts {
  const hash = createHash('sha256')
  for (const piece of identity) hash.update(piece)
  return { etag: contentEtag(hash.digest(), length), length, parts }
}

/** Sends body parts as sendBody sends a body: the same headers, the parts copied into one pooled buffer (ANSWER_BUFFER_BYTES) and written at once. */
export function sendBodyParts(event: H3Event, body: BodyParts, cacheControl: string, contentType = JSON_TYPE): void {
  const { req, res } = event.node
  res.setHeader('ETag', body.etag)
  res.setHeader('Cache-Control', cacheControl)
  if (matchesIfNoneMatch(req.headers['if-none-match'], body.etag)) {
    res.statusCode = 304
    res.end()
    return
  }
  res.statusCode = 200
  res.setHeader('Content-Type', contentType)
  res.setHeader('Content-Length', body.length)
  const parts = body.parts
  if (req.method === 'HEAD' || body.length === 0) {
    res.end()
    return
  }
  if (parts instanceof Splice) {
    const out = takeAnswerBuffer(body.length + parts.between.length)
    parts.copyInto(out, body.length)
    res.end(out.subarray(0, body.length), () => giveAnswerBuffer(out))
    return
  }
  if (parts.length === 1) {
    res.end(parts[0])
    return
  }
  const out = takeAnswerBuffer(body.length)
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  res.end(out.length === body.length ? out : out.subarray(0, body.length), () => giveAnswerBuffer(out))
}

/**
 * Bytes of each buffer of the pool that multi-part answers are copied into to be sent: a 100-hash
 * lookup's answer is about 106 KB (the bench's one-off lists: 100 versions of about 1 KB each, so a
 * few KB either way), with the text between its versions (about 7 KB) after it while a Splice is
 * copied. A larger answer gets a buffer of its own.
 *
 * Before, each part went out with its own `write` (201 for 100 hashes, each a chunk object in the
 * stream's buffer, one writev of 201 pieces): a one-off lookup at the large catalog took about 13%
 * less CPU with one copy into a buffer and one `end` (alternated ten rounds, bench/results/PROFILE.md,
 * Session 21). A buffer made per answer would not do: at 800 requests/s those 100 KB buffers held
 * about 60 MB of RSS until the collector freed them. Taken from the pool, a buffer goes back to it
 * once the response has been handed to the kernel (`end`'s callback: the stream's last write has
 * completed), so the pool holds about as many buffers as answers in flight, never more than
 * ANSWER_BUFFERS_KEPT.
 */
const ANSWER_BUFFER_BYTES = 128 * 1024
/** Buffers the pool keeps at most (8 MB). */
const ANSWER_BUFFERS_KEPT = 64
const answerBuffers: Buffer[] = []

function takeAnswerBuffer(length: number): Buffer {
  if (length > ANSWER_BUFFER_BYTES) return Buffer.allocUnsafeSlow(length)
  return answerBuffers.pop() ?? Buffer.allocUnsafeSlow(ANSWER_BUFFER_BYTES)
}

/** Takes back a buffer whose response was handed to the kernel: nothing reads its bytes any more. */
function giveAnswerBuffer(buffer: Buffer): void {
  if (buffer.length === ANSWER_BUFFER_BYTES && answerBuffers.length < ANSWER_BUFFERS_KEPT) answerBuffers.push(buffer)
}

/**
 * The hot path of static reads: sends a cached body with the common headers, its ETag and
 * Cache-Control in ONE writeHead of a flat header list — the same headers, in the same order, as
 * setCommonHeaders + sendBody, without a setHeader (name check, lowercasing, map insert) per header.
 * Measured on the Zipf mix: bench/results/serve.md.
 */
export function sendBodyWithCommonHeaders(event: H3Event, body: Body, cacheControl: string, rateLimit: string): void {
  const state = getRequestState(event)
  const headers: string[] = ['Access-Control-Allow-Origin', '*', 'Access-Control-Expose-Headers', EXPOSED_HEADERS]
  const rate = state.rateHeaders
  if (rate['X-Ratelimit-Limit'] === undefined) headers.push('X-Ratelimit-Limit', rateLimit)
  for (const name in rate) headers.push(name, rate[name]!)
  headers.push('X-Request-Id', state.requestId)
  writeBodyWithHeaders(event.node.req, event.node.res, headers, body, cacheControl)
}

/**
 * Writes a body after the common headers given as a flat list (ending with X-Request-Id): ETag and
 * Cache-Control, then a 304 when If-None-Match matches, else 200 with Content-Type and
 * Content-Length (no body for HEAD). Shared by sendBodyWithCommonHeaders and the listener's fast
 * path (static-fast-path.ts), so both write the same bytes. Takes over (appends to) `headers`.
 */
export function writeBodyWithHeaders(req: IncomingMessage, res: ServerResponse, headers: string[], body: Body, cacheControl: string): void {
  headers.push('ETag', body.etag, 'Cache-Control', cacheControl)
  if (matchesIfNoneMatch(req.headers['if-none-match'], body.etag)) {
    res.writeHead(304, headers)
    res.end()
    return
  }
  headers.push('Content-Type', JSON_TYPE, 'Content-Length', String(body.bytes.length))
  res.writeHead(200, headers)
  res.end(req.method === 'HEAD' ? undefined : body.bytes)
}

/** One problem of a rejected request. */
export interface ErrorDetail {
  path: string
  message: string
}

/** Writes the error envelope; the request id is the one sent as X-Request-Id. */
export function sendErrorEnvelope(
  event: H3Event,
  status: number,
  code: string,
  message: string,
  details?: ErrorDetail[],
): void {
  const res = event.node.res
  const state = getRequestState(event)
  const error: Record<string, unknown> = { code, message }
  if (details && details.length > 0) error.details = details
  error.requestId = state.requestId
  const bytes = Buffer.from(JSON.stringify({ error }))
  res.statusCode = status
  res.setHeader('Content-Type', JSON_TYPE)
  res.setHeader('Cache-Control', 'no-store')
  res.setHeader('Content-Length', bytes.length)
  res.end(event.node.req.method === 'HEAD' ? undefined : bytes)
}
