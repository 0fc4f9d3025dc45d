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
import { closeSync, mkdirSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { createBodyPackWriter } from './body-pack.ts'
import { formatEntry, listShards, shardIndexOf } from './manifest.ts'
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
  /** Closes the manifest; returns the totals. */
  finish(): WriteStats
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
  finish(): WriteStats
  /** Closes the files without completing the release (the build failed). */
  close(): void
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

/** Bytes of manifest.tsv's write buffer (a line is appended to it once, then copied to its shard's). */
const MANIFEST_BUFFER = 1 << 20
/** Bytes of each raw shard's write buffer: 256 of them, 16 MB, allocated once. */
const SHARD_BUFFER = 1 << 16

/** A file written through one fixed buffer: `used` bytes of `buf` wait for `flush`. */
interface BufferedFile {
  fd: number
  buf: Buffer
  used: number
}

function openBuffered(file: string, size: number): BufferedFile {
  return { fd: openSync(file, 'w'), buf: Buffer.allocUnsafe(size), used: 0 }
}

function flush(out: BufferedFile): void {
  if (out.used > 0) writeSync(out.fd, out.buf, 0, out.used)
  out.used = 0
}

/** Appends bytes to a buffered file (flushing it first when they would not fit; a run longer than the buffer is written at once). */
function append(out: BufferedFile, bytes: Uint8Array): void {
  if (out.used + bytes.length > out.buf.length) flush(out)
  if (bytes.length > out.buf.length) {
    writeSync(out.fd, bytes)
    return
  }
  out.buf.set(bytes, out.used)
  out.used += bytes.length
}

/**
 * Creates the manifest of `releaseDir` (manifest.tsv and the raw shards, and the body pack when
 * `options.packBodies`); `onProgress` every 5 s or so.
 *
 * Each line is encoded once, straight into manifest.tsv's buffer, and its bytes copied into its
 * shard's buffer: no line is kept as a string. Lines kept in arrays until a shard's 512 were
 * written (up to 131,000 strings at a time) outlived V8's young generation: in a profile of a 1%
 * rebuild at the large catalog, recording took 6.1 s of the render's main thread and garbage
 * collection 5.7 s (BUILD-PROFILE.md, Session 34; the figures after this change are Session 35's).
 */
export function createManifestRecorder(releaseDir: string, onProgress: (stats: WriteStats) => void, options: RecorderOptions = {}): ManifestRecorder {
  const manifest = openBuffered(path.join(releaseDir, 'manifest.tsv'), MANIFEST_BUFFER)
  const pack = options.packBodies ? createBodyPackWriter(releaseDir) : null
  mkdirSync(path.join(releaseDir, RAW_SHARDS_DIR), { recursive: true })
  // In shard order: the shard of a name is its index here (shardIndexOf).
  const shards = listShards().map((s) => openBuffered(path.join(releaseDir, RAW_SHARDS_DIR, `${s}.tsv`), SHARD_BUFFER))
  const stats: WriteStats = { files: 0, bodies: 0, bytes: 0, written: 0 }
  let lastProgress = Date.now()
  const closeAll = (): void => {
    closeSync(manifest.fd)
    for (const shard of shards) closeSync(shard.fd)
  }
  return {
    stats,
    record(names, sha256, size, written, bytes) {
      if (bytes) pack?.append(sha256, bytes)
      // formatEntry's line, its tail (ASCII) made once for the body's names.
      const tail = formatEntry({ path: '', sha256, size })
      for (const name of names) {
        // UTF-8 takes at most 3 bytes per UTF-16 code unit: room is made before the line is encoded.
        const most = name.length * 3 + tail.length
        if (most > manifest.buf.length) {
          // Longer than any name a release has, but not lost either: written through at once.
          const line = Buffer.from(name + tail)
          append(manifest, line)
          append(shards[shardIndexOf(name)]!, line)
          continue
        }
        if (manifest.used + most > manifest.buf.length) {
          flush(manifest)
          if (Date.now() - lastProgress > 5000) {
            lastProgress = Date.now()
            onProgress(stats)
          }
        }
        const start = manifest.used
        manifest.used += manifest.buf.write(name, start, 'utf8')
        manifest.used += manifest.buf.write(tail, manifest.used, 'latin1')
        // Copied into the shard's buffer (no view of the bytes made: 5.1 M lines at the large catalog).
        const shard = shards[shardIndexOf(name)]!
        const length = manifest.used - start
        if (shard.used + length > shard.buf.length) flush(shard)
        if (length > shard.buf.length) writeSync(shard.fd, manifest.buf, start, length)
        else {
          manifest.buf.copy(shard.buf, shard.used, start, manifest.used)
          shard.used += length
        }
      }
      stats.files += names.length
      stats.bodies++
      stats.bytes += size
      if (written) stats.written++
    },
    finish() {
      flush(manifest)
      for (const shard of shards) flush(shard)
      closeAll()
      pack?.finish()
      writeFileSync(path.join(releaseDir, '.complete'), '')
      return stats
    },
    close() {
      pack?.close()
      closeAll()
    },
  }
}
