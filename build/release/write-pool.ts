/**
 * The release writer on both cores: the tree's system calls (open, write, link, stat, mkdir,
 * utimes: most of the render phase on one thread, BUILD-PROFILE.md) go in batches of about
 * BATCH_BYTES to a write process (write-worker.ts under vite-node, as the load worker) while this
 * thread queries SQLite and renders. At most IN_FLIGHT batches are sent and unanswered; past QUEUED
 * more waiting here, this thread writes batches itself (and all it can once rendering is over), so
 * both cores write when rendering is the lighter part, and the bytes queued stay bounded (≈ 12 MB
 * and one render batch) whatever the catalog size. Each body's SHA-256 and its
 * manifest lines are recorded here, in write order, whoever writes its files (write-sink.ts). A
 * failed batch or a dead process fails every later call with a message naming BUILD_WRITE_WORKER=0,
 * the way to write on the main thread alone.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { serialize } from 'node:v8'
import { z } from 'zod'
import { createReleaseTree } from './tree.ts'
import { applyWriteBatch, createWriteBatch, packWriteBatch, type ReleaseSink, type WriteBatch } from './write-sink.ts'
import { createManifestRecorder, describeCopy, hashBody, type RecorderOptions, type WriteStats } from './writer.ts'
import { spawnBuildWorker } from '../worker-process.ts'

/**
 * Release-relative folder of the batches on their way to the process. A batch goes as a file and
 * its message only names it: a message of 512 KB would cross the IPC socket a buffer at a time, each
 * waiting for this thread's event loop, which is busy rendering, and the process would sit idle.
 */
const SPOOL_DIR = '.write-batches'
/** Body bytes (or ops) that make a batch: large enough that a message costs little beside its writes. */
const BATCH_BYTES = 512 * 1024
const BATCH_OPS = 2048
/** Batches sent to the process and not yet answered (a render batch of versions is ≈ 8 of them). */
const IN_FLIGHT = 16
/** Batches waiting here for room at the process before this thread writes them itself. */
const QUEUED = 8

const replySchema = z.union([
  z.object({ type: z.literal('done'), id: z.number().int(), written: z.number().int() }),
  z.object({ type: z.literal('finished'), maxRss: z.number(), cpuSeconds: z.number() }),
  z.object({ type: z.literal('error'), error: z.string() }),
])
type FinishedReply = Extract<z.infer<typeof replySchema>, { type: 'finished' }>

/** A release sink whose tree writes run in the write process and here; `pid` is the process's. */
export type WritePool = ReleaseSink & { readonly pid: number | undefined }

/** Starts the write process for the release in `releaseDir` (see createReleaseWriter for `storeDir` and `recycled`). */
export function createWritePool(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null, options: RecorderOptions = {}, recycled = false): WritePool {
  const child: ChildProcess = spawnBuildWorker(new URL('./write-worker.ts', import.meta.url), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const spool = path.join(releaseDir, SPOOL_DIR)
  mkdirSync(spool)
  const recorder = createManifestRecorder(releaseDir, onProgress, options)
  const tree = createReleaseTree(releaseDir, storeDir, recycled)
  let batch = createWriteBatch()
  const queue: WriteBatch[] = []
  let next = 0
  let applied = 0
  let written = 0
  let local = 0
  let failure: Error | null = null
  let idle: { resolve(): void; reject(err: Error): void } | null = null
  let finished: { resolve(reply: FinishedReply): void; reject(err: Error): void } | null = null
  let exited = false
  let done = false
  let complete = false
  let markExited: () => void = () => {}
  const exit = new Promise<void>((resolve) => (markExited = resolve))

  const fail = (err: Error): void => {
    failure ??= err
    idle?.reject(failure)
    finished?.reject(failure)
    idle = finished = null
  }
  child.on('message', (message) => {
    const reply = replySchema.safeParse(message)
    if (!reply.success) return fail(new Error(`write process: unexpected reply ${JSON.stringify(message).slice(0, 200)}`))
    const r = reply.data
    if (r.type === 'done') {
      applied = r.id + 1
      written += r.written
      if (applied === next) idle?.resolve()
    } else if (r.type === 'finished') finished?.resolve(r)
    else fail(new Error(`write process: ${r.error}; BUILD_WRITE_WORKER=0 writes the release on the main thread alone`))
  })
  child.on('error', (err) => fail(err))
  child.on('exit', (code, signal) => {
    exited = true
    markExited()
    if (!done) fail(new Error(`write process exited (${signal ?? code}); BUILD_WRITE_WORKER=0 writes the release on the main thread alone`))
  })
  child.send({ type: 'open', releaseDir, storeDir, recycled })

  const send = (): void => {
    while (queue.length > 0 && next - applied < IN_FLIGHT) {
      const id = next++
      const file = path.join(spool, String(id))
      writeFileSync(file, serialize(queue.shift()!))
      child.send({ type: 'batch', id, file })
    }
  }
  const applyOne = (): void => {
    written += applyWriteBatch(tree, queue.shift()!)
    local++
  }
  const seal = (): void => {
    if (batch.counts.length === 0) return
    queue.push(packWriteBatch(batch))
    batch = createWriteBatch()
    send()
  }
  // The process's answers arrive only when this thread yields: a turn of the event loop first.
  const settle = async (): Promise<void> => {
    await new Promise((resolve) => setImmediate(resolve))
    if (failure) throw failure
    send()
  }
  const add = (names: readonly string[], sha256: string): void => {
    if (failure) throw failure
    batch.names.push(...names)
    batch.counts.push(names.length)
    batch.hashes.push(sha256)
    if (batch.size >= BATCH_BYTES || batch.counts.length >= BATCH_OPS) seal()
  }

  return {
    get pid() {
      return child.pid
    },
    write(names, bytes, stored) {
      const sha256 = hashBody(bytes)
      recorder.record(names, sha256, bytes.length, false, bytes)
      // Over a recycled tree the process would only find a stored body in the store: not sent.
      if (stored && recycled) return sha256
      batch.sizes.push(bytes.length)
      batch.chunks.push(bytes)
      batch.size += bytes.length
      add(names, sha256)
      return sha256
    },
    writeStored(names, sha256, size) {
      recorder.record(names, sha256, size, false)
      // Over a recycled tree the names are put from the store at the seal.
      if (recycled) return
      batch.sizes.push(-2)
      batch.storedSizes.push(size)
      // A few links: it weighs like a small body.
      batch.size += 1024
      add(names, sha256)
    },
    copy(name, source) {
      const { sha256, size } = describeCopy(name, source)
      recorder.record([name], sha256, size, false)
      batch.sizes.push(-1)
      batch.sources.push(source)
      batch.copySizes.push(size)
      // A copy reads and writes a whole blob: it weighs like a body of a few KB.
      batch.size += 4096
      add([name], sha256)
    },
    async drain() {
      if (failure) throw failure
      seal()
      await settle()
      // Rendering comes first (only this thread can do it): it writes only what would exceed the bound.
      while (queue.length > QUEUED) {
        applyOne()
        await settle()
      }
    },
    async finish() {
      if (failure) throw failure
      seal()
      // Nothing left to render: both sides write what is left.
      for (await settle(); queue.length > 0; await settle()) applyOne()
      if (applied < next) await new Promise<void>((resolve, reject) => (idle = { resolve, reject }))
      const usage = await new Promise<FinishedReply>((resolve, reject) => {
        finished = { resolve, reject }
        child.send({ type: 'finish' })
      })
      done = true
      child.disconnect()
      await exit
      rmSync(spool, { recursive: true, force: true })
      // Every body is in the tree: the manifest closes and the release is marked complete.
      const stats = await recorder.finish()
      complete = true
      stats.written = written
      return { stats, usage: { maxRss: usage.maxRss, cpuSeconds: usage.cpuSeconds, batches: { process: next, main: local } } }
    },
    async close() {
      if (!exited) {
        child.kill('SIGKILL')
        await exit
      }
      if (!complete) await recorder.close()
      complete = true
    },
  }
}
