/**
 * What the renderers (build/static/*) write a release through: the release writer on this thread,
 * or the write process on the second core (write-pool.ts), which applies the same writes in the
 * same order, so the tree, manifest.tsv and every sealed byte are the same either way. The writes
 * travel in batches (writeBatchSchema): the names of each body, its bytes packed into one buffer,
 * and the objects to copy, in write order.
 */
import { z } from 'zod'
import { createReleaseWriter, type ReleaseWriter, type WriteStats } from './writer.ts'

/** CPU and peak memory of the write process (it adds to the build's). */
export interface WriterUsage {
  maxRss: number
  cpuSeconds: number
}

/** The release writer as the renderers see it. */
export interface ReleaseSink {
  /** Writes bytes under the first name and hard-links the others to it (ReleaseWriter.write). */
  write(names: readonly string[], bytes: Buffer): void
  /** Copies a blob from the source catalog under a name (ReleaseWriter.copy). */
  copy(name: string, source: string): void
  /** Resolves when the writes queued so far are few enough to render more: call it once per batch. */
  drain(): Promise<void>
  /** Completes every write and closes the manifest; returns the totals and the write process's usage, if any. */
  finish(): Promise<{ stats: WriteStats; usage: WriterUsage | null }>
  /** Stops without finishing (the build failed): nothing is written into the release after it resolves. */
  close(): Promise<void>
}

/**
 * A batch of writes in order. Op i has `counts[i]` names (taken in turn from `names`); `sizes[i]`
 * is the length of its body (taken in turn from `bytes`), or -1 for a copy of the next `sources`.
 */
export const writeBatchSchema = z.object({
  names: z.array(z.string()),
  counts: z.array(z.number().int().positive()),
  sizes: z.array(z.number().int().min(-1)),
  sources: z.array(z.string()),
  bytes: z.instanceof(Uint8Array),
})

/** A batch of writes (writeBatchSchema). */
export type WriteBatch = z.infer<typeof writeBatchSchema>

/** An empty batch to fill with addWrite/addCopy. */
export function createWriteBatch(): WriteBatch & { chunks: Buffer[]; size: number } {
  return { names: [], counts: [], sizes: [], sources: [], bytes: new Uint8Array(0), chunks: [], size: 0 }
}

/** Applies a batch's writes to a release writer, in order. */
export function applyWriteBatch(writer: ReleaseWriter, batch: WriteBatch): void {
  let name = 0
  let offset = 0
  let source = 0
  const bytes = Buffer.from(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength)
  for (const [i, count] of batch.counts.entries()) {
    const size = batch.sizes[i]!
    if (size < 0) writer.copy(batch.names[name]!, batch.sources[source++]!)
    else {
      writer.write(batch.names.slice(name, name + count), bytes.subarray(offset, offset + size))
      offset += size
    }
    name += count
  }
  if (name !== batch.names.length || offset !== bytes.length || source !== batch.sources.length) {
    throw new Error(`malformed write batch: ${batch.counts.length} ops for ${batch.names.length} names, ${bytes.length} bytes`)
  }
}

/** A sink writing on this thread (BUILD_WRITE_WORKER=0, or a build without a second process). */
export function createLocalSink(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null): ReleaseSink {
  const writer = createReleaseWriter(releaseDir, onProgress, storeDir)
  return {
    write: (names, bytes) => writer.write(names, bytes),
    copy: (name, source) => writer.copy(name, source),
    drain: async () => {},
    finish: async () => ({ stats: writer.finish(), usage: null }),
    close: async () => {},
  }
}
