/**
 * The write process seen from the build: one child process (write-worker.ts under vite-node, as
 * the load worker) that owns the release writer, so the tree's system calls (open, write, link,
 * stat, mkdir, utimes: most of the render phase on one thread, BUILD-PROFILE.md) run on the second
 * core while this thread queries SQLite and renders. Writes go in batches of about BATCH_BYTES in
 * write order; at most IN_FLIGHT batches are unanswered when drain() resolves, so the bytes queued
 * stay bounded whatever the catalog size. A failed batch or a dead process fails every later call
 * with a message naming BUILD_WRITE_WORKER=0, the way to write on the main thread instead.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { createWriteBatch, type ReleaseSink } from './write-sink.ts'
import type { WriteStats } from './writer.ts'

/** Body bytes (or ops) that make a batch: large enough that a message costs little beside its writes. */
const BATCH_BYTES = 512 * 1024
const BATCH_OPS = 2048
/** Batches sent and not yet applied when drain() lets the renderer go on (≈ 8 MB queued at most). */
const IN_FLIGHT = 16

const statsSchema = z.object({ files: z.number(), bodies: z.number(), bytes: z.number(), written: z.number() })
const replySchema = z.union([
  z.object({ type: z.literal('done'), id: z.number().int() }),
  z.object({ type: z.literal('finished'), stats: statsSchema, maxRss: z.number(), cpuSeconds: z.number() }),
  z.object({ type: z.literal('error'), error: z.string() }),
])
type FinishedReply = Extract<z.infer<typeof replySchema>, { type: 'finished' }>

/** A release sink whose writes run in the write process; `pid` is the process's. */
export type WritePool = ReleaseSink & { readonly pid: number | undefined }

/** Starts the write process for the release in `releaseDir` (see createReleaseWriter for `storeDir`). */
export function createWritePool(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null): WritePool {
  const viteNode = createRequire(import.meta.url).resolve('vite-node/cli')
  const entry = fileURLToPath(new URL('./write-worker.ts', import.meta.url))
  const child: ChildProcess = spawn(process.execPath, [viteNode, entry], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // Structured clone: the packed bytes go as one buffer, the names as strings.
    serialization: 'advanced',
  })
  let batch = createWriteBatch()
  let next = 0
  let applied = 0
  let failure: Error | null = null
  let waiters: { resolve(): void; reject(err: Error): void }[] = []
  let finished: { resolve(reply: FinishedReply): void; reject(err: Error): void } | null = null
  // Totals as queued, for progress lines; the write process returns the real ones (with `written`).
  const queued: WriteStats = { files: 0, bodies: 0, bytes: 0, written: 0 }
  let lastProgress = Date.now()
  let exited = false
  let done = false
  let markExited: () => void = () => {}
  const exit = new Promise<void>((resolve) => (markExited = resolve))

  const fail = (err: Error): void => {
    failure ??= err
    for (const w of waiters) w.reject(failure)
    waiters = []
    finished?.reject(failure)
    finished = null
  }
  const wake = (): void => {
    if (next - applied > IN_FLIGHT) return
    for (const w of waiters) w.resolve()
    waiters = []
  }
  child.on('message', (message) => {
    const reply = replySchema.safeParse(message)
    if (!reply.success) return fail(new Error(`write process: unexpected reply ${JSON.stringify(message).slice(0, 200)}`))
    const r = reply.data
    if (r.type === 'done') {
      applied = r.id + 1
      wake()
    } else if (r.type === 'finished') finished?.resolve(r)
    else fail(new Error(`write process: ${r.error}; BUILD_WRITE_WORKER=0 writes the release on the main thread alone`))
  })
  child.on('error', (err) => fail(err))
  child.on('exit', (code, signal) => {
    exited = true
    markExited()
    if (!done) fail(new Error(`write process exited (${signal ?? code}); BUILD_WRITE_WORKER=0 writes the release on the main thread alone`))
  })
  child.send({ type: 'open', releaseDir, storeDir })

  const send = (): void => {
    if (batch.counts.length === 0) return
    const { names, counts, sizes, sources, chunks } = batch
    child.send({ type: 'batch', id: next++, batch: { names, counts, sizes, sources, bytes: Buffer.concat(chunks) } })
    batch = createWriteBatch()
  }
  const added = (names: number, size: number): void => {
    queued.files += names
    queued.bodies++
    queued.bytes += size
    if (batch.size >= BATCH_BYTES || batch.counts.length >= BATCH_OPS) send()
    if (Date.now() - lastProgress > 5000) {
      lastProgress = Date.now()
      onProgress(queued)
    }
  }

  return {
    get pid() {
      return child.pid
    },
    write(names, bytes) {
      if (failure) throw failure
      batch.names.push(...names)
      batch.counts.push(names.length)
      batch.sizes.push(bytes.length)
      batch.chunks.push(bytes)
      batch.size += bytes.length
      added(names.length, bytes.length)
    },
    copy(name, source) {
      if (failure) throw failure
      batch.names.push(name)
      batch.counts.push(1)
      batch.sizes.push(-1)
      batch.sources.push(source)
      // Sizes come back with the totals; a copy counts as a small op here.
      batch.size += 1024
      added(1, 0)
    },
    async drain() {
      if (failure) throw failure
      send()
      if (next - applied <= IN_FLIGHT) return
      await new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }))
    },
    async finish() {
      if (failure) throw failure
      send()
      const reply = await new Promise<FinishedReply>((resolve, reject) => {
        finished = { resolve, reject }
        child.send({ type: 'finish' })
      })
      done = true
      child.disconnect()
      await exit
      return { stats: reply.stats, usage: { maxRss: reply.maxRss, cpuSeconds: reply.cpuSeconds } }
    },
    async close() {
      if (!exited) {
        child.kill('SIGKILL')
        await exit
      }
    },
  }
}
