/**
 * The load workers seen from the build: child processes (load-worker.ts under vite-node, about
 * 0.4 s to start) that parse chunks of record files on the other core while the main thread
 * parses others and feeds SQLite. `run` resolves with the same RecordChunk that parseRecordChunk
 * would return here.
 */
import type { ChildProcess } from 'node:child_process'
import { z } from 'zod'
import { recordChunkSchema, type RecordChunk, type RecordKindName } from './load-records.ts'
import { spawnBuildWorker } from './worker-process.ts'

const replySchema = z.union([
  z.object({ id: z.number().int(), chunk: recordChunkSchema, maxRss: z.number(), cpuSeconds: z.number() }),
  z.object({ id: z.number().int(), error: z.string() }),
])

/** Running load workers. */
export interface LoadPool {
  /** Worker processes. */
  readonly size: number
  /** Chunks sent and not yet answered, over all the workers. */
  readonly busy: number
  /** Parses `files` of `kind` in the worker with the fewest chunks in hand. */
  run(kind: RecordKindName, files: readonly string[]): Promise<RecordChunk>
  /** Stops the workers; returns their peak RSS summed, in bytes (their memory adds to the build's), and CPU time summed. */
  close(): Promise<{ maxRss: number; cpuSeconds: number }>
}

/** Starts `workers` load workers (at least one) for the catalog in `dataDir`. */
export function createLoadPool(dataDir: string, workers = 1): LoadPool {
  const all = Array.from({ length: Math.max(1, workers) }, () => startLoadWorker(dataDir))
  return {
    size: all.length,
    get busy() {
      return all.reduce((n, w) => n + w.busy, 0)
    },
    run(kind, files) {
      const idlest = all.reduce((a, b) => (b.busy < a.busy ? b : a))
      return idlest.run(kind, files)
    },
    async close() {
      const usages = await Promise.all(all.map((w) => w.close()))
      return { maxRss: usages.reduce((n, u) => n + u.maxRss, 0), cpuSeconds: usages.reduce((n, u) => n + u.cpuSeconds, 0) }
    },
  }
}

/** One load worker process. */
function startLoadWorker(dataDir: string): Omit<LoadPool, 'size'> {
  const child: ChildProcess = spawnBuildWorker(new URL('./load-worker.ts', import.meta.url), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone: the rows are strings, copied without a JSON round trip.
    serialization: 'advanced',
  })
  const waiting = new Map<number, { resolve(chunk: RecordChunk): void; reject(err: Error): void }>()
  let next = 0
  let failure: Error | null = null
  const usage = { maxRss: 0, cpuSeconds: 0 }
  const failAll = (err: Error): void => {
    failure ??= err
    for (const w of waiting.values()) w.reject(failure)
    waiting.clear()
  }
  child.on('message', (message) => {
    const reply = replySchema.parse(message)
    const w = waiting.get(reply.id)
    if (!w) return
    waiting.delete(reply.id)
    if ('error' in reply) w.reject(new Error(`load worker: ${reply.error}`))
    else {
      usage.maxRss = Math.max(usage.maxRss, reply.maxRss)
      usage.cpuSeconds = Math.max(usage.cpuSeconds, reply.cpuSeconds)
      w.resolve(reply.chunk)
    }
  })
  child.on('error', (err) => failAll(err))
  child.on('exit', (code, signal) => failAll(new Error(`load worker exited (${signal ?? code}); BUILD_LOAD_WORKER=0 builds on the main thread alone`)))
  return {
    get busy() {
      return waiting.size
    },
    run(kind, files) {
      if (failure) return Promise.reject(failure)
      const id = next++
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        child.send({ id, kind, dataDir, files })
      })
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
        child.disconnect()
        await exited
      }
      return usage
    },
  }
}
