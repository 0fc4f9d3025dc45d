/**
 * What the renderers (build/static/*) write a release through: the release writer on this thread,
 * or with the write process on the second core (write-pool.ts). Either way the manifest is recorded
 * on this thread in write order and every file gets the same bytes and content mtime, so the tree,
 * manifest.tsv and every sealed byte are the same. The tree writes travel in batches
 * (writeBatchSchema): the names and SHA-256 of each body, its bytes packed into one buffer, and the
 * objects to copy.
 */
import { z } from 'zod'
import type { ReleaseTree } from './tree.ts'
import { createReleaseWriter, type RecorderOptions, type WriteStats } from './writer.ts'

/** CPU and peak memory of the write process (it adds to the build's). */
export interface WriterUsage {
  maxRss: number
  cpuSeconds: number
  /** Batches of tree writes applied by the write process and by the main thread. */
  batches: { process: number; main: number }
}

/** The release writer as the renderers see it. */
export interface ReleaseSink {
  /**
   * Writes bytes under the first name and hard-links the others to it (ReleaseWriter.write).
   * `stored`: the live release has this body, so the content store has it too; over a recycled
   * tree, whose names are put at the seal, nothing is then done in the tree for it. Returns the
   * body's SHA-256.
   */
  write(names: readonly string[], bytes: Buffer, stored?: boolean): string
  /**
   * Names a body of the live release by its SHA-256 and size without its bytes (ReleaseWriter.writeStored):
   * the content store has it. It goes into the manifest, not into the body pack (the seal reads it
   * from the previous snapshot or the store, body-pack.ts).
   */
  writeStored(names: readonly string[], sha256: string, size: number): void
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
 * A batch of tree writes (tree.ts) in order. Op i has `counts[i]` names (taken in turn from `names`)
 * and the SHA-256 `hashes[i]`; `sizes[i]` is the length of its body (taken in turn from `bytes`),
 * -1 for a copy of the next of `sources`, of the next of `copySizes` bytes, or -2 for a body in the
 * content store, of the next of `storedSizes` bytes (linked, never written).
 */
export const writeBatchSchema = z.object({
  names: z.array(z.string()),
  counts: z.array(z.number().int().positive()),
  hashes: z.array(z.string().regex(/^[0-9a-f]{64}$/)),
  sizes: z.array(z.number().int().min(-2)),
  sources: z.array(z.string()),
  copySizes: z.array(z.number().int().nonnegative()),
  storedSizes: z.array(z.number().int().nonnegative()),
  bytes: z.instanceof(Uint8Array),
})

/** A batch of tree writes (writeBatchSchema). */
export type WriteBatch = z.infer<typeof writeBatchSchema>

/** A batch being filled: its bodies are packed into `bytes` when it is sent (packWriteBatch). */
export type OpenWriteBatch = Omit<WriteBatch, 'bytes'> & { chunks: Uint8Array[]; size: number }

/** An empty batch to fill. */
export function createWriteBatch(): OpenWriteBatch {
  return { names: [], counts: [], hashes: [], sizes: [], sources: [], copySizes: [], storedSizes: [], chunks: [], size: 0 }
}

/** The batch with its bodies packed into one buffer (one copy, one message). */
export function packWriteBatch(batch: OpenWriteBatch): WriteBatch {
  const { names, counts, hashes, sizes, sources, copySizes, storedSizes, chunks } = batch
  return { names, counts, hashes, sizes, sources, copySizes, storedSizes, bytes: Buffer.concat(chunks) }
}

/** Applies a batch to a release tree, in order; returns how many bodies it wrote (the others were in the store). */
export function applyWriteBatch(tree: ReleaseTree, batch: WriteBatch): number {
  let name = 0
  let offset = 0
  let source = 0
  let stored = 0
  let written = 0
  for (const [i, count] of batch.counts.entries()) {
    const size = batch.sizes[i]!
    const sha256 = batch.hashes[i]!
    if (size === -2) tree.putStored(batch.names.slice(name, name + count), sha256, batch.storedSizes[stored++]!)
    else if (size < 0) {
      if (tree.putCopy(batch.names[name]!, batch.sources[source]!, sha256, batch.copySizes[source]!)) written++
      source++
    } else {
      if (tree.put(batch.names.slice(name, name + count), batch.bytes.subarray(offset, offset + size), sha256)) written++
      offset += size
    }
    name += count
  }
  if (
    name !== batch.names.length ||
    offset !== batch.bytes.length ||
    source !== batch.sources.length ||
    stored !== batch.storedSizes.length ||
    batch.hashes.length !== batch.counts.length
  ) {
    throw new Error(`malformed write batch: ${batch.counts.length} ops for ${batch.names.length} names, ${batch.bytes.length} bytes`)
  }
  return written
}

/** A sink writing on this thread (BUILD_WRITE_WORKER=0, or a build without a second process). */
export function createLocalSink(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null, options: RecorderOptions = {}, recycled = false): ReleaseSink {
  const writer = createReleaseWriter(releaseDir, onProgress, storeDir, options, recycled)
  return {
    write: (names, bytes, stored) => writer.write(names, bytes, stored),
    writeStored: (names, sha256, size) => writer.writeStored(names, sha256, size),
    copy: (name, source) => writer.copy(name, source),
    drain: async () => {},
    finish: async () => ({ stats: await writer.finish(), usage: null }),
    close: () => writer.close(),
  }
}
