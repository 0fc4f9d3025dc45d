/**
 * Entry of the write process, a child process started by write-pool.ts (through vite-node, as the
 * build itself runs): opens the release writer, applies the batches of writes it is sent in the
 * order they come, answers each, and on `finish` closes the manifest and sends the totals (with its
 * peak RSS and CPU time: the build reports them). After a failed batch it refuses the rest, so a
 * release is never completed past a write that did not happen. It exits when the build disconnects.
 */
import { z } from 'zod'
import { applyWriteBatch, writeBatchSchema } from './write-sink.ts'
import { createReleaseWriter, type ReleaseWriter } from './writer.ts'

const requestSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('open'), releaseDir: z.string(), storeDir: z.string().nullable() }),
  z.object({ type: z.literal('batch'), id: z.number().int(), batch: writeBatchSchema }),
  z.object({ type: z.literal('finish') }),
])

let writer: ReleaseWriter | null = null
let failed = false

process.on('message', (message) => {
  if (failed) return
  try {
    const request = requestSchema.parse(message)
    if (request.type === 'open') writer = createReleaseWriter(request.releaseDir, () => {}, request.storeDir)
    else if (!writer) throw new Error('no release writer is open')
    else if (request.type === 'batch') {
      applyWriteBatch(writer, request.batch)
      process.send!({ type: 'done', id: request.id })
    } else {
      const stats = writer.finish()
      const usage = process.resourceUsage()
      process.send!({ type: 'finished', stats, maxRss: usage.maxRSS * 1024, cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })
    }
  } catch (err) {
    failed = true
    process.send!({ type: 'error', error: err instanceof Error ? err.message : String(err) })
  }
})
process.on('disconnect', () => process.exit(0))
