/**
 * Starts the three servers compared on the same files: the shim exactly as `npm run serve` starts
 * it (tsc into .out/, then plain node .out/shim/cli.js), nginx with one worker over the
 * same release tree, and the raw node:http server (compiled the same way). Every server listens on
 * 127.0.0.1 only and is stopped by the pid we started.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from 'node:net'
import { SHIM_HEAP_MB_DEFAULT, SHIM_INITIAL_OLD_SPACE_MB_DEFAULT, SHIM_MALLOC_ARENA_MAX_DEFAULT, SHIM_SEMI_SPACE_MB_DEFAULT, SHIM_V8_FLAGS } from '../shim/heap.ts'
import { renderFrontConfig } from '../shim/front-config.ts'
import { listChildPids } from './proc.ts'

/** The repository root (bench/..). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

const compiled = new Set<string>()

/**
 * The node arguments that run a TypeScript entry (`shim/cli.ts`) of a checkout as `npm run serve`
 * does: compiled once per checkout by `tsc -p tsconfig.build.json` into .out/, then plain node. A
 * checkout from before the compiled start (no tsconfig.build.json) runs it through vite-node, as
 * its own `npm run serve` did — so before/after comparisons run each side as it shipped.
 */
export function resolveEntryArgs(root: string, entry: string): string[] {
  if (!existsSync(path.join(root, 'tsconfig.build.json'))) return [path.join(root, 'node_modules', 'vite-node', 'dist', 'cli.mjs'), entry]
  if (!compiled.has(root)) {
    const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' })
    if (tsc.status !== 0) throw new Error(`tsc -p tsconfig.build.json failed in ${root}:\n${tsc.stdout}${tsc.stderr}`)
    compiled.add(root)
  }
  return [path.join(root, '.out', entry.replace(/\.ts$/, '.js'))]
}

/** The shim's rate limit in the benchmark: high enough never to throttle it. */
const BENCH_RATE_LIMIT = 1_000_000_000

/** A started server. */
export interface ServerHandle {
  name: string
  port: number
  /** The process that serves (for CPU and memory readings). */
  pid: number
  /** Milliseconds from spawn to the first 200 on the probe URL. */
  startMs: number
  stop(): Promise<void>
  /** Sends SIGTERM now, synchronously (for exit paths that cannot wait). */
  kill(): void
}

/** Options of the shim process. */
export interface ShimStart {
  distDir: string
  port: number
  workDir: string
  probePath: string
  /** Extra environment (CACHE_BYTES, ...). */
  env?: Record<string, string>
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs?: string[]
  /** Checkout whose shim runs (default: this one; another for before/after comparisons). */
  root?: string
}

/** The shim's heap limit as `npm run serve` sets it: SHIM_HEAP_MB, else its default. */
export function shimHeapMb(): string {
  return process.env.SHIM_HEAP_MB ?? String(SHIM_HEAP_MB_DEFAULT)
}

/** The shim's new-space bound as `npm run serve` sets it: SHIM_SEMI_SPACE_MB, else its default. */
export function shimSemiSpaceMb(): string {
  return process.env.SHIM_SEMI_SPACE_MB ?? String(SHIM_SEMI_SPACE_MB_DEFAULT)
}

/** The old generation's first size as `npm run serve` sets it: SHIM_INITIAL_OLD_SPACE_MB, else its default. */
export function shimInitialOldSpaceMb(): string {
  return process.env.SHIM_INITIAL_OLD_SPACE_MB ?? String(SHIM_INITIAL_OLD_SPACE_MB_DEFAULT)
}

/** Starts the shim as `npm run serve` does, rate limit raised so the benchmark is not throttled. */
export async function startShim(options: ShimStart): Promise<ServerHandle> {
  mkdirSync(options.workDir, { recursive: true })
  await assertPortFree(options.port)
  const env = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(options.port),
    DIST_DIR: path.resolve(options.distDir),
    RATE_LIMIT: String(BENCH_RATE_LIMIT),
    // As npm run serve sets it (shim/heap.ts), unless the environment gives its own.
    MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? String(SHIM_MALLOC_ARENA_MAX_DEFAULT),
    // Never write beside a release we were only asked to read.
    COUNTERS_FILE: path.join(options.workDir, `counters-${options.port}.sqlite`),
    ...options.env,
  }
  const root = options.root ?? ROOT
  // The V8 flags npm run serve sets (shim/heap.ts), unless the caller gives its own heap sizes; the
  // caller's flags come after, so `--no-log` turns the logger off again.
  const nodeArgs = options.nodeArgs ?? []
  const heap = [
    ...(nodeArgs.some((a) => a.startsWith('--max-old-space-size')) ? [] : [`--max-old-space-size=${shimHeapMb()}`]),
    ...(nodeArgs.some((a) => a.startsWith('--max-semi-space-size')) ? [] : [`--max-semi-space-size=${shimSemiSpaceMb()}`]),
    ...(nodeArgs.some((a) => a.startsWith('--initial-old-space-size')) ? [] : [`--initial-old-space-size=${shimInitialOldSpaceMb()}`]),
    ...SHIM_V8_FLAGS,
  ]
  const child = spawn(process.execPath, [...heap, ...nodeArgs, ...resolveEntryArgs(root, 'shim/cli.ts')], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] })
  return await track('shim', child, options.port, options.probePath)
}

/** Name of the raw server that also sends the shim's header lines (bench/raw-server.ts `headers`). */
export const RAW_HEADERS_NAME = 'raw node + headers'

/**
 * Starts the raw node:http server over a map of "url<TAB>file" lines; with `contractHeaders`, the
 * variant that sends the same header lines as the shim.
 */
export async function startRaw(port: number, mapFile: string, probePath: string, contractHeaders = false): Promise<ServerHandle> {
  await assertPortFree(port)
  const args = [...resolveEntryArgs(ROOT, 'bench/raw-server.ts'), '--', String(port), mapFile, ...(contractHeaders ? ['headers'] : [])]
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] })
  return await track(contractHeaders ? RAW_HEADERS_NAME : 'raw node', child, port, probePath)
}

/**
 * Starts nginx (1 worker) with the production front configuration (`npm run front-config`,
 * shim/front-config.ts) over the live release of distDir, in front of the shim at `shim` (host:port).
 */
export async function startNginx(port: number, distDir: string, shim: string, workDir: string, probePath: string): Promise<ServerHandle> {
  await assertPortFree(port)
  const prefix = path.join(workDir, 'nginx')
  mkdirSync(prefix, { recursive: true })
  const conf = path.join(prefix, 'nginx.conf')
  writeFileSync(conf, renderNginxConf(port, distDir, shim, prefix))
  const child = spawn('nginx', ['-p', prefix, '-e', path.join(prefix, 'error.log'), '-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] })
  const handle = await track('nginx', child, port, probePath)
  const worker = listChildPids(child.pid!)[0]
  if (!worker) throw new Error('nginx started without a worker process')
  return { ...handle, pid: worker }
}

/** The nginx configuration: the one operators deploy (shim/front-config.ts), one worker, the benchmark's rate limit. */
export function renderNginxConf(port: number, distDir: string, shim: string, prefix: string): string {
  return renderFrontConfig({
    distDir: path.resolve(distDir),
    shim,
    listen: `127.0.0.1:${port}`,
    rateLimit: BENCH_RATE_LIMIT,
    cacheScope: 'private',
    maxAge: 60,
    staleWhileRevalidate: 600,
    completePrefix: path.resolve(prefix),
    workers: 1,
    // A root master would run the worker as nobody, who may not read the catalog.
    user: process.getuid?.() === 0 ? 'root' : null,
  })
}

/** Throws when something already listens on the port (it would answer the probe for a server that failed to bind). */
async function assertPortFree(port: number): Promise<void> {
  const inUse = await new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
  if (inUse) throw new Error(`port ${port} is already in use on 127.0.0.1 (choose another with --port)`)
}

async function track(name: string, child: ChildProcess, port: number, probePath: string): Promise<ServerHandle> {
  const started = performance.now()
  let stderr = ''
  let exited = false
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)))
  const closed = new Promise<void>((resolve) => child.on('exit', () => ((exited = true), resolve())))
  const stop = async (): Promise<void> => {
    if (!exited) child.kill('SIGTERM')
    await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))])
    if (!exited) child.kill('SIGKILL')
  }
  try {
    await waitForOk(port, probePath, 180_000, () => exited)
  } catch (err) {
    await stop()
    throw new Error(`${name} did not start: ${(err as Error).message}\n${stderr}`)
  }
  const kill = (): void => void (exited || child.kill('SIGTERM'))
  return { name, port, pid: child.pid!, startMs: performance.now() - started, stop, kill }
}

/** Polls http://127.0.0.1:port/path until it answers 200 (bounded by timeoutMs). */
export async function waitForOk(port: number, urlPath: string, timeoutMs: number, gone: () => boolean = () => false): Promise<void> {
  const deadline = performance.now() + timeoutMs
  let last = ''
  while (performance.now() < deadline) {
    if (gone()) throw new Error('process exited')
    try {
      const res = await fetch(`http://127.0.0.1:${port}${urlPath}`, { signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      if (res.status === 200) return
      last = `status ${res.status}`
    } catch (err) {
      last = (err as Error).message
    }
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`no 200 from ${urlPath} within ${timeoutMs} ms (${last})`)
}
