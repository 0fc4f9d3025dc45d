/**
 * Entry of the write process, a child process started by write-pool.ts (through vite-node, as the
 * build itself runs): opens the tree of the release, applies the batches of writes it is sent (each a
 * v8-serialised file that it reads and removes) in the order they come and answers each with the number of bodies it wrote; `finish` answers with its
 * peak RSS and CPU time (the build reports them). After a failed batch it refuses the rest, so a
 * release is never completed past a write that did not happen. It exits when the build disconnects.
 */
import { readFileSync, rmSync } from 'node:fs'
import { deserialize } from 'node:v8'
import { z } from 'zod'
import { createReleaseTree, type ReleaseTree } from './tree.ts'
import { applyWriteBatch, writeBatchSchema } from './write-sink.ts'
import { readPeakRssBytes } from '../cpu.ts'

const requestSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('open'), releaseDir: z.string(), storeDir: z.string().nullable(), recycled: z.boolean() }),
  z.object({ type: z.literal('batch'), id: z.number().int(), file: z.string() }),
  z.object({ type: z.literal('finish') }),
])

let tree: ReleaseTree | null = null
let failed = false

process.on('message', (message) => {
  if (failed) return
  try {
    const request = requestSchema.parse(message)
    if (request.type === 'open') tree = createReleaseTree(request.releaseDir, request.storeDir, request.recycled)
    else if (!tree) throw new Error('no release tree is open')
    else if (request.type === 'batch') {
      const batch = writeBatchSchema.parse(deserialize(readFileSync(request.file)))
      rmSync(request.file)
      process.send!({ type: 'done', id: request.id, written: applyWriteBatch(tree, batch) })
    }
    else {
      const usage = process.resourceUsage()
      process.send!({ type: 'finished', maxRss: readPeakRssBytes(), cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })
    }
  } catch (err) {
    failed = true
    process.send!({ type: 'error', error: err instanceof Error ? err.message : String(err) })
  }
})
process.on('disconnect', () => process.exit(0))
