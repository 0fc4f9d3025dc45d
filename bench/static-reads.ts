/**
 * Static reads, shim vs nginx vs raw node, on the same Zipf URL list: plain GETs (200) and
 * conditional GETs whose If-None-Match is the server's own ETag (304).
 */
import { compareServers, type CompareOptions, type Contender } from './compare.ts'
import type { Scenario } from './results-schema.ts'
import { runWrk } from './wrk.ts'

/** Settings of the static-read comparison. */
export type StaticReadOptions = Omit<CompareOptions, 'ifNoneMatch' | 'baseline'> & { warmupSeconds: number; baseline: string }

/** Warms every server (one pass over the list fills the shim's cache), then runs both scenarios. */
export async function runStaticReads(contenders: readonly Contender[], options: StaticReadOptions): Promise<Scenario[]> {
  for (const c of contenders) {
    const run = await runWrk({ port: c.handle.port, listFile: c.listFile, ifNoneMatch: false, connections: options.connections, durationSeconds: options.warmupSeconds })
    options.log(`  warm-up ${c.handle.name}: ${Math.round(run.rps)} req/s, ${run.errors} errors`)
  }
  const scenarios: Scenario[] = []
  for (const ifNoneMatch of [false, true]) {
    const name = ifNoneMatch ? 'static-304' : 'static-200'
    options.log(`${name}:`)
    const rows = await compareServers(contenders, { ...options, ifNoneMatch })
    scenarios.push({
      name,
      description: ifNoneMatch
        ? 'Zipf mix of project, version and hash-lookup URLs, each with If-None-Match = the server\'s ETag (empty 304s)'
        : 'Zipf mix of project, version and hash-lookup URLs, plain GET (200 with the body)',
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      rows,
    })
  }
  return scenarios
}
