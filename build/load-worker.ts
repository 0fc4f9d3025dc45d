/**
 * Entry of the load worker, a child process started by load-pool.ts (through vite-node, as the
 * build itself runs): parses and validates the chunks of record files it is sent on its IPC channel
 * and sends back each chunk's rows and problems (with its peak RSS and CPU time so far: the build reports them). It holds nothing between chunks and exits when the
 * build disconnects.
 */
import { z } from 'zod'
import { readPeakRssBytes } from './cpu.ts'
import { parseRecordChunk, recordKinds, type RecordKindName } from './load-records.ts'

const requestSchema = z.object({
  id: z.number().int(),
  kind: z.enum(Object.keys(recordKinds) as [RecordKindName, ...RecordKindName[]]),
  dataDir: z.string(),
  files: z.array(z.string()),
})

process.on('message', (message) => {
  const request = requestSchema.parse(message)
  try {
    const chunk = parseRecordChunk(request.kind, request.dataDir, request.files)
    const usage = process.resourceUsage()
    process.send!({ id: request.id, chunk, maxRss: readPeakRssBytes(), cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6 })
  } catch (err) {
    process.send!({ id: request.id, error: String((err as Error).stack ?? err) })
  }
})
process.on('disconnect', () => process.exit(0))
