/**
 * The one test harness: starts the real shim over a built release on a real socket, and fails any
 * test that made the server answer an unexpected 500. With CATALOG_TEST_FRONT=nginx (the `front`
 * project of vitest.config.ts) real nginx runs in front of the shim with the generated front
 * configuration, and `origin`/`get` go through it: the same tests, through the production layout.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toNodeListener } from 'h3'
import { createShimApp } from '../shim/app.ts'
import { resolveShimOptions, type ShimOptions } from '../shim/config.ts'
import { createShimContext, type ShimContext, type ShimDependencies } from '../shim/context.ts'
import { configureServer } from '../shim/server.ts'
import { startNginxFront, type FrontServer } from './front.ts'

/** The front server the tests run through: none (the shim alone) or nginx. */
export const FRONT: 'shim' | 'nginx' = process.env.CATALOG_TEST_FRONT === 'nginx' ? 'nginx' : 'shim'

/** A running shim. */
export interface TestServer {
  /** Origin, e.g. http://127.0.0.1:40123 (nginx's when a front runs) */
  origin: string
  /** The shim's own origin (equal to origin without a front). */
  shimOrigin: string
  /** nginx in front, or null. */
  front: FrontServer | null
  /** Number of requests that reached the shim. */
  shimRequests(): number
  /** Fetches an API path (prefixed with /api/v1 unless it starts with /objects or is absolute). */
  get(path: string, init?: RequestInit): Promise<Response>
  ctx: ShimContext
  server: Server
  /** Number of 5xx responses the server sent. */
  serverErrors(): number
  close(): Promise<void>
}

/**
 * Starts the shim over distDir on an ephemeral port, behind nginx when FRONT is nginx (not for a
 * snapshot: nginx serves files of a release folder). Behind nginx the shim trusts 127.0.0.1's
 * X-Forwarded-For unless the test sets its own trusted proxies.
 */
export async function startServer(distDir: string, overrides: Partial<ShimOptions> = {}, deps: ShimDependencies = {}): Promise<TestServer> {
  const withFront = FRONT === 'nginx' && !overrides.snapshotFile
  const trusted = withFront ? { trustedProxies: ['127.0.0.1'] } : {}
  const options = resolveShimOptions({ host: '127.0.0.1', port: 0, distDir, releasePollMs: 0, rateLimit: 1_000_000, ...trusted, ...overrides }, {})
  const ctx = await createShimContext(options, deps)
  const listener = toNodeListener(createShimApp(ctx))
  let errors = 0
  let requests = 0
  const server = createServer((req, res) => {
    requests++
    res.on('finish', () => {
      if (res.statusCode >= 500) errors++
    })
    void listener(req, res)
  })
  configureServer(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const shimOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let front: FrontServer | null = null
  if (withFront) {
    try {
      front = await startNginxFront({ ...options, shim: shimOrigin.slice('http://'.length) })
    } catch (err) {
      server.closeAllConnections()
      server.close()
      await ctx.close()
      throw err
    }
  }
  const origin = front?.origin ?? shimOrigin
  return {
    origin,
    shimOrigin,
    front,
    ctx,
    server,
    get: (path, init) => fetch(path.startsWith('http') ? path : path.startsWith('/objects') ? origin + path : `${origin}/api/v1${path}`, { redirect: 'manual', ...init }),
    serverErrors: () => errors,
    shimRequests: () => requests,
    async close() {
      await front?.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await ctx.close()
    },
  }
}

/** Reads a JSON body. */
export async function json<T = any>(res: Response): Promise<T> {
  return (await res.json()) as T
}
