/**
 * Side-by-side runs: every repetition runs each server once on the same URL list (the order rotates
 * per repetition so no server always runs first on a cold or warm machine), then the ratio to raw
 * node is taken per repetition — the machine's noise moves both figures of one repetition together.
 */
import { readCpuSeconds, readMemoryMb } from './proc.ts'
import type { ServerRow } from './results-schema.ts'
import type { ServerHandle } from './servers.ts'
import { median, round, summarize } from './stats.ts'
import { runWrk, type WrkRun } from './wrk.ts'

/** A server and the URL list (with its own ETags) it is driven with. */
export interface Contender {
  handle: ServerHandle
  listFile: string
  /** Draw each request anew from the list's values (WrkOptions.mix) instead of replaying it. */
  mix?: number
}

/** Load settings of a comparison. */
export interface CompareOptions {
  reps: number
  durationSeconds: number
  connections: number
  ifNoneMatch: boolean
  /** Name of the baseline server (ratios are against it), if it takes part. */
  baseline?: string
  /** Called with a progress line after each run. */
  log: (line: string) => void
  /** Largest RSS seen per pid while loaded (updated in place). */
  peakRss: Map<number, number>
}

/** Runs the comparison and summarises each server. */
export async function compareServers(contenders: readonly Contender[], options: CompareOptions): Promise<ServerRow[]> {
  const runs = new Map<string, (WrkRun & { serverCpuPct: number })[]>(contenders.map((c) => [c.handle.name, []]))
  for (let rep = 0; rep < options.reps; rep++) {
    const order = contenders.map((_, i) => contenders[(i + rep) % contenders.length]!)
    for (const c of order) {
      const run = await measureOnce(c, options)
      runs.get(c.handle.name)!.push(run)
      options.log(`  rep ${rep + 1}/${options.reps} ${c.handle.name.padEnd(9)} ${Math.round(run.rps).toString().padStart(6)} req/s  p50 ${run.p50Ms.toFixed(2)} ms  p99 ${run.p99Ms.toFixed(2)} ms  server CPU ${Math.round(run.serverCpuPct)}%  wrk CPU ${Math.round(run.wrkCpuPct)}%  errors ${run.errors}`)
    }
  }
  const baseline = options.baseline ? runs.get(options.baseline) : undefined
  return contenders.map((c) => {
    const list = runs.get(c.handle.name)!
    const ratios = baseline ? list.map((r, i) => r.rps / baseline[i]!.rps) : null
    const rps = summarize(list.map((r) => r.rps))
    const p99 = summarize(list.map((r) => r.p99Ms))
    return {
      server: c.handle.name,
      reps: list.map((r, i) => ({ ...roundRun(r), ratioVsRaw: ratios ? round(ratios[i]!, 3) : null })),
      rps: { median: round(rps.median, 0), min: round(rps.min, 0), max: round(rps.max, 0), spreadPct: round(rps.spreadPct, 0) },
      ratioVsRaw: ratios ? roundRange(summarize(ratios), 3) : null,
      p50Ms: round(median(list.map((r) => r.p50Ms))),
      p99Ms: roundRange(p99, 2),
      serverCpuPct: round(median(list.map((r) => r.serverCpuPct)), 0),
      serverCpuUsPerRequest: round(median(list.map((r) => (r.serverCpuPct * 1e4) / r.rps)), 1),
      wrkCpuPct: round(median(list.map((r) => r.wrkCpuPct)), 0),
      errors: list.reduce((a, r) => a + r.errors, 0),
      bytesPerResponse: round(median(list.map((r) => r.bytesPerResponse)), 0),
    }
  })
}

async function measureOnce(c: Contender, options: CompareOptions): Promise<WrkRun & { serverCpuPct: number }> {
  const pid = c.handle.pid
  const sample = (): void => {
    const mem = readMemoryMb(pid)
    if (mem) options.peakRss.set(pid, Math.max(options.peakRss.get(pid) ?? 0, mem.rssMb))
  }
  const timer = setInterval(sample, 250)
  const cpu0 = readCpuSeconds([pid])
  const t0 = performance.now()
  try {
    const run = await runWrk({ port: c.handle.port, listFile: c.listFile, ifNoneMatch: options.ifNoneMatch, connections: options.connections, durationSeconds: options.durationSeconds, mix: c.mix })
    const seconds = (performance.now() - t0) / 1000
    return { ...run, serverCpuPct: (100 * (readCpuSeconds([pid]) - cpu0)) / seconds }
  } finally {
    clearInterval(timer)
    sample()
  }
}

function roundRun<T extends WrkRun & { serverCpuPct: number }>(r: T): T {
  return {
    ...r,
    rps: round(r.rps, 0),
    p50Ms: round(r.p50Ms),
    p90Ms: round(r.p90Ms),
    p99Ms: round(r.p99Ms),
    maxMs: round(r.maxMs),
    bytesPerResponse: round(r.bytesPerResponse, 0),
    wrkCpuPct: round(r.wrkCpuPct, 0),
    serverCpuPct: round(r.serverCpuPct, 0),
  }
}

function roundRange(r: { median: number; min: number; max: number; spreadPct: number }, digits: number): { median: number; min: number; max: number; spreadPct: number } {
  return { median: round(r.median, digits), min: round(r.min, digits), max: round(r.max, digits), spreadPct: round(r.spreadPct, 0) }
}
