/** Start-up of the shim: time from spawn to the first 200, and resident memory once started. */
import { readMemoryMb } from './proc.ts'
import { startShim, type ShimStart } from './servers.ts'
import { summarize } from './stats.ts'

/** Starts and stops the shim `times` times; start-up times and the RSS 1 s after each start. */
export async function measureStartup(options: ShimStart, times: number, log: (line: string) => void): Promise<{ startMs: ReturnType<typeof summarize>; rssAfterStartMb: number }> {
  const starts: number[] = []
  const rss: number[] = []
  for (let i = 0; i < times; i++) {
    const shim = await startShim(options)
    try {
      await new Promise((r) => setTimeout(r, 1000))
      starts.push(shim.startMs)
      rss.push(readMemoryMb(shim.pid)?.rssMb ?? Number.NaN)
      log(`  start ${i + 1}/${times}: first answer after ${Math.round(shim.startMs)} ms, RSS ${Math.round(rss[rss.length - 1]!)} MB`)
    } finally {
      await shim.stop()
    }
  }
  return { startMs: summarize(starts), rssAfterStartMb: Math.max(...rss) }
}
