/**
 * Entry of the archive worker, a child process started by archive-child.ts (through vite-node, as
 * the build itself runs): writes the release's tar.gz with writeArchive, so reading 1.4 million
 * bodies and framing 5 million tar entries happen on the second core while the build's own thread
 * writes the snapshot. Sends its peak RSS and CPU time when done; a failure goes to stderr and a
 * non-zero exit.
 */
import { z } from 'zod'
import { readPeakRssBytes } from '../cpu.ts'
import { writeArchive } from './archive.ts'

// releaseDir, orderFile, target, then the body pack and its sorted index, or neither (read the tree).
const argsSchema = z.union([z.tuple([z.string().min(1), z.string().min(1), z.string().min(1)]), z.tuple([z.string().min(1), z.string().min(1), z.string().min(1), z.string().min(1), z.string().min(1)])])

const [releaseDir, orderFile, target, pack, sortedIndex] = argsSchema.parse(process.argv.slice(2).filter((a) => a !== '--'))
try {
  await writeArchive(releaseDir, orderFile, target, pack && sortedIndex ? { pack, sortedIndex } : null)
  const usage = process.resourceUsage()
  process.send?.({ maxRss: readPeakRssBytes(), cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })
  process.disconnect?.()
} catch (err) {
  process.stderr.write(`archive worker: ${String((err as Error).stack ?? err)}\n`)
  process.exitCode = 1
  process.disconnect?.()
}
