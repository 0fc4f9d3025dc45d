/**
 * The shim: one h3 app. Static first — a GET/HEAD with no query string on a pre-rendered path is
 * answered from the live release (in memory when hot); everything else goes to the dynamic routes,
 * which use the same renderers. Every response carries the common headers and errors the envelope.
 */
import path from 'node:path'
import { statSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createApp, eventHandler, toNodeListener, type App, type H3Event } from 'h3'
import { contentEtag } from '../build/render/etag.ts'
import { contentTypeOf, IMMUTABLE, objectFile } from '../build/static-paths.ts'
import type { ShimOptions } from './config.ts'
import type { ShimContext } from './context.ts'
import { apiError, createErrorHandler, notFound } from './errors.ts'
import { readClientKey } from './client-ip.ts'
import { rateLimitHeaders } from './rate-limit.ts'
import { parseRequestTarget, isSafePath } from './request-target.ts'
import { ALLOWED_METHODS, getRequestState, sendBodyWithCommonHeaders, setCommonHeaders } from './respond.ts'
import { matchRoute } from './routes/index.ts'
import { sendMirrorFile } from './mirror-file.ts'
import { sendFile } from './send-file.ts'
import { PLAIN_API_PATH, serveStaticFastPath, takeFastPathDecision } from './static-fast-path.ts'

/** Cache-Control of mutable JSON (short max-age, stale-while-revalidate with its delta). */
export function mutableCacheControl(ctx: { options: Pick<ShimOptions, 'cacheScope' | 'maxAge' | 'staleWhileRevalidate'> }): string {
  return `${ctx.options.cacheScope}, max-age=${ctx.options.maxAge}, stale-while-revalidate=${ctx.options.staleWhileRevalidate}`
}

/** Cache-Control of content-addressed file objects (one definition for the shim, nginx and the bucket). */
export { IMMUTABLE }

/** Creates the h3 app over a shim context. */
export function createShimApp(ctx: ShimContext): App {
  const app = createApp({ onError: createErrorHandler(() => ctx.options.rateLimit) })
  // Header values of the static hot path, computed once instead of per request.
  const fixed: FixedHeaders = { cacheControl: mutableCacheControl(ctx), rateLimit: String(ctx.options.rateLimit) }
  app.use(eventHandler((event) => handleRequest(ctx, event, fixed)))
  return app
}

/**
 * The node request listener of the shim (the CLI and the tests serve this): static hits go
 * straight to the fast path (static-fast-path.ts), everything else to the h3 app.
 */
export function createShimListener(ctx: ShimContext): (req: IncomingMessage, res: ServerResponse) => void {
  const app = toNodeListener(createShimApp(ctx))
  const cacheControl = mutableCacheControl(ctx)
  return (req, res) => {
    if (!serveStaticFastPath(ctx, cacheControl, req, res)) void app(req, res)
  }
}

interface FixedHeaders {
  cacheControl: string
  rateLimit: string
}

async function handleRequest(ctx: ShimContext, event: H3Event, fixed: FixedHeaders): Promise<void> {
  getRequestState(event)
  const method = event.node.req.method ?? 'GET'
  if (method === 'OPTIONS') return sendPreflight(ctx, event)
  await applyRateLimit(ctx, event)
  // The error hook sets the common headers itself, so errors thrown before they are set still carry them.
  const url = event.node.req.url ?? '/'
  const plain = (method === 'GET' || method === 'HEAD') && PLAIN_API_PATH.test(url)
  if (plain) {
    // The hot path: a plain pre-rendered path (no query, nothing to decode), from memory when hot.
    const body = ctx.cache.get?.(url) ?? (await ctx.cache.read(ctx.release.dir, url))
    if (body) return sendBodyWithCommonHeaders(event, body, fixed.cacheControl, fixed.rateLimit)
  }
  if (method !== 'GET' && method !== 'HEAD') {
    throw apiError(405, 'method_not_allowed', `Method ${method} is not allowed: the API is read-only`, undefined, { Allow: ALLOWED_METHODS })
  }
  const target = parseRequestTarget(event.node.req.url ?? '/')
  const [first, second, ...rest] = target.segments
  if (!isSafePath(target.segments)) throw notFound('The resource')
  if (!plain && first === 'api' && second === 'v1' && target.search === '' && rest.length > 0) {
    const body = await ctx.cache.read(ctx.release.dir, `/api/v1/${rest.join('/')}`)
    if (body) return sendBodyWithCommonHeaders(event, body, fixed.cacheControl, fixed.rateLimit)
  }
  setCommonHeaders(event, ctx.options.rateLimit)
  if (first === 'objects') return sendObject(ctx, event, target.segments.slice(1))
  if (first === 'mirror') return sendMirrorFile(ctx, event, target.segments.slice(1))
  if (first !== 'api' || second !== 'v1') throw notFound(`The path /${target.segments.join('/')}`)
  const route = matchRoute(rest)
  if (!route) throw notFound(`The path /api/v1/${rest.join('/')}`)
  await route.handler({ ctx, event, params: route.params, search: target.search })
}

/** Counts the request against the client's budget; past it, 429 with Retry-After (a little jitter). */
async function applyRateLimit(ctx: ShimContext, event: H3Event): Promise<void> {
  const state = getRequestState(event)
  const req = event.node.req
  state.clientKey = readClientKey(req, ctx.trustedProxies)
  // A request the fast path refused was counted there already.
  const decision = takeFastPathDecision(req) ?? (await ctx.limiter.consume(state.clientKey))
  state.rateHeaders = rateLimitHeaders(decision)
  if (!decision.allowed) {
    // Jitter spreads the retries of many limited clients over a few seconds instead of one.
    const retryAfter = decision.retryAfterSeconds + Math.floor(Math.random() * 3)
    throw apiError(429, 'rate_limited', `Rate limit of ${decision.limit} requests per ${ctx.options.rateWindowSeconds} s exceeded; retry after ${retryAfter} s`, undefined, {
      'Retry-After': String(retryAfter),
    })
  }
}

/** Serves a content-addressed file object, streamed (objects can be large). */
async function sendObject(ctx: ShimContext, event: H3Event, segments: string[]): Promise<void> {
  const [sha256, filename] = segments
  if (segments.length !== 2 || !/^[0-9a-f]{64}$/.test(sha256!)) throw notFound('The file object')
  const file = path.join(ctx.release.dir, objectFile(sha256!, filename!))
  let size: number
  try {
    size = statSync(file).size
  } catch {
    throw notFound('The file object')
  }
  // The object's name carries its SHA-256 (checked when the catalog was loaded): the ETag of its bytes.
  await sendFile(event, file, {
    etag: contentEtag(sha256!, size),
    cacheControl: IMMUTABLE,
    contentType: contentTypeOf(filename!),
    size,
    headers: { 'Content-Disposition': `attachment; filename*=UTF-8''${encodeURIComponent(filename!)}` },
  })
}

/** CORS preflight: 204 allowing GET/HEAD and the headers a client may send (If-None-Match included). */
function sendPreflight(ctx: ShimContext, event: H3Event): void {
  const res = event.node.res
  setCommonHeaders(event, ctx.options.rateLimit)
  const requested = event.node.req.headers['access-control-request-headers']
  res.setHeader('Access-Control-Allow-Methods', ALLOWED_METHODS)
  res.setHeader('Access-Control-Allow-Headers', typeof requested === 'string' && requested.length <= 1024 ? requested : 'If-None-Match, Content-Type, User-Agent')
  res.setHeader('Access-Control-Max-Age', '7200')
  res.setHeader('Cache-Control', 'public, max-age=7200')
  res.statusCode = 204
  res.end()
}
