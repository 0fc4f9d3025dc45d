/** `npm run serve`: serves the live release of dist/ (options: README, "Configuration"). */
import { toNodeListener } from 'h3'
import { listen } from 'listhen'
import { createShimApp } from './app.ts'
import { resolveShimOptions } from './config.ts'
import { createShimContext } from './context.ts'
import { configureServer } from './server.ts'

const options = resolveShimOptions({}, process.env)
const ctx = await createShimContext(options)
const app = createShimApp(ctx)
const listener = await listen(toNodeListener(app), {
  port: options.port,
  hostname: options.host,
  showURL: false,
  qr: false,
  open: false,
  public: options.host === '0.0.0.0' || options.host === '::',
})
configureServer(listener.server)
process.stderr.write(`Serving release ${ctx.release.id} of ${options.distDir} at ${listener.url.replace(/\/$/, '')}/api/v1\n`)
