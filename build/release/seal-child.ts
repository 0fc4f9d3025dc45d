/**
 * The archive and the snapshot written in child processes (archive-worker.ts, snapshot-worker.ts
 * under vite-node, about 0.4 s to start): the same bytes as writeArchive and writeSnapshot in this
 * one. The seal writes the manifest on the build's thread while the archive (as soon as the body
 * order is sorted) and the snapshot (as soon as the catalog is compacted too) are written beside
 * it; in one process they all shared one thread and the seal ran at about one core
 * (bench/results/BUILD-PROFILE.md).
 */
import type { ChildProcess } from 'node:child_process'
import { z } from 'zod'
import { readPeakRssBytes } from '../cpu.ts'
import type { PreviousArchive } from './archive.ts'
import type { BodyPackFiles } from './body-pack.ts'
import { fileHashSchema, identitySchema, type FileHash } from './hash-file.ts'
import { settle, type Later, type SnapshotSources } from './snapshot.ts'
import { spawnBuildWorker } from '../worker-process.ts'

/** A file's SHA-256 taken ahead with its identity (hash-file.ts HashedAhead), as the snapshot worker takes it. */
export const hashedAheadSchema = fileHashSchema.extend({
  file: z.string().min(1),
  identity: identitySchema,
  recorded: z.boolean().optional(),
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

/**
 * The files the snapshot worker asks the build for, when it was started before they were ready (its
 * argument `-`): the path order (sorted only when asked for, or still being sorted) and the list of
 * names changed since the previous release (written once the manifest is).
 */
const wantSchema = z.enum(['pathOrder', 'nameChanges'])
type Want = z.infer<typeof wantSchema>
const requestSchema = z.object({ want: wantSchema })
/** The answer to it: the file (null: no change list), or why there is none. */
const answerSchema = z.union([z.object({ want: wantSchema, file: z.string().min(1).nullable() }), z.object({ want: wantSchema, error: z.string() })])
type Answer = z.infer<typeof answerSchema>

/** The argument (or the source's JSON field) of a file that comes by message (waitForPathOrder, waitForNameChanges). */
export const BY_MESSAGE = '-'

const labels: Record<Want, string> = { pathOrder: 'the path order', nameChanges: 'the change list' }
const failures: Record<Want, string> = { pathOrder: 'the path order was not sorted', nameChanges: 'the change list was not written' }

/**
 * In the snapshot worker: a file the build sends when it is ready. Asked for at once (the listener
 * is in place before the request goes out, so the answer cannot come first); a file that could not
 * be made rejects with why.
 */
function waitFor(want: Want): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const listener = (message: unknown): void => {
      const answer = answerSchema.safeParse(message)
      if (!answer.success || answer.data.want !== want) return
      process.off('message', listener)
      if ('file' in answer.data) resolve(answer.data.file)
      else reject(new Error(`${failures[want]}: ${answer.data.error}`))
    }
    process.on('message', listener)
    if (!process.send) return reject(new Error(`${labels[want]} comes by message, and this process has no channel to its parent`))
    process.send({ want } satisfies z.infer<typeof requestSchema>)
  })
}

/** In the snapshot worker: the path order, asked for when it is needed (the build may sort it only then). */
export async function waitForPathOrder(): Promise<string> {
  const file = await waitFor('pathOrder')
  if (file === null) throw new Error(`${failures.pathOrder}: the build sent none`)
  return file
}

/** In the snapshot worker: the change list (null: none), asked for once the bodies are in. */
export function waitForNameChanges(): Promise<string | null> {
  return waitFor('nameChanges')
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
  pathOrderFile: Later<string>,
  target: string,
  catalogSha256: string,
  { pack = null, previous = null, catalogCopy = null, nameChanges = null }: SnapshotSources = {},
): Promise<SealWorkerUsage> {
  // A file not ready yet (or made only when asked for) is sent when the worker asks for it, once its bodies are in.
  const later: Partial<Record<Want, () => Promise<string | null>>> = {}
  if (typeof pathOrderFile !== 'string') later.pathOrder = () => settle(pathOrderFile)
  if (nameChanges !== null && typeof nameChanges !== 'string') later.nameChanges = () => settle(nameChanges)
  // A promise's failure is answered to the worker when it asks, not left unhandled meanwhile.
  for (const file of [pathOrderFile, nameChanges]) if (file instanceof Promise) file.catch(() => {})
  const sources = { pack, previous, catalogCopy, nameChanges: later.nameChanges ? BY_MESSAGE : nameChanges }
  const args = [releaseDir, orderFile, later.pathOrder ? BY_MESSAGE : (pathOrderFile as string), target, catalogSha256, JSON.stringify(sources)]
  const answer = (want: Want, send: (message: Answer) => void): void => {
    const file = later[want]
    if (!file) return send({ want, error: `the worker was given it as an argument` })
    file().then(
      (f) => send({ want, file: f }),
      (err: unknown) => send({ want, error: err instanceof Error ? err.message : String(err) }),
    )
  }
  return runSealWorker(new URL('./snapshot-worker.ts', import.meta.url), args, `snapshot worker exited (%s); BUILD_SNAPSHOT_WORKER=0 writes the snapshot in the build's own process`, answer)
}

/** A seal worker running (startSealWorker): its process, and its end. */
export interface RunningWorker {
  child: ChildProcess
  /** Its usage once it exits with 0; else rejects with `failure` and the tail of its stderr. */
  done: Promise<SealWorkerUsage>
}

/**
 * Runs a seal worker to its end; `failure` (with %s for the exit code or signal) heads the error,
 * followed by the tail of its stderr. `answer` answers the snapshot worker's requests for the files
 * it is sent later (waitForPathOrder, waitForNameChanges).
 */
function runSealWorker(entry: URL, args: string[], failure: string, answer?: (want: Want, send: (message: Answer) => void) => void): Promise<SealWorkerUsage> {
  return startSealWorker(entry, args, failure, answer).done
}

/**
 * Starts a worker that ends as runAsSealWorker does (the seal's, and the search index's:
 * search-index.ts), with `args` after `--`; see runSealWorker. The process is returned for a caller
 * that may have to stop it.
 */
export function startSealWorker(entry: URL, args: string[], failure: string, answer?: (want: Want, send: (message: Answer) => void) => void): RunningWorker {
  const child = spawnBuildWorker(entry, ['--', ...args], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  let stderr = ''
  let usage: SealWorkerUsage = { maxRss: 0, cpuSeconds: 0 }
  child.stderr!.on('data', (d: Buffer) => {
    // The tail is what says why; a runaway worker must not grow this without bound.
    stderr = (stderr + d.toString()).slice(-4000)
  })
  child.on('message', (message) => {
    const request = requestSchema.safeParse(message)
    if (request.success) {
      // A worker gone meanwhile needs no answer (its exit says why).
      answer?.(request.data.want, (reply) => {
        if (child.connected) child.send(reply)
      })
      return
    }
    usage = usageSchema.parse(message)
  })
  const done = new Promise<SealWorkerUsage>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code === 0) resolve(usage)
      else reject(new Error(`${failure.replace('%s', String(signal ?? code))}\n${stderr.trim()}`))
    })
  })
  return { child, done }
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
