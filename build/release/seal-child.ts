/**
 * The archive and the snapshot written in child processes (archive-worker.ts, snapshot-worker.ts
 * under vite-node, about 0.4 s to start): the same bytes as writeArchive and writeSnapshot in this
 * one. The seal writes the manifest on the build's thread while the archive (as soon as the body
 * order is sorted) and the snapshot (as soon as the catalog is compacted too) are written beside
 * it; in one process they all shared one thread and the seal ran at about one core
 * (bench/results/BUILD-PROFILE.md).
 */
import { z } from 'zod'
import { readPeakRssBytes } from '../cpu.ts'
import type { PreviousArchive } from './archive.ts'
import type { BodyPackFiles } from './body-pack.ts'
import type { FileHash } from './hash-file.ts'
import type { SnapshotSources } from './snapshot.ts'
import { spawnBuildWorker } from '../worker-process.ts'

/** A file's SHA-256 and size (hash-file.ts FileHash) as a worker sends or takes it. */
export const fileHashSchema = z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative() })

/** A file's SHA-256 taken ahead with its identity (hash-file.ts HashedAhead), as the snapshot worker takes it. */
export const hashedAheadSchema = fileHashSchema.extend({
  file: z.string().min(1),
  identity: z.object({ dev: z.string(), ino: z.string(), size: z.string(), mtimeNs: z.string(), ctimeNs: z.string() }),
})

const usageSchema = z.object({
  maxRss: z.number(),
  cpuSeconds: z.number(),
  written: fileHashSchema.optional(),
  /** A line for the build's log about what was written (the archive: how many members it copied). */
  note: z.string().optional(),
})

/** What a worker used, for the build's log, and the SHA-256 and size of what it wrote when it hashed it. */
export type SealWorkerUsage = z.infer<typeof usageSchema>

/** The snapshot worker's request for the path order, when it was started before the order was sorted (its argument `-`). */
const pathOrderRequestSchema = z.object({ want: z.literal('pathOrder') })
/** The answer to it: the sorted file, or why there is none. */
const pathOrderAnswerSchema = z.union([z.object({ pathOrder: z.string().min(1) }), z.object({ pathOrderError: z.string() })])

/** The path-order argument of a snapshot worker whose path order comes by message (waitForPathOrder). */
export const PATH_ORDER_BY_MESSAGE = '-'

/**
 * In the snapshot worker: the path order the build sends once it is sorted. Asked for at once (the
 * listener is in place before the request goes out, so the answer cannot come first); a sort that
 * failed rejects with its message.
 */
export function waitForPathOrder(): Promise<string> {
  return new Promise((resolve, reject) => {
    const listener = (message: unknown): void => {
      const answer = pathOrderAnswerSchema.safeParse(message)
      if (!answer.success) return
      process.off('message', listener)
      if ('pathOrder' in answer.data) resolve(answer.data.pathOrder)
      else reject(new Error(`the path order was not sorted: ${answer.data.pathOrderError}`))
    }
    process.on('message', listener)
    if (!process.send) return reject(new Error('the path order comes by message, and this process has no channel to its parent'))
    process.send({ want: 'pathOrder' } satisfies z.infer<typeof pathOrderRequestSchema>)
  })
}

/**
 * Writes the archive of `releaseDir` to `target` in a child process (writeArchive's arguments);
 * resolves with its usage and `written`, the archive's SHA-256 and size; rejects with its error output when it fails.
 */
export function writeArchiveInChild(
  releaseDir: string,
  orderFile: string,
  target: string,
  pack: BodyPackFiles | null = null,
  previous: PreviousArchive | null = null,
): Promise<SealWorkerUsage> {
  const args = [releaseDir, orderFile, target, JSON.stringify({ pack, previous })]
  return runSealWorker(new URL('./archive-worker.ts', import.meta.url), args, `archive worker exited (%s); BUILD_ARCHIVE_WORKER=0 writes the archive in the build's own process`)
}

/**
 * Writes the snapshot of `releaseDir` to `target` in a child process (writeSnapshot's arguments);
 * resolves with its usage and `written`, the file's SHA-256 and size; rejects with its error output when it fails.
 */
export function writeSnapshotInChild(
  releaseDir: string,
  orderFile: string,
  pathOrderFile: string | Promise<string>,
  target: string,
  catalogSha256: string,
  { pack = null, previous = null, catalogCopy = null }: SnapshotSources = {},
): Promise<SealWorkerUsage> {
  // A path order still being sorted is sent when the worker asks for it, once its bodies are in.
  const byMessage = typeof pathOrderFile !== 'string'
  // Its failure is answered to the worker when it asks, not left unhandled meanwhile.
  if (byMessage) pathOrderFile.catch(() => {})
  const args = [releaseDir, orderFile, byMessage ? PATH_ORDER_BY_MESSAGE : pathOrderFile, target, catalogSha256, JSON.stringify({ pack, previous, catalogCopy })]
  const answer = byMessage
    ? (send: (message: z.infer<typeof pathOrderAnswerSchema>) => void): void => {
        pathOrderFile.then(
          (file) => send({ pathOrder: file }),
          (err: unknown) => send({ pathOrderError: err instanceof Error ? err.message : String(err) }),
        )
      }
    : undefined
  return runSealWorker(new URL('./snapshot-worker.ts', import.meta.url), args, `snapshot worker exited (%s); BUILD_SNAPSHOT_WORKER=0 writes the snapshot in the build's own process`, answer)
}

/**
 * Runs a seal worker to its end; `failure` (with %s for the exit code or signal) heads the error,
 * followed by the tail of its stderr. `answerPathOrder` answers the snapshot worker's request for
 * the path order (waitForPathOrder).
 */
function runSealWorker(
  entry: URL,
  args: string[],
  failure: string,
  answerPathOrder?: (send: (message: z.infer<typeof pathOrderAnswerSchema>) => void) => void,
): Promise<SealWorkerUsage> {
  const child = spawnBuildWorker(entry, ['--', ...args], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  let stderr = ''
  let usage: SealWorkerUsage = { maxRss: 0, cpuSeconds: 0 }
  child.stderr!.on('data', (d: Buffer) => {
    // The tail is what says why; a runaway worker must not grow this without bound.
    stderr = (stderr + d.toString()).slice(-4000)
  })
  child.on('message', (message) => {
    if (pathOrderRequestSchema.safeParse(message).success) {
      // A worker gone meanwhile needs no answer (its exit says why).
      answerPathOrder?.((answer) => {
        if (child.connected) child.send(answer)
      })
      return
    }
    usage = usageSchema.parse(message)
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code === 0) resolve(usage)
      else reject(new Error(`${failure.replace('%s', String(signal ?? code))}\n${stderr.trim()}`))
    })
  })
}

/** The end of a worker's entry: reports its usage, or its error on stderr with a non-zero exit. */
export async function runAsSealWorker(name: string, work: () => Promise<(FileHash & { note?: string }) | void>): Promise<void> {
  try {
    const result = (await work()) ?? undefined
    const written = result ? { sha256: result.sha256, size: result.size } : undefined
    const usage = process.resourceUsage()
    process.send?.({ maxRss: readPeakRssBytes(), cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6, written, note: result?.note } satisfies SealWorkerUsage)
  } catch (err) {
    process.stderr.write(`${name}: ${String((err as Error).stack ?? err)}\n`)
    process.exitCode = 1
  }
  process.disconnect?.()
}
