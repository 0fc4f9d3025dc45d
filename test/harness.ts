/**
 * The one test harness: starts the real shim over a built release on a real socket, and fails any
 * test that made the server answer an unexpected 500.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createShimListener } from '../shim/app.ts'
import { resolveShimOptions, type ShimOptions } from '../shim/config.ts'
import { createShimContext, type ShimContext, type ShimDependencies } from '../shim/context.ts'
import { configureServer } from '../shim/server.ts'

/** A running shim. */
export interface TestServer {
  /** Origin, e.g. http://127.0.0.1:40123 */
  origin: string
  /** Fetches an API path (prefixed with /api/v1 unless it starts with /objects or is absolute). */
  get(path: string, init?: RequestInit): Promise<Response>
  ctx: ShimContext
  server: Server
  /** Number of 5xx responses the server sent. */
  serverErrors(): number
  close(): Promise<void>
}

/** Starts the shim over distDir on an ephemeral port. */
export async function startServer(distDir: string, overrides: Partial<ShimOptions> = {}, deps: ShimDependencies = {}): Promise<TestServer> {
  const options = resolveShimOptions({ host: '127.0.0.1', port: 0, distDir, releasePollMs: 0, rateLimit: 1_000_000, ...overrides }, {})
  const ctx = await createShimContext(options, deps)
  const listener = createShimListener(ctx)
  let errors = 0
  const server = createServer((req, res) => {
    res.on('finish', () => {
      if (res.statusCode >= 500) errors++
    })
    listener(req, res)
  })
  configureServer(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    ctx,
    server,
    get: (path, init) => fetch(path.startsWith('http') ? path : path.startsWith('/objects') ? origin + path : `${origin}/api/v1${path}`, { redirect: 'manual', ...init }),
    serverErrors: () => errors,
    async close() {
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
