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
})
const { address, port } = server.address() as AddressInfo
const shown = address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address
process.stderr.write(`Serving release ${ctx.release.id} of ${options.distDir} at http://${shown}:${port}/api/v1\n`)

/** The options from the environment; a bad setting is named and the process exits 2 before it listens. */
function readOptions(): ReturnType<typeof resolveShimOptions> {
  try {
    return resolveShimOptions({}, process.env)
  } catch (err) {
    process.stderr.write(`Not starting: ${(err as Error).message} (README, "Configuration")\n`)
    process.exit(2)
  }
}
