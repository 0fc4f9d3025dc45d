/**
 * `npm run front-config -- --dist DIR --shim HOST:PORT --listen HOST:PORT [--out FILE]`: writes the
 * nginx front server's configuration (README, "Running behind nginx or a CDN"). Headers follow the
 * shim's settings from the same environment (RATE_LIMIT, CACHE_SCOPE, MAX_AGE, STALE_WHILE_REVALIDATE).
 */
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { z } from 'zod'
import { resolveShimOptions } from './config.ts'
import { renderFrontConfig } from './front-config.ts'

const usage = 'usage: npm run front-config -- --dist DIR --shim HOST:PORT --listen HOST:PORT [--out FILE] [--static-rate-limit N] [--complete PREFIX] [--workers N|auto]\n'
const { values } = parseArgs({
  options: {
    dist: { type: 'string' },
    shim: { type: 'string' },
    listen: { type: 'string' },
    out: { type: 'string' },
    'static-rate-limit': { type: 'string', default: '0' },
    complete: { type: 'string' },
    workers: { type: 'string', default: 'auto' },
  },
})
if (!values.shim || !values.listen) {
  process.stderr.write(usage)
  process.exit(2)
}
try {
  const shim = resolveShimOptions({ distDir: values.dist }, process.env)
  const text = renderFrontConfig({
    distDir: shim.distDir,
    // A URL is accepted too (http://127.0.0.1:3000): nginx needs host:port.
    shim: values.shim.replace(/^https?:\/\//, '').replace(/\/+$/, ''),
    listen: values.listen,
    rateLimit: shim.rateLimit,
    cacheScope: shim.cacheScope,
    maxAge: shim.maxAge,
    staleWhileRevalidate: shim.staleWhileRevalidate,
    staticRateLimit: Number(values['static-rate-limit']),
    completePrefix: values.complete ? path.resolve(values.complete) : null,
    workers: values.workers === 'auto' ? 'auto' : Number(values.workers),
  })
  if (values.out) {
    writeFileSync(values.out, text)
    process.stderr.write(`Wrote ${values.out}: nginx on ${values.listen} serves ${shim.distDir}/current/public, the rest goes to ${values.shim}\n`)
  } else process.stdout.write(text)
} catch (err) {
  process.stderr.write(err instanceof z.ZodError ? `Invalid options: ${z.prettifyError(err)}\n${usage}` : `${(err as Error).message}\n`)
  process.exit(2)
}
