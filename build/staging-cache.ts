/**
 * The staging database kept between builds (`<dist>/.cache/staging.sqlite`), so a rebuild re-reads
 * only the source records that changed: staging holds every record parsed, validated and
 * normalised, plus `s_sources`, one row per record file with its stat signature and those of the
 * blobs it read. A rebuild stats the source tree, drops the rows of changed and removed files and
 * parses the changed and new ones (load.ts); everything after the load runs as in a full build, on
 * the same rows, so the release is the same bytes as a full build of the same data (tested).
 *
 * What keeps a stale row out:
 * - The cache is kept only after a build whose records all loaded and validated (a file with a
 *   problem has no row, so it could not be kept without losing its problem), and taken by moving
 *   it into the pending release: a build that fails or dies after that loses it, and the next one
 *   loads everything.
 * - Its key is the SHA-256 of the code that turns a file into rows (the loader, the source
 *   schemas, the staging schema), of the cross-record checks (a rebuild checks only what its load
 *   touched, trusting that the kept rows passed these checks: validate.ts), and of the data
 *   folder's path: another version of the build, or another catalog, never reads rows made by this
 *   one.
 * - A file is re-read when its size, mtime, ctime or inode differs, or one of its blobs' does
 *   (ctime changes on every write, whatever the writer does to mtime).
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, type Stats } from 'node:fs'
import path from 'node:path'

/** Bumped when the meaning of s_sources or of a staging row changes without the hashed files changing. */
const FORMAT = '1'

/** Files whose code decides the rows of a record file, or the checks they passed (relative to build/). */
const KEYED_SOURCES = ['load-records.ts', 'load.ts', 'staging-cache.ts', 'static-paths.ts', 'db/schema.ts', 'schema/source.ts', 'schema/api.ts', 'validate.ts']

/** The cache of a dist folder; `lineage`: the release it was built into (catalog-memo.ts). */
export function stagingCachePaths(distDir: string): { file: string; key: string; lineage: string } {
  const dir = path.join(distDir, '.cache')
  return { file: path.join(dir, 'staging.sqlite'), key: path.join(dir, 'staging.key'), lineage: path.join(dir, 'staging.lineage') }
}

/** The key of staging rows made by this build's code from `dataDir`. */
export function stagingCacheKey(dataDir: string): string {
  const hash = createHash('sha256').update(`${FORMAT}\0${path.resolve(dataDir)}\0`)
  for (const name of KEYED_SOURCES) hash.update(name).update('\0').update(readFileSync(new URL(`./${name}`, import.meta.url))).update('\0')
  return hash.digest('hex')
}

/**
 * Moves the kept staging into `target` when its key is `key`; true then. A cache of another key
 * is removed (it can never be used) and false returned: the build loads everything.
 */
export function takeStagingCache(distDir: string, target: string, key: string): boolean {
  const cache = stagingCachePaths(distDir)
  const kept = existsSync(cache.key) ? readFileSync(cache.key, 'utf8').trim() : null
  // The key goes first: a crash after this leaves a database without a key, never used.
  rmSync(cache.key, { force: true })
  if (kept !== key || !existsSync(cache.file)) {
    rmSync(cache.file, { force: true })
    return false
  }
  renameSync(cache.file, target)
  return true
}

/** Keeps `stagingFile` (closed, every record loaded and valid) as the cache of `distDir` under `key`. */
export function keepStagingCache(distDir: string, stagingFile: string, key: string): void {
  const cache = stagingCachePaths(distDir)
  mkdirSync(path.dirname(cache.file), { recursive: true })
  rmSync(cache.key, { force: true })
  renameSync(stagingFile, cache.file)
  // Written last: the database is complete and in place before anything names it usable.
  writeFileSync(`${cache.key}.tmp`, `${key}\n`)
  renameSync(`${cache.key}.tmp`, cache.key)
}

/** Removes the cache of `distDir`, if any (BUILD_STAGING_CACHE=0). */
export function dropStagingCache(distDir: string): void {
  const cache = stagingCachePaths(distDir)
  rmSync(cache.key, { force: true })
  rmSync(cache.lineage, { force: true })
  rmSync(cache.file, { force: true })
}

/** The stat signature of a source file: size, mtime, ctime and inode (the stats of the file, symlinks followed). */
export function sourceSignature(stats: Pick<Stats, 'size' | 'mtimeMs' | 'ctimeMs' | 'ino'>): string {
  return `${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}:${stats.ino}`
}

/**
 * How recent a change must be for its signature not to be trusted. The kernel stamps files with a
 * coarse clock (a few ms), so a file rewritten with the same size within one tick of being read
 * would keep its signature (git's "racy clean" problem); a file changed this recently is stored
 * with RACY and read again by the next build, whatever its stats say then.
 */
const RACY_MS = 2000

/** A stored signature that matches no file's: the file is read again next time. */
export const RACY = 'racy'

/** The signature to store for a file read now: sourceSignature, or RACY when it changed within RACY_MS (or is dated in the future). */
export function storedSignature(stats: Pick<Stats, 'size' | 'mtimeMs' | 'ctimeMs' | 'ino'>, now = Date.now()): string {
  return now - Math.max(stats.mtimeMs, stats.ctimeMs) < RACY_MS ? RACY : sourceSignature(stats)
}
