/** The goals of issue 7 checked against the measured figures. */
import type { Goal, Scenario, ServeResults } from './results-schema.ts'

/** Lists each goal the results can speak to, with the figure that decides it. */
export function checkGoals(scenarios: readonly Scenario[], memory: ServeResults['memory']): Goal[] {
  const goals: Goal[] = []
  const row = (scenario: string, server: string): Scenario['rows'][number] | undefined =>
    scenarios.find((s) => s.name === scenario)?.rows.find((r) => r.server === server)
  for (const name of ['static-200', 'static-304']) {
    const shim = row(name, 'shim')
    if (!shim) continue
    if (shim.ratioVsRaw) {
      goals.push({ goal: `${name}: shim ≥ 0.8× raw node (median of per-repetition ratios)`, measured: `${shim.ratioVsRaw.median.toFixed(2)}× [${shim.ratioVsRaw.min.toFixed(2)}–${shim.ratioVsRaw.max.toFixed(2)}]`, met: shim.ratioVsRaw.median >= 0.8 })
    }
    goals.push({ goal: `${name}: shim p99 < 5 ms at concurrency 32 (median of repetitions)`, measured: `${shim.p99Ms.median.toFixed(2)} ms [${shim.p99Ms.min.toFixed(2)}–${shim.p99Ms.max.toFixed(2)}]`, met: shim.p99Ms.median < 5 })
  }
  // With the cache on and off (CACHE_BYTES=0: every hash and every update through SQLite), and with
  // every bulk hash request new (the cache helps only with its single lookups), all reported.
  for (const s of scenarios.filter((x) => /^bulk-(hashes|update)(-unique|-foreign|-cache-off|-cache-off-mapped)?-c\d+$/.test(x.name))) {
    const shim = s.rows[0]!
    const off = s.name.includes('-cache-off-mapped-') ? ', cache off, catalog mapped' : s.name.includes('-cache-off-') ? ', cache off' : s.name.includes('-unique-') ? ', every request new' : s.name.includes('-foreign-') ? ', every request new, 1 in 10 hashes of no file' : ''
    goals.push({ goal: `${s.name}: p99 < 25 ms for 100 hashes (concurrency ${s.connections}${off})`, measured: `${shim.p99Ms.median.toFixed(2)} ms [${shim.p99Ms.min.toFixed(2)}–${shim.p99Ms.max.toFixed(2)}]`, met: shim.p99Ms.median < 25 })
  }
  if (memory) {
    if (memory.rssStaticMaxMb !== null) goals.push({ goal: 'shim RSS under the static reads < 300 MB', measured: `${Math.round(memory.rssStaticMaxMb)} MB`, met: memory.rssStaticMaxMb < 300 })
    goals.push({ goal: 'shim RSS under all load (static + dynamic) < 300 MB', measured: `${Math.round(memory.rssUnderLoadMaxMb)} MB (peak RSS ${Math.round(memory.peakRssMb)} MB)`, met: memory.peakRssMb < 300 })
    goals.push({ goal: 'bounded static cache', measured: `CACHE_BYTES = ${Math.round(memory.cacheBytes / 2 ** 20)} MB (W-TinyLFU eviction)`, met: memory.cacheBytes > 0 })
  }
  return goals
}
