/**
 * The static fast path, in the node listener before h3: a GET/HEAD of a plain pre-rendered path
 * whose body is in memory, from a client the in-memory limiter lets through, is answered here with
 * exactly the headers and bytes the h3 app would send (writeBodyWithHeaders): the head is built as
 * one string (raw-head.ts) where Node would add only Date and keep-alive, else through writeHead. It
 * skips what h3 does per request (an event object, path decoding, a chain of awaits): with the
 * limiter's promise, about 2 µs of JavaScript per static read in the profile
 * (bench/results/PROFILE.md). Everything else goes to the app: misses, other methods, query
 * strings, a limiter without a synchronous answer, refusals.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { readClientKey } from './client-ip.ts'
import type { ShimContext } from './context.ts'
import type { RateDecision } from './rate-limit.ts'
import { setRawHead } from './raw-head.ts'
import { EXPOSED_HEADERS, JSON_TYPE, matchesIfNoneMatch, writeBodyWithHeaders } from './respond.ts'

/**
 * A request target that maps to a file without parseRequestTarget: /api/v1/ and one or more
 * segments of safe characters, none starting with a dot (so never `.` or `..`), at most 255 long,
 * no `%` (nothing to decode), no `?`, no trailing slash. Such a path decodes to itself and passes
 * isSafePath, so the file is exactly the one the general path reads (apiFile: the release's
 * public/api/v1/<path>.json).
 */
export const PLAIN_API_PATH = /^\/api\/v1(?:\/[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,254})+$/

/** The head's first lines, the same on every response. */
const CORS_LINES = `Access-Control-Allow-Origin: *\r\nAccess-Control-Expose-Headers: ${EXPOSED_HEADERS}\r\n`
const JSON_TYPE_LINE = `Content-Type: ${JSON_TYPE}\r\n`

/** Decisions already taken by the fast path for requests it handed to the app (refusals): the app must not count them twice. */
const decided = new WeakMap<IncomingMessage, RateDecision>()

/** The decision the fast path took for this request, if any (removed: it is used once). */
export function takeFastPathDecision(req: IncomingMessage): RateDecision | undefined {
  const decision = decided.get(req)
  if (decision !== undefined) decided.delete(req)
  return decision
}

/** Answers the request when it is a static hit the client may have; false hands it to the app untouched. */
export function serveStaticFastPath(ctx: ShimContext, cacheControl: string, req: IncomingMessage, res: ServerResponse): boolean {
  const method = req.method
  if (method !== 'GET' && method !== 'HEAD') return false
  const url = req.url
  if (url === undefined || !PLAIN_API_PATH.test(url)) return false
  const { cache, limiter } = ctx
  if (cache.get === undefined || limiter.consumeNow === undefined) return false
  const body = cache.get(url)
  if (body === undefined) return false
  const decision = limiter.consumeNow(readClientKey(req, ctx.trustedProxies))
  if (!decision.allowed) {
    decided.set(req, decision)
    return false
  }
  const requestId = randomUUID()
  const matched = matchesIfNoneMatch(req.headers['if-none-match'], body.etag)
  // The order of setCommonHeaders (CORS, rate limit, request id), then writeBodyWithHeaders's.
  const lines =
    `${CORS_LINES}X-Ratelimit-Limit: ${decision.limit}\r\nX-Ratelimit-Remaining: ${decision.remaining}\r\nX-Ratelimit-Reset: ${decision.resetEpochSeconds}\r\n` +
    `X-Request-Id: ${requestId}\r\nETag: ${body.etag}\r\nCache-Control: ${cacheControl}\r\n`
  // Every value is made here or is config built from an enum and integers (mutableCacheControl):
  // none can hold a character writeHead would refuse.
  if (matched && setRawHead(res, 304, lines, 0)) {
    res.end()
    return true
  }
  if (!matched && setRawHead(res, 200, `${lines}${JSON_TYPE_LINE}`, body.bytes.length)) {
    res.end(method === 'HEAD' ? undefined : body.bytes)
    return true
  }
  const headers = [
    'Access-Control-Allow-Origin', '*',
    'Access-Control-Expose-Headers', EXPOSED_HEADERS,
    'X-Ratelimit-Limit', String(decision.limit),
    'X-Ratelimit-Remaining', String(decision.remaining),
    'X-Ratelimit-Reset', String(decision.resetEpochSeconds),
    'X-Request-Id', requestId,
  ]
  writeBodyWithHeaders(req, res, headers, body, cacheControl)
  return true
}
