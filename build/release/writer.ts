/**
 * Writes the files of a new release. A body is written once and its other names are hard links to
 * it (a version under its id, its number and each file hash share one inode), and every name goes
 * into the manifest with its SHA-256 and size. Synchronous writes: measured faster than 64 async
 * writes in flight on this machine (PERF-BASELINE.md), and the build has nothing else to do meanwhile.
 */
import { createHash } from 'node:crypto'
import { closeSync, copyFileSync, constants, linkSync, mkdirSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'

/** Totals of a written release. */
export interface WriteStats {
  /** Names (URLs) in the release. */
  files: number
  /** Distinct bodies written (the rest are links). */
  bodies: number
  /** Bytes of distinct bodies. */
  bytes: number
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

/** Creates a writer for `releaseDir`; the manifest is `releaseDir/manifest.tsv` (path, sha256, size). */
export function createReleaseWriter(releaseDir: string, onProgress: (stats: WriteStats) => void): ReleaseWriter {
  const dirs = new Set<string>()
  const manifest = openSync(path.join(releaseDir, 'manifest.tsv'), 'w')
  const stats: WriteStats = { files: 0, bodies: 0, bytes: 0 }
  let lines: string[] = []
  let lastProgress = Date.now()

  const ensureDir = (file: string): void => {
    const dir = path.dirname(file)
    if (dirs.has(dir)) return
    mkdirSync(dir, { recursive: true })
    dirs.add(dir)
  }
  const record = (names: readonly string[], sha256: string, size: number): void => {
    for (const name of names) lines.push(`${name}\t${sha256}\t${size}\n`)
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
    for (const name of names.slice(1)) {
      const target = path.join(releaseDir, name)
      ensureDir(target)
      linkSync(first, target)
    }
  }

  return {
    write(names, bytes) {
      const first = path.join(releaseDir, names[0]!)
      ensureDir(first)
      writeFileSync(first, bytes)
      link(first, names)
      stats.bodies++
      stats.bytes += bytes.length
      record(names, createHash('sha256').update(bytes).digest('hex'), bytes.length)
    },
    copy(name, source) {
      const target = path.join(releaseDir, name)
      ensureDir(target)
      copyFileSync(source, target, constants.COPYFILE_FICLONE)
      stats.bodies++
      // The object's name carries its SHA-256, checked when the catalog was loaded.
      const sha256 = name.split('/').at(-2)!
      const size = statSync(target).size
      stats.bytes += size
      record([name], sha256, size)
    },
    finish() {
      if (lines.length > 0) writeSync(manifest, lines.join(''))
      closeSync(manifest)
      writeFileSync(path.join(releaseDir, '.complete'), '')
      return stats
    },
  }
}
