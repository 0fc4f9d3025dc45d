/**
 * Static reads, shim vs nginx vs raw node, on the same Zipf URL list: plain GETs (200) and
 * conditional GETs whose If-None-Match is the server's own ETag (304).
 */
import { compareServers, type CompareOptions, type Contender } from './compare.ts'
import type { Scenario } from './results-schema.ts'
import { runWrk } from './wrk.ts'

/** Settings of the static-read comparison. */
export type StaticReadOptions = Omit<CompareOptions, 'ifNoneMatch' | 'baseline'> & { warmupSeconds: number; baseline: string; listRequests: number }

/** Longest warm-up per server: a server too slow to pass over the list in this time is measured as it is. */
const MAX_WARMUP_SECONDS = 120

/**
 * Warms every server with at least one full pass over the list (so the shim's cache holds what it
 * can, and nginx's open-file cache and the page cache are as warm), then runs both scenarios.
 */
export async function runStaticReads(contenders: readonly Contender[], options: StaticReadOptions): Promise<Scenario[]> {
  for (const c of contenders) {
    let requests = 0
    let seconds = 0
    while (requests < options.listRequests && seconds < MAX_WARMUP_SECONDS) {
      // Each run continues where the previous one stopped, so together they pass over the whole list.
      const run = await runWrk({ port: c.handle.port, listFile: c.listFile, ifNoneMatch: false, connections: options.connections, durationSeconds: options.warmupSeconds, offset: requests })
      if (run.errors > 0) throw new Error(`${c.handle.name}: ${run.errors} errors during warm-up (${run.badStatus} bad statuses)`)
      requests += run.requests
      seconds += options.warmupSeconds
      options.log(`  warm-up ${c.handle.name}: ${Math.round(run.rps)} req/s (${requests} requests so far)`)
    }
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
