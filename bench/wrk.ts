/**
 * Runs wrk (keep-alive, one thread, fixed connections, bounded duration, loopback only) with the
 * URL-list Lua script, and parses its JSON summary line plus the CPU time wrk itself used.
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'

const LUA = path.join(path.dirname(fileURLToPath(import.meta.url)), 'lua', 'urls.lua')

/** Seeds of mix runs: each run of the bench process gets its own, so no two runs share a request. */
let mixRuns = 0

/** wrk's summary as printed by the Lua `done` hook. */
export const wrkSummarySchema = z.object({
  requests: z.number(),
  durationUs: z.number(),
  bytes: z.number(),
  errors: z.object({ connect: z.number(), read: z.number(), write: z.number(), status: z.number(), timeout: z.number() }),
  latencyUs: z.object({ mean: z.number(), max: z.number(), p50: z.number(), p90: z.number(), p99: z.number(), p999: z.number() }),
})

/** One wrk run, reduced to the figures the report uses. */
export const wrkRunSchema = z.object({
  requests: z.number(),
  rps: z.number(),
  p50Ms: z.number(),
  p90Ms: z.number(),
  p99Ms: z.number(),
  maxMs: z.number(),
  bytesPerResponse: z.number(),
  errors: z.number(),
  /** Non-2xx/3xx answers (part of errors). */
  badStatus: z.number(),
  /** CPU used by wrk itself, in % of one core over the run. */
  wrkCpuPct: z.number(),
})
export type WrkRun = z.infer<typeof wrkRunSchema>

/** What to run. */
export interface WrkOptions {
  port: number
  listFile: string
  ifNoneMatch: boolean
  connections: number
  durationSeconds: number
  /** Line of the list to start at (default 0: every measured run replays the same sequence). */
  offset?: number
  /**
   * Instead of replaying the list, each request draws this many distinct values of its list
   * parameter from the list's pool (lua/urls.lua's mix mode): every request new, none asked before.
   */
  mix?: number
}

/** Runs wrk once against 127.0.0.1:port. */
export async function runWrk(options: WrkOptions): Promise<WrkRun> {
  const scriptArgs =
    options.mix === undefined
      ? [options.ifNoneMatch ? 'inm' : '-', String(options.offset ?? 0)]
      : ['mix', String(options.mix), String(++mixRuns)]
  const args = [
    '-t1', `-c${options.connections}`, `-d${options.durationSeconds}s`, '--timeout', '5s',
    '-s', LUA, `http://127.0.0.1:${options.port}`, '--', options.listFile, ...scriptArgs,
  ]
  // `times` after wrk prints the CPU its children used: wrk's own load on the shared cores.
  const shell = 'wrk "$@"; status=$?; times; exit $status'
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn('bash', ['-c', shell, 'wrk', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d))
    child.stderr.on('data', (d: Buffer) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`wrk exited ${code}: ${stderr || stdout}`))))
  })
  const line = out.split('\n').find((l) => l.startsWith('WRKJSON '))
  if (!line) throw new Error(`wrk printed no summary:\n${out}`)
  const s = wrkSummarySchema.parse(JSON.parse(line.slice('WRKJSON '.length)))
  const seconds = s.durationUs / 1e6
  const e = s.errors
  return {
    requests: s.requests,
    rps: s.requests / seconds,
    p50Ms: s.latencyUs.p50 / 1000,
    p90Ms: s.latencyUs.p90 / 1000,
    p99Ms: s.latencyUs.p99 / 1000,
    maxMs: s.latencyUs.max / 1000,
    bytesPerResponse: s.requests > 0 ? s.bytes / s.requests : 0,
    errors: e.connect + e.read + e.write + e.status + e.timeout,
    badStatus: e.status,
    wrkCpuPct: (100 * readChildCpuSeconds(out)) / seconds,
  }
}

/** Sums the second line of bash `times` (children user and system time, e.g. `0m1.234s 0m0.5s`). */
function readChildCpuSeconds(out: string): number {
  const lines = out.trim().split('\n').filter((l) => /^\d+m[\d.]+s \d+m[\d.]+s$/.test(l.trim()))
  const children = lines[lines.length - 1]
  if (!children) return Number.NaN
  let total = 0
  for (const m of children.matchAll(/(\d+)m([\d.]+)s/g)) total += Number(m[1]) * 60 + Number(m[2])
  return total
}
