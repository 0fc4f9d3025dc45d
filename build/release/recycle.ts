/**
 * A kept release's tree taken over by the next build (BUILD_RECYCLE): the release that the build
 * would remove once it is live becomes the folder the new release is written into. Of its 5.1 M
 * names at the large catalog only those whose body changed are touched, instead of linking every
 * name afresh, and none has to be unlinked after the release goes live (removing an old release
 * took two to five minutes: bench/results/BUILD-PROFILE.md).
 *
 * What keeps the tree exact:
 * - Only a release the build would prune anyway is taken: never the live one, never the one live
 *   before the build, never one of the newest KEEP_RELEASES − 1 (they stay for roll-backs).
 * - Everything but its served tree is removed before the build writes (the catalog, manifest.tsv,
 *   release.json, `public/mirror`); its manifest shards, the list of every name the tree holds
 *   with its SHA-256, are kept aside in `.recycled/` (with their plain copies, when it has them).
 * - The render puts each body into the content store only (tree.ts, `storeOnly`) and touches no
 *   name of the release.
 * - When the new manifest is sealed, each of its shards is compared with the recycled release's
 *   (seal-manifest.ts; an identical shard is skipped): a name whose SHA-256 is the same already
 *   holds those bytes and is left alone; a changed name is unlinked and linked to the stored body
 *   (never written through: its inode is shared with the kept releases and the store); a new name
 *   is linked; a name the new release does not have is unlinked, and folders left empty go. The
 *   stored bodies whose last release link went are then removed from the store.
 * - The released trees are never edited (a build writes a new one), so a release's tree is what its
 *   manifest says.
 * - A build that fails after taking the tree removes it, as it would have been removed after a
 *   successful build, and sweeps the store.
 */
import { existsSync, mkdirSync, promises as fsp, readdirSync, renameSync, rmdirSync, rmSync, writeFileSync } from 'node:fs'
import { linkOrCopy, storeFile } from './tree.ts'
import path from 'node:path'
import type { ManifestEntry, ManifestIndex, ShardRef } from './formats.ts'
import { diffShardBytes, MIRROR_DIR, readShardBytes, shardFile } from './manifest.ts'
import { readIndex, shardTextFile } from './seal-manifest.ts'

/** Release-relative folder of the recycled release's manifest shards, removed by the seal. */
export const RECYCLED_DIR = '.recycled'

/** The tree a pending release was started from. */
export interface RecycledTree {
  /** Serial of the release it was. */
  serial: number
  /** Its manifest shards (SHA-256 of each shard's text), in shard order. */
  shards: ShardRef[]
  /** Names it holds. */
  files: number
}

/**
 * The newest release the build would prune after publishing (keep `keep` releases counting the new
 * one; never `live` or `previous`) whose manifest can be read; null when there is none.
 */
export function findRecyclable(releasesDir: string, keep: number, live: string | null): { dir: string; serial: number } | null {
  const serials = readdirSync(releasesDir)
    .filter((n) => /^\d+$/.test(n))
    .sort()
    .reverse()
  for (const name of serials.slice(Math.max(2, keep) - 1)) {
    const dir = path.join(releasesDir, name)
    if (dir === live) continue
    if (readWholeIndex(dir)) return { dir, serial: Number(name) }
  }
  return null
}

/**
 * Moves the release in `from` to `to` (a pending release folder, which must not exist) and strips
 * it to its served tree: its manifest shards go to `to/.recycled/`, everything else but `public/`
 * (and `public/mirror`) is moved into `discard` (a new folder beside the releases, for the caller to
 * remove). Renamed, not removed here: removing them (a 6.4 GB snapshot, a 2.7 GB catalog, a 700 MB
 * manifest.tsv at the large catalog) held the build's start 2.1 s (bench/results/BUILD-PROFILE.md,
 * Session 41).
 */
export function takeRecycledTree(from: string, to: string, serial: number, discard: string): RecycledTree {
  const index = readWholeIndex(from)
  if (!index) throw new Error(`${from} has no readable manifest: it cannot be recycled`)
  renameSync(from, to)
  const aside = path.join(to, RECYCLED_DIR)
  mkdirSync(aside)
  for (const ref of index.shards) {
    const target = path.join(aside, `${ref.sha256}.tsv.gz`)
    // Two shards with the same text (both empty) share a file.
    if (!existsSync(target)) renameSync(path.join(to, shardFile(ref.sha256)), target)
    // Its plain copy, when the release has one (seal-manifest.ts): read instead of the gzip file when it still holds the shard's text.
    const plain = path.join(to, shardTextFile(ref.sha256))
    if (existsSync(plain) && !existsSync(path.join(aside, `${ref.sha256}.tsv`))) renameSync(plain, path.join(aside, `${ref.sha256}.tsv`))
  }
  mkdirSync(discard)
  if (existsSync(path.join(to, MIRROR_DIR))) renameSync(path.join(to, MIRROR_DIR), path.join(discard, 'mirror'))
  for (const name of readdirSync(to)) {
    if (name === 'public' || name === RECYCLED_DIR) continue
    renameSync(path.join(to, name), path.join(discard, name))
  }
  const recycled: RecycledTree = { serial, shards: index.shards, files: index.files }
  writeFileSync(path.join(aside, 'index.json'), JSON.stringify(recycled) + '\n')
  return recycled
}

/** What reconciling a recycled tree with the new manifest did. */
export interface ReconcileStats {
  /** Names linked to a new body: not in the recycled tree, or there with other bytes. */
  linked: number
  /** Names of the recycled tree the new release does not have, unlinked. */
  removed: number
  /** Shards of the recycled tree identical to the new release's (nothing to compare). */
  sameShards: number
  /** Stored bodies no release names any more, removed from the store. */
  swept: number
}

/** Names reconciled at once: each an unlink and a link on libuv's threads, waiting on the disk. */
const IN_FLIGHT = 16
/** Names queued before the shard being sealed waits for the queue to shorten. */
const QUEUED = 65536

/**
 * Compares the new release's manifest, shard by shard, with the recycled tree's and removes what
 * only the recycled release had. `shard` is called with each new shard's text as bytes
 * as the manifest is sealed; `finish` waits for the names to be done, removes emptied folders and
 * unreferenced store entries, then the recycled shards; `close` waits for the names in flight
 * (the seal failed).
 *
 * The names are unlinked and linked asynchronously, IN_FLIGHT at a time, while the manifest goes
 * on with the next shards: unlinking a name reads its old inode, which the disk no longer has in
 * memory, and one after another on the seal's thread the 28,500 names of a 1% rebuild at the large
 * catalog took 12–13 s (0.45 ms each, beside the snapshot's writes) out of its 30 s of CPU
 * (bench/results/BUILD-PROFILE.md).
 */
export function createReconciler(releaseDir: string, recycled: RecycledTree, storeDir: string | null): {
  shard(index: number, sha256: string, bytes: Buffer): Promise<void>
  finish(): Promise<ReconcileStats>
  close(): Promise<void>
} {
  if (!storeDir) throw new Error('a recycled release tree needs the content store')
  const stats: ReconcileStats = { linked: 0, removed: 0, sameShards: 0, swept: 0 }
  // SHA-256 of bodies a recycled name held and the new release does not hold under that name.
  const dropped = new Set<string>()
  const folders = new Set<string>()
  // Folders made for new names, each once, on libuv's threads: made on this thread, a folder of a
  // million entries the disk no longer had in memory held the seal's thread (3.6 s of a 1% rebuild
  // at the large catalog, bench/results/BUILD-PROFILE.md, Session 32).
  const made = new Map<string, Promise<unknown>>()
  /** A name to reconcile: its old file unlinked (when it had one), then the stored body linked (when the new release has one). */
  type Op = { unlink: string | null; link: ManifestEntry | null }
  let queue: Op[] = []
  let head = 0
  let running = 0
  let failure: Error | null = null
  let wake: (() => void) | null = null
  const unlink = async (name: string): Promise<void> => {
    try {
      await fsp.unlink(path.join(releaseDir, name))
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
    }
  }
  const link = async (e: ManifestEntry): Promise<void> => {
    const target = path.join(releaseDir, e.path)
    const dir = path.dirname(target)
    let folder = made.get(dir)
    if (!folder) made.set(dir, (folder = fsp.mkdir(dir, { recursive: true })))
    await folder
    const source = storeFile(storeDir, e.sha256)
    try {
      await fsp.link(source, target)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'EMLINK' && code !== 'EXDEV') throw err
      // Past the link limit or across devices: linkOrCopy copies.
      linkOrCopy(source, target)
    }
  }
  const run = async (op: Op): Promise<void> => {
    if (op.unlink !== null) await unlink(op.unlink)
    if (op.link !== null) await link(op.link)
  }
  const pump = (): void => {
    while (running < IN_FLIGHT && head < queue.length && failure === null) {
      const op = queue[head++]!
      running++
      run(op)
        .catch((err: Error) => (failure ??= err))
        .finally(() => {
          running--
          pump()
          wake?.()
        })
    }
    if (head > 4096 && head * 2 > queue.length) {
      queue = queue.slice(head)
      head = 0
    }
  }
  const wait = (): Promise<void> => new Promise<void>((resolve) => (wake = resolve))
  /** Resolves once at most `left` names are queued or running; throws the first failure once none is running. */
  const settle = async (left: number): Promise<void> => {
    while (failure === null && queue.length - head + running > left) await wait()
    if (failure) {
      while (running > 0) await wait()
      throw failure
    }
  }
  return {
    async shard(index, sha256, bytes) {
      const before = recycled.shards[index]
      if (before?.sha256 === sha256) {
        stats.sameShards++
        return
      }
      const aside = path.join(releaseDir, RECYCLED_DIR, before?.sha256 ?? '')
      const old = before ? readShardBytes(`${aside}.tsv`, before.sha256, `${aside}.tsv.gz`) : Buffer.alloc(0)
      diffShardBytes(old, bytes, (c, was) => {
        if (was) dropped.add(detach(was.sha256))
        if (c.kind === 'R') {
          stats.removed++
          folders.add(detach(path.dirname(c.path)))
          queue.push({ unlink: detach(c.path), link: null })
        } else {
          stats.linked++
          queue.push({ unlink: was ? detach(was.path) : null, link: { path: detach(c.entry.path), sha256: detach(c.entry.sha256), size: c.entry.size } })
        }
      })
      pump()
      await settle(QUEUED)
    },
    async finish() {
      await settle(0)
      for (const folder of folders) removeEmptyFolders(releaseDir, folder)
      // IN_FLIGHT at a time on libuv's threads, as the names: one after another on this thread, the
      // 6,000 bodies of a 1% rebuild at the large catalog took 2 s (their inodes were on the disk).
      const sweep = [...dropped]
      const sweepOne = async (sha256: string): Promise<void> => {
        const file = storeFile(storeDir, sha256)
        const st = await fsp.stat(file).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ENOENT') return null
          throw err
        })
        if (st && st.nlink <= 1) {
          await fsp.unlink(file)
          stats.swept++
        }
      }
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let sha256 = sweep.pop(); sha256 !== undefined; sha256 = sweep.pop()) await sweepOne(sha256)
        }),
      )
      rmSync(path.join(releaseDir, RECYCLED_DIR), { recursive: true, force: true })
      return stats
    },
    async close() {
      failure ??= new Error('the seal failed')
      while (running > 0) await wait()
    },
  }
}

/**
 * A copy of a string that does not hold on to the text it was cut from: V8 keeps a substring as a
 * slice of its parent, so one SHA-256 kept from a parsed shard kept the whole 2.7 MB shard text, and
 * the hashes dropped from all 256 shards held 700 MB (measured at the large catalog).
 */
function detach(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8')
}

/** Removes `folder` (release-relative) and its parents while they are empty, up to `public/`. */
function removeEmptyFolders(releaseDir: string, folder: string): void {
  for (let dir = folder; dir !== 'public' && dir !== '.' && dir !== ''; dir = path.dirname(dir)) {
    try {
      rmdirSync(path.join(releaseDir, dir))
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return
      throw err
    }
  }
}

/** The manifest index of a sealed release whose shards are all there, or null (before manifests, or damaged). */
function readWholeIndex(releaseDir: string): ManifestIndex | null {
  try {
    const index = readIndex(releaseDir)?.index
    return index && index.shards.every((ref) => existsSync(path.join(releaseDir, shardFile(ref.sha256)))) ? index : null
  } catch {
    return null
  }
}
