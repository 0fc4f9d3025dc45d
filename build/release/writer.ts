/**
 * Writes the files of a new release. A body is written once and its other names are hard links to
 * it (a version under its id, its number and each file hash share one inode), and every name goes
 * into the manifest with its SHA-256 and size. Synchronous writes: measured faster than 64 async
 * writes in flight on this machine (PERF-BASELINE.md), and the build has nothing else to do meanwhile.
 *
 * Incremental: every body is also linked into a content store (`dist/store/<ab>/<sha256>`) shared by
 * the releases. A body whose SHA-256 is already there is not written again: its names become hard
 * links to the stored inode, so a rebuild of unchanged data writes no bytes, keeps every file's
 * inode (same bytes, same ETag) and a kept previous release costs only what changed. The lookup is
 * one stat per body: no index in memory, whatever the size of the catalog.
 */
import { createHash } from 'node:crypto'
import { closeSync, copyFileSync, constants, linkSync, mkdirSync, openSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { hasContentMtime, stampContentMtime } from './content-mtime.ts'
import { formatEntry, listShards, shardOf } from './manifest.ts'

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
  /** Writes bytes under the first name and hard-links the others to it. */
  write(names: readonly string[], bytes: Buffer): void
  /** Copies a blob from the source catalog under a name. */
  copy(name: string, source: string): void
  /** Closes the manifest; returns the totals. */
  finish(): WriteStats
}

/** Release-relative folder of the unsorted manifest shards the writer appends to. */
export const RAW_SHARDS_DIR = '.manifest'

/**
 * Creates a writer for `releaseDir`. The manifest is `releaseDir/manifest.tsv` (path, sha256, size,
 * in write order) and the same lines spread over `.manifest/<shard>.tsv` for sealManifest.
 * `storeDir` null disables the content store.
 */
export function createReleaseWriter(releaseDir: string, onProgress: (stats: WriteStats) => void, storeDir: string | null = null): ReleaseWriter {
  const dirs = new Set<string>()
  const manifest = openSync(path.join(releaseDir, 'manifest.tsv'), 'w')
  mkdirSync(path.join(releaseDir, RAW_SHARDS_DIR), { recursive: true })
  const shards = new Map(listShards().map((s) => [s, { fd: openSync(path.join(releaseDir, RAW_SHARDS_DIR, `${s}.tsv`), 'w'), lines: [] as string[] }]))
  const stats: WriteStats = { files: 0, bodies: 0, bytes: 0, written: 0 }
  let lines: string[] = []
  let lastProgress = Date.now()

  const ensureDir = (file: string): void => {
    const dir = path.dirname(file)
    if (dirs.has(dir)) return
    mkdirSync(dir, { recursive: true })
    dirs.add(dir)
  }
  const record = (names: readonly string[], sha256: string, size: number): void => {
    for (const name of names) {
      const line = formatEntry({ path: name, sha256, size })
      lines.push(line)
      const shard = shards.get(shardOf(name))!
      shard.lines.push(line)
      if (shard.lines.length >= 512) {
        writeSync(shard.fd, shard.lines.join(''))
        shard.lines = []
      }
    }
    stats.files += names.length
    if (lines.length >= 4096) {
      writeSync(manifest, lines.join(''))
      lines = []
      if (Date.now() - lastProgress > 5000) {
        lastProgress = Date.now()
        onProgress(stats)
      }
    }
  }
  const link = (first: string, names: readonly string[]): void => {
    for (const name of names) {
      const target = path.join(releaseDir, name)
      if (target === first) continue
      ensureDir(target)
      linkOrCopy(first, target)
    }
  }
  const stored = (sha256: string): string | null => (storeDir ? path.join(storeDir, sha256.slice(0, 2), sha256) : null)
  /**
   * The stored inode of a body, when the store has it with the expected size (a truncated entry left
   * by a crash is not trusted). An entry stored before bodies carried their content mtime is stamped
   * now (the same bytes under every link, so every link gets the right ETag).
   */
  const findStored = (sha256: string, size: number): string | null => {
    const file = stored(sha256)
    if (!file) return null
    const st = statSync(file, { throwIfNoEntry: false })
    if (!st || st.size !== size) return null
    if (!hasContentMtime(st, sha256)) stampContentMtime(file, sha256)
    return file
  }
  const addToStore = (file: string, sha256: string): void => {
    const target = stored(sha256)
    if (!target) return
    ensureDir(target)
    // Linked only after the file is complete, so a killed build never leaves a partial store entry.
    try {
      linkSync(file, target)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'EEXIST' && code !== 'EMLINK') throw err
    }
  }

  return {
    write(names, bytes) {
      const sha256 = createHash('sha256').update(bytes).digest('hex')
      const hit = findStored(sha256, bytes.length)
      if (hit) link(hit, names)
      else {
        const first = path.join(releaseDir, names[0]!)
        ensureDir(first)
        writeFileSync(first, bytes)
        // Before the links, so every name shares the stamped inode.
        stampContentMtime(first, sha256)
        link(first, names)
        addToStore(first, sha256)
        stats.written++
      }
      stats.bodies++
      stats.bytes += bytes.length
      record(names, sha256, bytes.length)
    },
    copy(name, source) {
      // The object's name carries its SHA-256, checked when the catalog was loaded.
      const sha256 = name.split('/').at(-2)!
      const size = statSync(source).size
      const hit = findStored(sha256, size)
      const target = path.join(releaseDir, name)
      if (hit) link(hit, [name])
      else {
        ensureDir(target)
        copyFileSync(source, target, constants.COPYFILE_FICLONE)
        stampContentMtime(target, sha256)
        addToStore(target, sha256)
        stats.written++
      }
      stats.bodies++
      stats.bytes += size
      record([name], sha256, size)
    },
    finish() {
      if (lines.length > 0) writeSync(manifest, lines.join(''))
      closeSync(manifest)
      for (const shard of shards.values()) {
        if (shard.lines.length > 0) writeSync(shard.fd, shard.lines.join(''))
        closeSync(shard.fd)
      }
      writeFileSync(path.join(releaseDir, '.complete'), '')
      return stats
    },
  }
}

/**
 * Hard-links `source` to `target`; copies instead when the inode has reached the file system's
 * link limit (EMLINK: e.g. one empty list body shared by 100,000 names) or lives on another device.
 * A copy keeps the source's mtime: it is the content mtime that nginx's ETag is made of.
 */
export function linkOrCopy(source: string, target: string): void {
  try {
    linkSync(source, target)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EMLINK' && code !== 'EXDEV') throw err
    copyFileSync(source, target)
    const st = statSync(source)
    utimesSync(target, st.atime, st.mtime)
  }
}
