/**
 * Dynamic endpoints of the shim: each workload at each concurrency, every request distinct within
 * a cycle of the list. The shim has no result cache (each request is one SQLite query batch, or for
 * bulk-hashes the pre-rendered single lookups read through the static cache), so there is nothing
 * to switch off or on; a cycle of the list repeats after `distinct` requests.
 */
import { compareServers, type CompareOptions } from './compare.ts'
import type { DynamicWorkload } from './dynamic-urls.ts'
import type { Scenario } from './results-schema.ts'
import type { ServerHandle } from './servers.ts'
import { readFileSync } from 'node:fs'

/** Settings of the dynamic runs. */
export type DynamicOptions = Omit<CompareOptions, 'ifNoneMatch' | 'baseline' | 'connections'> & { concurrencies: number[] }

/** Runs every workload at every concurrency against the shim. */
export async function runDynamic(shim: ServerHandle, workloads: readonly DynamicWorkload[], options: DynamicOptions): Promise<{ scenarios: Scenario[]; skipped: string[] }> {
  const scenarios: Scenario[] = []
  const skipped: string[] = []
  for (const w of workloads) {
    // A workload the release cannot answer (e.g. a search index older than the shim) is reported, not measured.
    const problem = await findAnswerProblem(shim, w)
    if (problem) {
      options.log(`${w.name}: SKIPPED, ${problem}`)
      skipped.push(`${w.name} not measured: ${problem}`)
      continue
    }
    for (const connections of options.concurrencies) {
      const name = `${w.name}-c${connections}`
      options.log(`${name}:`)
      const rows = await compareServers([{ handle: shim, listFile: w.listFile }], { ...options, connections, ifNoneMatch: false })
      scenarios.push({ name, description: `${w.description} (${w.distinct} distinct requests, cycled)`, connections, durationSeconds: options.durationSeconds, rows })
    }
  }
  return { scenarios, skipped }
}

/** Before load: the first requests of the list must answer 200 (a 4xx/5xx run would measure errors). */
async function findAnswerProblem(shim: ServerHandle, w: DynamicWorkload): Promise<string | null> {
  for (const urlPath of readFileSync(w.listFile, 'utf8').trim().split('\n').slice(0, 8)) {
    const res = await fetch(`http://127.0.0.1:${shim.port}${urlPath}`)
    const text = await res.text()
    if (res.status !== 200) return `${urlPath} answered ${res.status}: ${text.slice(0, 200)}`
  }
  return null
}
