/**
 * Real nginx in front of a test shim, with the configuration `npm run front-config` generates: its
 * own prefix (pid, logs, temp folders) in a temp dir, `daemon off`, an ephemeral port on 127.0.0.1,
 * stopped by the pid we started.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { renderFrontConfig, type FrontConfigOptions } from '../shim/front-config.ts'

/** A running nginx front. */
export interface FrontServer {
  origin: string
  /** The generated configuration (for error messages). */
  config: string
  close(): Promise<void>
}

/** The nginx binary: PATH first, then Debian's location (sbin is not on every user's PATH). */
export const NGINX = process.env.PATH?.split(':').map((d) => path.join(d, 'nginx')).find(isExecutable) ?? '/usr/sbin/nginx'

/** Starts nginx in front of the shim at `shim` (host:port) over the release of distDir. */
export async function startNginxFront(options: Omit<FrontConfigOptions, 'listen' | 'completePrefix'>): Promise<FrontServer> {
  const prefix = mkdtempSync(path.join(os.tmpdir(), 'catalog-nginx-'))
  // nginx binds the port itself: find a free one, retry if another process takes it meanwhile.
  for (let attempt = 0; ; attempt++) {
    const port = await findFreePort()
    // As root, nginx would run its worker as nobody, who cannot read a test's private temp dirs.
    const user = process.getuid?.() === 0 ? 'root' : null
    const config = renderFrontConfig({ ...options, listen: `127.0.0.1:${port}`, completePrefix: prefix, workers: 1, user })
    const conf = path.join(prefix, 'nginx.conf')
    writeFileSync(conf, config)
    const child = spawn(NGINX, ['-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    let exited = false
    const closed = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())))
    child.on('error', () => (exited = true))
    const origin = `http://127.0.0.1:${port}`
    const up = await waitUntilListening(port, () => exited)
    const close = async (): Promise<void> => {
      if (!exited) child.kill('SIGQUIT')
      await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))])
      if (!exited) child.kill('SIGKILL')
      await closed
    }
    if (up && !(await servesStatic(origin))) {
      await close()
      throw new Error(`nginx answers but does not serve the release itself (a file it cannot read falls through to the shim): see ${prefix}/error.log\n${readLog(prefix)}`)
    }
    if (up) {
      return {
        origin,
        config,
        async close() {
          await close()
          rmSync(prefix, { recursive: true, force: true })
        },
      }
    }
    await close()
    const log = readLog(prefix)
    if (attempt < 3 && /Address already in use/.test(stderr + log)) continue
    rmSync(prefix, { recursive: true, force: true })
    throw new Error(`nginx did not start: ${stderr}${log}`)
  }
}

async function findFreePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/**
 * Polls until something accepts on the port (true) or the process exited (false). A TCP connect,
 * not a request: a probe request would reach the shim and count against a test's rate limit.
 */
async function waitUntilListening(port: number, gone: () => boolean): Promise<boolean> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (gone()) return false
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    // Our child, not a stranger on a recycled port: it must still be running.
    if (accepted && !gone()) return true
    await new Promise((r) => setTimeout(r, 20))
  }
  return false
}

/**
 * Whether nginx serves a file of the release itself: every release has the OpenAPI document, and
 * only nginx's request ids are 32 hex digits (the shim's are UUIDs). Without this check a release
 * nginx cannot read would silently be served by the shim behind it and the front tests prove nothing.
 */
async function servesStatic(origin: string): Promise<boolean> {
  const res = await fetch(`${origin}/api/v1/openapi.json`, { method: 'HEAD' })
  return res.status === 200 && /^[0-9a-f]{32}$/.test(res.headers.get('x-request-id') ?? '')
}

function readLog(prefix: string): string {
  try {
    return readFileSync(path.join(prefix, 'error.log'), 'utf8')
  } catch {
    return ''
  }
}

function isExecutable(file: string): boolean {
  try {
    return statSync(file).isFile()
  } catch {
    return false
  }
}
