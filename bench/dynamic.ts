/**
 * Dynamic endpoints of the shim: each workload at each concurrency, every request distinct within
 * a cycle of the list. The shim has no result cache (every request is one SQLite query batch), so
 * there is nothing to switch off or on; a cycle of the list repeats after `distinct` requests.
 */
import { compareServers, type CompareOptions } from './compare.ts'
import type { DynamicWorkload } from './dynamic-urls.ts'
import type { Scenario } from './results-schema.ts'
import type { ServerHandle } from './servers.ts'

/** Settings of the dynamic runs. */
export type DynamicOptions = Omit<CompareOptions, 'ifNoneMatch' | 'baseline' | 'connections'> & { concurrencies: number[] }

/** Runs every workload at every concurrency against the shim. */
export async function runDynamic(shim: ServerHandle, workloads: readonly DynamicWorkload[], options: DynamicOptions): Promise<Scenario[]> {
  const scenarios: Scenario[] = []
  for (const w of workloads) {
    for (const connections of options.concurrencies) {
      const name = `${w.name}-c${connections}`
      options.log(`${name}:`)
      const rows = await compareServers([{ handle: shim, listFile: w.listFile }], { ...options, connections, ifNoneMatch: false })
      scenarios.push({ name, description: `${w.description} (${w.distinct} distinct requests, cycled)`, connections, durationSeconds: options.durationSeconds, rows })
    }
  }
  return scenarios
}
