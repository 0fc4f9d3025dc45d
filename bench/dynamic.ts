/**
 * Dynamic endpoints of the shim: each workload at each concurrency, every request distinct within
 * a cycle of the list (a cycle repeats after `distinct` requests), or, for a mix workload, every
 * request new. Each request is one SQLite query batch, except where the static cache answers:
 * bulk-hashes splices the pre-rendered single lookups kept there and, once a request is asked
 * again, answers it from its kept plan; bulk-update answers a repeated request from its kept answer
 * (both measured again with that cache off, in cli.ts). Each workload is first warmed by passing
 * over its list (warmUp), as the static servers are, so a run measures a serving process and not
 * the page cache left cold by a build.
 */
import { compareServers, type CompareOptions } from './compare.ts'
import type { DynamicWorkload } from './dynamic-urls.ts'
import type { Scenario } from './results-schema.ts'
import type { ServerHandle } from './servers.ts'
import { runWrk } from './wrk.ts'
import { readFileSync } from 'node:fs'

/** Settings of the dynamic runs. */
export type DynamicOptions = Omit<CompareOptions, 'ifNoneMatch' | 'baseline' | 'connections'> & { concurrencies: number[]; warmupSeconds: number }

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
    await warmUp(shim, w, options)
    for (const connections of options.concurrencies) {
      const name = `${w.name}-c${connections}`
      options.log(`${name}:`)
      const rows = await compareServers([{ handle: shim, listFile: w.listFile, mix: w.mix }], { ...options, connections, ifNoneMatch: false })
      const how = w.mix === undefined ? `${w.distinct} distinct requests, cycled` : `no request asked twice; warmed by the ${w.distinct} requests of the list`
      scenarios.push({ name, description: `${w.description} (${how})`, connections, durationSeconds: options.durationSeconds, rows })
    }
  }
  return { scenarios, skipped }
}

/** Longest warm-up per workload: a workload too slow to pass over its list in this time is measured as it is. */
const MAX_WARMUP_SECONDS = 60

/**
 * Passes over the workload's list at the highest concurrency (runs of warmupSeconds, continuing
 * where the last stopped): one, or two for a workload whose answers the static cache keeps, which
 * keeps an answer the second time it is asked (StaticCache.admit).
 */
async function warmUp(shim: ServerHandle, w: DynamicWorkload, options: DynamicOptions): Promise<void> {
  const connections = Math.max(...options.concurrencies)
  const passes = w.usesStaticCache ? 2 : 1
  let requests = 0
  for (let seconds = 0; requests < passes * w.distinct && seconds < MAX_WARMUP_SECONDS; seconds += options.warmupSeconds) {
    const run = await runWrk({ port: shim.port, listFile: w.listFile, ifNoneMatch: false, connections, durationSeconds: options.warmupSeconds, offset: requests })
    if (run.errors > 0) throw new Error(`${w.name}: ${run.errors} errors during warm-up (${run.badStatus} bad statuses)`)
    requests += run.requests
  }
  options.log(`  warm-up ${w.name}: ${requests} requests (${w.distinct} distinct, ${passes} pass(es) wanted)`)
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
