/** `npm run serve`: serves the live release of dist/ (options: README, "Configuration"). */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createShimListener } from './app.ts'
import { resolveShimOptions, threadPoolWarning } from './config.ts'
import { createShimContext } from './context.ts'
import { checkHeapLimit } from './heap.ts'
import { configureServer } from './server.ts'

const options = readOptions()
const heapProblem = checkHeapLimit(options.cacheBytes)
if (heapProblem) {
  process.stderr.write(`Not starting: ${heapProblem}\n`)
  process.exit(1)
}
const poolWarning = threadPoolWarning(options.readConnections, process.env)
if (poolWarning) process.stderr.write(`Warning: ${poolWarning}\n`)
const ctx = await createShimContext(options)
// A bare node:http server: listhen's shutdown hook added a 'request' and a 'finish' listener per
// request, measurably slower in an A/B run (bench/results/PROFILE.md), for a feature the CLI never used.
const server = createServer(createShimListener(ctx))
configureServer(server, options.rateLimit)
await new Promise<void>((resolve, reject) => {
  server.once('error', reject)
  server.listen(options.port, options.host, resolve)
}).catch(async (err: NodeJS.ErrnoException) => {
  // A port taken or not ours to bind is the operator's to fix: named, not a stack trace.
  const why = err.code === 'EADDRINUSE' ? 'is already in use' : err.code === 'EACCES' ? 'needs privileges this process lacks' : `cannot be listened on (${err.message})`
  process.stderr.write(`Not starting: ${options.host}:${options.port} ${why}; set PORT (and HOST) to another (README, "Configuration")\n`)
  await ctx.close().catch(() => {})
  process.exit(1)
})
const { address, port } = server.address() as AddressInfo
const shown = address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address
process.stderr.write(`Serving release ${ctx.release.id} of ${options.distDir} at http://${shown}:${port}/api/v1\n`)
process.once('SIGTERM', () => stopGracefully('SIGTERM'))
process.once('SIGINT', () => stopGracefully('SIGINT'))

/** Longest a stop waits for responses in flight before it closes their connections. */
const STOP_GRACE_MS = 10_000

/**
 * SIGTERM or SIGINT (a rolling restart, a container stop, Ctrl-C): stop accepting connections,
 * finish the responses in flight (closing each keep-alive connection as soon as it is idle, since
 * the fast path has already told its client it may send more), then commit the queued download
 * events and close the catalog, and exit 0. A client is thus never cut off in the middle of a
 * response, as it was when the signal's default killed the process. After STOP_GRACE_MS the
 * connections still open are closed; a second signal stops at once (exit 1). Closing normally also
 * lets `node --cpu-prof` write its profile.
 */
function stopGracefully(signal: string): void {
  process.stderr.write(`${signal}: finishing the requests in flight, then stopping\n`)
  process.once(signal, () => {
    process.stderr.write(`${signal} again: stopping now\n`)
    process.exit(1)
  })
  const idle = setInterval(() => server.closeIdleConnections(), 50)
  const grace = setTimeout(() => {
    process.stderr.write(`Closing the connections still open after ${STOP_GRACE_MS} ms\n`)
    server.closeAllConnections()
  }, STOP_GRACE_MS)
  server.close(() => {
    clearInterval(idle)
    clearTimeout(grace)
    ctx.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`Stopping: ${(err as Error).message}\n`)
        process.exit(1)
      },
    )
  })
  server.closeIdleConnections()
}

/** The options from the environment; a bad setting is named and the process exits 2 before it listens. */
function readOptions(): ReturnType<typeof resolveShimOptions> {
  try {
    return resolveShimOptions({}, process.env)
  } catch (err) {
    process.stderr.write(`Not starting: ${(err as Error).message} (README, "Configuration")\n`)
    process.exit(2)
  }
}
