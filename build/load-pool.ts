/**
 * The load worker seen from the build: one child process (load-worker.ts under vite-node, about
 * 0.4 s to start) that parses chunks of record files on the second core while the main thread
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

/** A running load worker. */
export interface LoadPool {
  /** Chunks sent and not yet answered. */
  readonly busy: number
  /** Parses `files` of `kind` in the worker. */
  run(kind: RecordKindName, files: readonly string[]): Promise<RecordChunk>
  /** Stops the worker; returns its peak RSS in bytes (its memory adds to the build's) and CPU time. */
  close(): Promise<{ maxRss: number; cpuSeconds: number }>
}

/** Starts the load worker for the catalog in `dataDir`. */
export function createLoadPool(dataDir: string): LoadPool {
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
