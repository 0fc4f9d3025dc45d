/**
 * Release lifecycle: a build writes into a temporary folder, renames it to its serial when it is
 * complete, then swaps the `current` symlink with rename(2) — atomic, unlike `ln -sfn`, so readers
 * never see a missing or half-written tree. A killed build leaves only a temp folder, which the
 * next build removes; the live release is never touched.
 */
import { existsSync, fsyncSync, openSync, closeSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync, mkdirSync, readlinkSync } from 'node:fs'
import path from 'node:path'
import { removeTree, removeTreeLater } from '../remove-tree.ts'
import type { Pointer } from './formats.ts'
import { findRecyclable, takeRecycledTree, type RecycledTree } from './recycle.ts'

/** A release being built. */
export interface PendingRelease {
  serial: number
  id: string
  /** Temporary folder the build writes into. */
  dir: string
  /** Folder of the live release before this build, if any. */
  previousDir: string | null
  /** The kept release whose tree `dir` was started from (recycle.ts), or null: `dir` started empty. */
  recycled: RecycledTree | null
  /**
   * Settles when what the recycled release had beside its served tree (DISCARD_PREFIX) is removed:
   * by `rm -rf` in the background while the build runs; awaited before the release is published or
   * abandoned. Settled from the start when nothing was recycled.
   */
  discarded: Promise<void>
}

/** Prefix of the folder (beside the releases) of what a recycled release had beside its tree, being removed. */
const DISCARD_PREFIX = '.discard-'

/** Metadata of a release (`release.json`, the same document as its `/mirror/pointer.json`). */
export type ReleaseInfo = Pointer

/** Folder the `current` pointer resolves to, or null before the first release. */
export function resolveCurrentRelease(distDir: string): string | null {
  const pointer = path.join(distDir, 'current')
  if (!existsSync(pointer)) return null
  return path.resolve(distDir, readlinkSync(pointer))
}

/** Reads `release.json` of a release folder. */
export function readReleaseInfo(releaseDir: string): ReleaseInfo {
  return JSON.parse(readFileSync(path.join(releaseDir, 'release.json'), 'utf8')) as ReleaseInfo
}

/**
 * Takes the build lock, cleans up after killed builds, and creates the temp folder of the next
 * release. `recycleKeep`: the KEEP_RELEASES of this build, to start the folder from the tree of a
 * release that publishing would prune (recycle.ts); null or none prunable: an empty folder.
 */
export function prepareRelease(distDir: string, recycleKeep: number | null = null): PendingRelease {
  const releases = path.join(distDir, 'releases')
  mkdirSync(releases, { recursive: true })
  takeLock(distDir)
  // A killed build's folder, and the stored bodies only it named (they have no other link, as the
  // temporary files a killed write left in the store): with old releases taken over rather than
  // removed (recycle.ts), no other build would sweep them.
  let killed = false
  for (const name of readdirSync(releases)) {
    // What a killed build was still removing: no stored body is named there.
    if (name.startsWith(DISCARD_PREFIX)) removeTree(path.join(releases, name))
    if (!name.startsWith('.tmp-')) continue
    removeTree(path.join(releases, name))
    killed = true
  }
  if (killed) pruneStore(path.join(distDir, 'store'))
  const serials = readdirSync(releases).filter((n) => /^\d+$/.test(n)).map(Number)
  const serial = Math.max(0, ...serials) + 1
  const id = String(serial).padStart(8, '0')
  const dir = path.join(releases, `.tmp-${id}`)
  const previousDir = resolveCurrentRelease(distDir)
  const recyclable = recycleKeep === null ? null : findRecyclable(releases, recycleKeep, previousDir)
  if (recyclable) {
    const discard = path.join(releases, `${DISCARD_PREFIX}${id}`)
    const recycled = takeRecycledTree(recyclable.dir, dir, recyclable.serial, discard)
    fsyncPath(releases)
    const discarded = removeTreeLater(discard)
    // Awaited by whoever ends the build; a failure meanwhile is not an unhandled rejection.
    discarded.catch(() => {})
    return { serial, id, dir, previousDir, recycled, discarded }
  }
  mkdirSync(dir)
  return { serial, id, dir, previousDir, recycled: null, discarded: Promise.resolve() }
}

/** Told when the release is live (before old releases are removed) and what the pruning removed. */
export interface PublishProgress {
  onLive?: () => void
  log?: (line: string) => void
}

/** Makes a sealed release live atomically, prunes old releases and the store; returns the live folder. */
export function publishRelease(distDir: string, pending: PendingRelease, keep: number, progress: PublishProgress = {}): string {
  const finalDir = path.join(distDir, 'releases', pending.id)
  renameSync(pending.dir, finalDir)
  fsyncPath(path.join(distDir, 'releases'))
  const tmpLink = path.join(distDir, `.current-${process.pid}`)
  rmSync(tmpLink, { force: true })
  symlinkSync(path.join('releases', pending.id), tmpLink)
  renameSync(tmpLink, path.join(distDir, 'current'))
  fsyncPath(distDir)
  progress.onLive?.()
  // Store entries lose their last link only when a release goes: without one, skip the sweep
  // (a stat per stored body, 1.4 million at the large catalog). Removing a large release is the
  // unlinking of its 5.1 M names: about two minutes here (bench/results/BUILD-PROFILE.md).
  const pruneStarted = Date.now()
  const removed = pruneReleases(distDir, Math.max(2, keep), pending.previousDir)
  if (removed > 0) {
    const bodies = pruneStore(path.join(distDir, 'store'))
    progress.log?.(`Removed ${removed} old release(s) and ${bodies} stored bodies no release names in ${((Date.now() - pruneStarted) / 1000).toFixed(1)}s`)
  }
  releaseLock(distDir)
  return finalDir
}

/**
 * Removes the temp folder of a failed build and releases the lock; the live release is untouched.
 * A folder started from a recycled release is removed as that release would have been after a
 * successful build, and the store is swept of the bodies only it named.
 */
export function abortRelease(distDir: string, pending: PendingRelease): void {
  removeTree(pending.dir)
  if (pending.recycled) pruneStore(path.join(distDir, 'store'))
  releaseLock(distDir)
}

/**
 * Keeps the newest `keep` releases, and always the live one and `previous`, the one that was live
 * before it (shims finishing requests and mirrors still on it), even after a roll-back made an
 * older release live. Returns how many were removed.
 */
function pruneReleases(distDir: string, keep: number, previous: string | null): number {
  const releases = path.join(distDir, 'releases')
  const live = resolveCurrentRelease(distDir)
  const serials = readdirSync(releases).filter((n) => /^\d+$/.test(n)).sort().reverse()
  let removed = 0
  for (const name of serials.slice(keep)) {
    const dir = path.join(releases, name)
    if (dir === live || dir === previous) continue
    removeTree(dir)
    removed++
  }
  return removed
}

/**
 * Removes store entries no kept release links to any more: the store holds one name of each body,
 * so an inode with a single link is referenced by nothing else. One stat per stored body; returns
 * how many were removed.
 */
function pruneStore(storeDir: string): number {
  if (!existsSync(storeDir)) return 0
  let removed = 0
  for (const prefix of readdirSync(storeDir)) {
    const dir = path.join(storeDir, prefix)
    for (const name of readdirSync(dir)) {
      const file = path.join(dir, name)
      if (statSync(file).nlink <= 1) {
        unlinkSync(file)
        removed++
      }
    }
  }
  return removed
}

/** fsync(2) of a file or folder (a folder: so a rename in it survives a power loss). */
export function fsyncPath(file: string): void {
  const fd = openSync(file, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function takeLock(distDir: string): void {
  const lock = path.join(distDir, '.build.lock')
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'))
    if (pid && pid !== process.pid && isAlive(pid)) {
      throw new Error(`another build (pid ${pid}) is writing ${distDir}; remove ${lock} if it is stale`)
    }
  }
  writeFileSync(lock, String(process.pid))
}

function releaseLock(distDir: string): void {
  rmSync(path.join(distDir, '.build.lock'), { force: true })
}

/** Whether a process with this pid is running (stale lock detection). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
