/**
 * Writes the files of a new release. A body is written once and its other names are hard links to
 * it (a version under its id, its number and each file hash share one inode), and every name goes
 * into the manifest with its SHA-256 and size. Synchronous writes: measured faster than 64 async
 * writes in flight on this machine (PERF-BASELINE.md). The file-system half is tree.ts (the build
 * runs it in a write process as well, write-pool.ts); the manifest half, recorded in write order,
 * is createManifestRecorder.
 *
 * Incremental: every body is also linked into a content store (`dist/store/<ab>/<sha256>`) shared by
 * the releases. A body whose SHA-256 is already there is not written again: its names become hard
 * links to the stored inode, so a rebuild of unchanged data writes no bytes, keeps every file's
 * inode (same bytes, same ETag) and a kept previous release costs only what changed. The lookup is
 * one stat per body: no index in memory, whatever the size of the catalog.
 */
import { hash } from 'node:crypto'
import { mkdirSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { createBodyPackWriter } from './body-pack.ts'
import { formatEntry, listShards } from './manifest.ts'
import { createReleaseTree } from './tree.ts'

export { linkOrCopy } from './tree.ts'

/** Totals of a written release. */
export interface WriteStats {
  /** Names (URLs) in the release. */
  files: number
  /** Distinct bodies (the rest are links). */
  bodies: number
  /** Bytes of distinct bodies. */
  bytes: number
  /** Bodies written by this build; the others were found in the content store and linked. */
  written: number
}

/** Writes names into one release folder. */
export interface ReleaseWriter {
  /** Writes bytes under the first name and hard-links the others to it; `stored`: see ReleaseSink.write. Returns the body's SHA-256. */
  write(names: readonly string[], bytes: Buffer, stored?: boolean): string
  /** Names a body the content store holds, without its bytes (ReleaseSink.writeStored). */
  writeStored(names: readonly string[], sha256: string, size: number): void
  /** Copies a blob from the source catalog under a name. */
  copy(name: string, source: string): void
  /** Closes the manifest; resolves with the totals. */
  finish(): Promise<WriteStats>
  /** Closes the manifest's files without completing the release (the build failed); resolves once nothing more is written. */
  close(): Promise<void>
}

/** The manifest half of a writer: the lines of every name, in the order they are recorded. */
export interface ManifestRecorder {
  /**
   * Records the names of one body; `written`: the tree wrote it (not found in the store). `bytes`,
   * the body (not given for a copied file object), goes into the body pack when there is one.
   */
  record(names: readonly string[], sha256: string, size: number, written: boolean, bytes?: Uint8Array): void
  /** Totals so far (`written` counts what record was told). */
  readonly stats: WriteStats
  /** Closes the manifest and marks the release complete: call it once every body is in the tree. */
  finish(): Promise<WriteStats>
  /** Closes the files without completing the release (the build failed); resolves once nothing more is written. */
  close(): Promise<void>
}

/** Release-relative folder of the unsorted manifest shards the writer appends to. */
export const RAW_SHARDS_DIR = '.manifest'

/** Options of a release's manifest recorder. */
export interface RecorderOptions {
  /** Append every body to the body pack (body-pack.ts), for the snapshot and the archive to read. */
  packBodies?: boolean
}

/**
 * Creates a writer for `releaseDir`. The manifest is `releaseDir/manifest.tsv` (path, sha256, size,
 * in write order) and the same lines spread over `.manifest/<shard>.tsv` for sealManifest.
 * `storeDir` null disables the content store; `recycled`: the folder holds a kept release's tree
 * (recycle.ts, tree.ts).
 */
export function createReleaseWriter(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null = null, options: RecorderOptions = {}, recycled = false): ReleaseWriter {
  const tree = createReleaseTree(releaseDir, storeDir, recycled)
  const recorder = createManifestRecorder(releaseDir, onProgress, options)
  return {
    write(names, bytes, stored) {
      const sha256 = hashBody(bytes)
      // Over a recycled tree a stored body needs nothing from the tree: put would only find it in the store.
      recorder.record(names, sha256, bytes.length, stored && recycled ? false : tree.put(names, bytes, sha256), bytes)
      return sha256
    },
    writeStored(names, sha256, size) {
      // Over a recycled tree the names are put from the store at the seal.
      if (!recycled) tree.putStored(names, sha256, size)
      recorder.record(names, sha256, size, false)
    },
    copy(name, source) {
      const { sha256, size } = describeCopy(name, source)
      recorder.record([name], sha256, size, tree.putCopy(name, source, sha256, size))
    },
    finish: () => recorder.finish(),
    close: () => recorder.close(),
  }
}

/** SHA-256 (hex) of a body (one-shot: see createBody in build/render/body.ts). */
export function hashBody(bytes: Uint8Array): string {
  return hash('sha256', bytes, 'hex')
}

/** SHA-256 and size of a blob to copy: the object's name carries its SHA-256, checked when the catalog was loaded. */
export function describeCopy(name: string, source: string): { sha256: string; size: number } {
  return { sha256: name.split('/').at(-2)!, size: statSync(source).size }
}

/**
 * Bytes of each buffer of lines the recorder hands to its thread (a line is encoded once, into one
 * of these, on the calling thread). A line longer than this goes in a buffer of its own.
 */
const LINES_BUFFER = 1 << 20
/** Bytes of each raw shard's write buffer on the thread: 256 of them, 16 MB, allocated once. */
const SHARD_BUFFER = 1 << 16
/** Buffers of lines sent to the thread and not yet written: past this the calling thread waits (bounded memory). */
const LINES_IN_FLIGHT = 16
/** Longest the calling thread waits for the thread to take a buffer before giving up on it. */
const THREAD_WAIT_MS = 120_000
/** Bytes of a failure's message the recorder's thread leaves in its shared state (cut beyond). */
const FAILURE_BYTES = 4096
/** The shortest line: a one-byte name, a tab, 64 hex digits, a tab, one digit and a newline. */
const SHORTEST_LINE = 1 + 1 + 64 + 1 + 1 + 1

/**
 * The recorder's thread (plain JavaScript, evaluated, as hash-file.ts's): opens manifest.tsv and the
 * 256 raw shards, and for each buffer of lines it is sent writes the buffer to manifest.tsv as it
 * is and copies each line to its shard's buffer, the shard being the first byte of the SHA-256 of
 * the name's UTF-8 bytes (shardIndexOf's rule, on the bytes the calling thread encoded). `marks`
 * gives, per line, where its name and the line end. `state`, shared: its first 32-bit number counts
 * the buffers sent and not yet written; the second is 1 once the thread failed and 2 once it has
 * written and closed every file; the third is the length of the failure's message, whose UTF-8
 * bytes start at byte 16. The outcome is read from there, not from messages, which the thread's end
 * can overtake.
 */
const RECORDER_THREAD = `
const { parentPort, workerData } = require('node:worker_threads')
const { hash } = require('node:crypto')
const { closeSync, openSync, writeSync } = require('node:fs')
const { manifestFile, shardFiles, shardBuffer, state } = workerData
const flags = new Int32Array(state, 0, 4)
const fds = []
const shards = []
const flush = (s) => {
  if (s.used > 0) writeSync(s.fd, s.buf, 0, s.used)
  s.used = 0
}
const closeAll = () => {
  for (const fd of fds.splice(0)) closeSync(fd)
}
const fail = (err) => {
  const written = Buffer.from(state, 16).write(String((err && err.message) || err))
  Atomics.store(flags, 2, written)
  Atomics.store(flags, 1, 1)
  Atomics.notify(flags, 0)
  try { closeAll() } catch {}
  parentPort.close()
}
try {
  const manifest = openSync(manifestFile, 'w')
  fds.push(manifest)
  for (const file of shardFiles) {
    const fd = openSync(file, 'w')
    fds.push(fd)
    shards.push({ fd, buf: Buffer.allocUnsafe(shardBuffer), used: 0 })
  }
  parentPort.on('message', (m) => {
    try {
      if (m.type === 'lines') {
        const buf = Buffer.from(m.buffer, 0, m.length)
        const marks = new Uint32Array(m.marks)
        writeSync(manifest, buf)
        let start = 0
        for (let i = 0; i < m.lines; i++) {
          const nameEnd = marks[2 * i]
          const end = marks[2 * i + 1]
          const shard = shards[hash('sha256', buf.subarray(start, nameEnd), 'binary').charCodeAt(0)]
          const length = end - start
          if (shard.used + length > shard.buf.length) flush(shard)
          if (length > shard.buf.length) writeSync(shard.fd, buf, start, length)
          else {
            buf.copy(shard.buf, shard.used, start, end)
            shard.used += length
          }
          start = end
        }
        Atomics.sub(flags, 0, 1)
        Atomics.notify(flags, 0)
      } else if (m.type === 'finish') {
        for (const s of shards) flush(s)
        closeAll()
        Atomics.store(flags, 1, 2)
        parentPort.close()
      } else if (m.type === 'close') {
        closeAll()
        parentPort.close()
      }
    } catch (err) {
      fail(err)
    }
  })
} catch (err) {
  fail(err)
}
`

/**
 * Creates the manifest of `releaseDir` (manifest.tsv and the raw shards, and the body pack when
 * `options.packBodies`); `onProgress` every 5 s or so.
 *
 * Each line is encoded once, on the calling thread, into a buffer of lines; a full buffer goes to
 * the recorder's thread (RECORDER_THREAD, transferred, not copied), which writes it to manifest.tsv
 * and spreads its lines over their shards. Taking each name's shard (a SHA-256 of it) and copying
 * its line there was about a fifth of the render's main thread in a 1% rebuild at the large catalog,
 * which that thread bounds, while the other core had room (bench/results/BUILD-PROFILE.md, Session
 * 49). The files are the same bytes as when one thread did both. At most LINES_IN_FLIGHT buffers
 * wait for the thread: past that the calling thread waits for it (Atomics.wait), so memory stays
 * bounded if the disk is slow. A failure of the thread (a file it cannot open or write) fails the
 * next record and finish, naming it; nothing is marked complete.
 *
 * Lines are not kept as strings: kept in arrays until a shard's 512 were written (up to 131,000
 * strings at a time), they outlived V8's young generation (BUILD-PROFILE.md, Session 34).
 */
export function createManifestRecorder(releaseDir: string, onProgress: (stats: WriteStats) => void, options: RecorderOptions = {}): ManifestRecorder {
  mkdirSync(path.join(releaseDir, RAW_SHARDS_DIR), { recursive: true })
  const state = new SharedArrayBuffer(16 + FAILURE_BYTES)
  const flags = new Int32Array(state, 0, 4)
  const worker = new Worker(RECORDER_THREAD, {
    eval: true,
    workerData: {
      manifestFile: path.join(releaseDir, 'manifest.tsv'),
      // In shard order: the shard of a name is its index here (shardIndexOf).
      shardFiles: listShards().map((s) => path.join(releaseDir, RAW_SHARDS_DIR, `${s}.tsv`)),
      shardBuffer: SHARD_BUFFER,
      state,
    },
  })
  let finished: { resolve(): void; reject(err: Error): void } | null = null
  let ended = false
  let startError: string | null = null
  const failed = (): Error => {
    const message = Atomics.load(flags, 1) === 1 ? Buffer.from(state, 16, Atomics.load(flags, 2)).toString() : (startError ?? 'its thread ended before it was done')
    return new Error(`writing the manifest of ${releaseDir}: ${message}`)
  }
  // The thread ends after finishing, failing or being closed: which one, its state says.
  worker.on('exit', () => {
    ended = true
    if (Atomics.load(flags, 1) === 2) finished?.resolve()
    else finished?.reject(failed())
  })
  worker.on('error', (err) => {
    startError ??= err.message
  })
  const pack = options.packBodies ? createBodyPackWriter(releaseDir) : null
  const stats: WriteStats = { files: 0, bodies: 0, bytes: 0, written: 0 }
  let lastProgress = Date.now()

  const newBuffer = (size: number): { buf: Buffer; marks: Uint32Array; used: number; lines: number } => ({
    buf: Buffer.allocUnsafeSlow(size),
    marks: new Uint32Array(2 * (Math.floor(size / SHORTEST_LINE) + 1)),
    used: 0,
    lines: 0,
  })
  let out = newBuffer(LINES_BUFFER)
  const check = (): void => {
    if (Atomics.load(flags, 1) === 1 || ended) throw failed()
  }
  // Hands the buffer of lines to the thread (waiting while LINES_IN_FLIGHT are not yet written) and starts another of `size` bytes.
  const send = (size: number): void => {
    if (out.lines > 0) {
      for (let waited = 0; Atomics.load(flags, 0) >= LINES_IN_FLIGHT; waited += 100) {
        check()
        if (waited >= THREAD_WAIT_MS) throw new Error(`writing the manifest of ${releaseDir}: its thread took no buffer for ${THREAD_WAIT_MS / 1000} s`)
        Atomics.wait(flags, 0, Atomics.load(flags, 0), 100)
      }
      check()
      Atomics.add(flags, 0, 1)
      const { buf, marks, used, lines } = out
      worker.postMessage({ type: 'lines', buffer: buf.buffer, length: used, marks: marks.buffer, lines }, [buf.buffer as ArrayBuffer, marks.buffer as ArrayBuffer])
      if (Date.now() - lastProgress > 5000) {
        lastProgress = Date.now()
        onProgress(stats)
      }
    }
    out = newBuffer(size)
  }
  return {
    stats,
    record(names, sha256, size, written, bytes) {
      check()
      if (bytes) pack?.append(sha256, bytes)
      // formatEntry's line, its tail (ASCII) made once for the body's names.
      const tail = formatEntry({ path: '', sha256, size })
      for (const name of names) {
        // UTF-8 takes at most 3 bytes per UTF-16 code unit: room is made before the line is encoded.
        const most = name.length * 3 + tail.length
        if (out.used + most > out.buf.length || 2 * out.lines + 2 > out.marks.length) send(Math.max(LINES_BUFFER, most))
        const { buf, marks } = out
        out.used += buf.write(name, out.used, 'utf8')
        marks[2 * out.lines] = out.used
        out.used += buf.write(tail, out.used, 'latin1')
        marks[2 * out.lines + 1] = out.used
        out.lines++
      }
      stats.files += names.length
      stats.bodies++
      stats.bytes += size
      if (written) stats.written++
    },
    async finish() {
      send(0)
      await new Promise<void>((resolve, reject) => {
        finished = { resolve, reject }
        if (ended) reject(failed())
        else worker.postMessage({ type: 'finish' })
      })
      pack?.finish()
      writeFileSync(path.join(releaseDir, '.complete'), '')
      return stats
    },
    async close() {
      pack?.close()
      // Until the thread has ended it may still be opening or writing its files: the caller removes the folder after this.
      if (!ended) {
        const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
        worker.postMessage({ type: 'close' })
        await exited
      }
    },
  }
}
