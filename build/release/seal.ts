/**
 * Seals a written release for mirrors and offline users, before it goes live: the catalog exposed
 * under /mirror, the manifest and the change file, the feed, the snapshot and the archive, then —
 * after everything else is on disk (syncfs) — the pointer, written last.
 *
 * The catalog, snapshot and archive ("extras") are deterministic: the same data gives the same
 * bytes. One whose SHA-256 equals the previous release's becomes a hard link to the previous file,
 * so an unchanged rebuild leaves every file of the release alone (same inode, same ETag) and a
 * mirror fetches none of them.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, linkSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { formatCpu } from '../cpu.ts'
import { ARCHIVE_MEMBERS, writeArchive, type PreviousArchive } from './archive.ts'
import { removeBodyOrder, writeBodyOrder, writePathOrder } from './body-order.ts'
import { hasBodyPack, removeBodyPack, sortBodyPack } from './body-pack.ts'
import { stampContentMtime } from './content-mtime.ts'
import { writeFeed, readPointer } from './feed.ts'
import type { DiffCounts, FileRef, Pointer } from './formats.ts'
import { hashFile, recordHash, type FileHash, type HashedAhead } from './hash-file.ts'
import { addCounts, hashBytes, MIRROR_DIR, mirrorUrl } from './manifest.ts'
import type { ReleaseOptions } from './options.ts'
import { createReconciler, type RecycledTree } from './recycle.ts'
import { collectNameChanges, NAME_CHANGES_FILE } from './name-changes.ts'
import { writeManifest } from './seal-manifest.ts'
import { writeArchiveInChild, writeSnapshotInChild, type SealWorkerUsage } from './seal-child.ts'
import { SNAPSHOT_HASH_RECORD, writeSnapshot, type PreviousSnapshot } from './snapshot.ts'
import { linkOrCopy, type WriteStats } from './writer.ts'

/** What sealing needs to know about the release. */
export interface SealInput {
  releaseDir: string
  previousDir: string | null
  serial: number
  id: string
  sourceRevision: string | null
  stats: WriteStats
  /**
   * Resolves when `catalog.sqlite` is complete (compacted during the render), with its SHA-256 and
   * size taken then; without it the seal hashes the file.
   */
  catalogReady?: Promise<FileHash> | null
  /**
   * The previous release's snapshot hashed ahead by the build (hash-file.ts hashAhead) or as recorded
   * when it was sealed (recordedHash), so the snapshot's copy from it need not hash it in the seal;
   * null when it was not (or could not be).
   */
  previousSnapshotHashed?: Promise<HashedAhead | null> | null
  /**
   * A copy of `catalog.sqlite` the build made once it was compacted, during the render: the
   * snapshot starts from it (taking it) instead of copying 2.7 GB in the seal. Removed here if unused.
   */
  catalogCopy?: Promise<string | null> | null
  options: ReleaseOptions
  log: (line: string) => void
  /** The kept release the tree was started from (recycle.ts), with the content store to sweep. */
  recycled?: { tree: RecycledTree; storeDir: string | null } | null
  /** The content store, where the snapshot and the archive find a body the body pack left out (body-pack.ts). */
  storeDir?: string | null
}

/** A sealed release: its pointer and what changed in the whole release (served files and extras). */
export interface SealedRelease {
  pointer: Pointer
  /** The manifest's counts (pointer.changes) plus the catalog, snapshot and archive, each one file. */
  changes: DiffCounts
}

/** Writes the mirror documents, snapshot and archive of a release; returns its pointer and what changed. */
export async function sealRelease(input: SealInput): Promise<SealedRelease> {
  const { releaseDir, previousDir, serial, id } = input
  const createdAt = new Date().toISOString()
  const started = Date.now()
  const before = previousDir ? readPointer(previousDir) : null
  const extras: DiffCounts = { added: 0, changed: 0, removed: 0, unchanged: 0 }
  /** Hashes an extra; links it to the previous release's file when the bytes are the same. */
  const seal = async (name: string, old: FileRef | null | undefined, known?: FileHash): Promise<FileRef> => {
    const ref = await describe(releaseDir, name, known)
    const kept = old && old.sha256 === ref.sha256 && old.size === ref.size ? path.join(previousDir!, 'public', old.path) : null
    if (kept && existsSync(kept)) replaceWithLink(kept, path.join(releaseDir, name))
    extras[!old ? 'added' : old.sha256 === ref.sha256 ? 'unchanged' : 'changed']++
    return ref
  }
  /** Writes the snapshot or the archive in its worker process (logging what it used) or, when `inChild` is null, here; returns what was written's SHA-256 and size. */
  const writeExtra = async (part: string, inChild: (() => Promise<SealWorkerUsage>) | null, here: () => Promise<FileHash & { note?: string }>): Promise<FileHash> => {
    if (!inChild) {
      const written = await here()
      if (written.note) input.log(`The ${part}: ${written.note}`)
      return { sha256: written.sha256, size: written.size }
    }
    const usage = await inChild()
    input.log(`The ${part} worker used ${usage.cpuSeconds.toFixed(1)}s of CPU, peak RSS ${Math.round(usage.maxRss / 1e6)} MB${usage.note ? `; ${usage.note}` : ''}`)
    if (!usage.written) throw new Error(`the ${part} worker did not report the SHA-256 of the ${part}`)
    return usage.written
  }
  const cpu = process.cpuUsage()
  mkdirSync(path.join(releaseDir, MIRROR_DIR), { recursive: true })
  const catalogName = `${MIRROR_DIR}/catalog.sqlite`
  // The sorts of manifest.tsv for the snapshot and the archive (body-order.ts) run as child
  // processes while this thread writes the mirror manifest: the body order, then the path order
  // when the snapshot needs it (below); the body pack's index is sorted beside them, when the build
  // wrote one (body-pack.ts).
  const extrasWanted = input.options.snapshot || input.options.archive
  const previousSnapshot = previousDir && before?.snapshot ? path.join(previousDir, 'public', before.snapshot.path) : null
  // A body the pack left out (the live release's, named unread by the render) is read from the previous snapshot or the store.
  const elsewhere = { snapshot: previousSnapshot, store: input.storeDir ?? input.recycled?.storeDir ?? null }
  // The body order first, alone on both cores: the archive and the snapshot's bodies start from it,
  // and the snapshot's names wait for their own source only once its bodies are in (the two orders
  // sorted at once held both workers back until both were done: bench/results/BUILD-PROFILE.md,
  // Session 38).
  const bodyOrder = extrasWanted ? writeBodyOrder(releaseDir) : Promise.resolve(null)
  // The path order is sorted only when the snapshot needs it: at once without a previous snapshot
  // (every name goes in), else only if the manifest finds too many names changed to copy the
  // previous snapshot's by the change list (or the snapshot cannot copy from it after all).
  let pathOrderSort: Promise<string> | null = null
  const pathOrder = (): Promise<string> => (pathOrderSort ??= bodyOrder.then(() => writePathOrder(releaseDir)))
  const wantNameChanges = input.options.snapshot && previousSnapshot !== null
  if (input.options.snapshot && !wantNameChanges) pathOrder().catch(() => {})
  const nameChanges = wantNameChanges ? collectNameChanges(() => pathOrder().catch(() => {})) : null
  // The change list, once the manifest is written (null: none); rejected when the manifest fails.
  let nameChangesWritten!: (file: string | null) => void
  let nameChangesFailed!: (err: unknown) => void
  const nameChangesFile = new Promise<string | null>((resolve, reject) => {
    nameChangesWritten = resolve
    nameChangesFailed = reject
  })
  nameChangesFile.catch(() => {})
  const orders = Promise.all([bodyOrder, extrasWanted && hasBodyPack(releaseDir) ? sortBodyPack(releaseDir).then((pack) => ({ ...pack, elsewhere })) : null])
  // Awaited below; a failure surfaces there, not as an unhandled rejection meanwhile.
  orders.catch(() => {})
  // Each part starts as soon as what it reads is ready, beside the others: the manifest on this
  // thread (a shard at a time), the archive in a worker process once the body order is sorted, the
  // snapshot in another once the catalog (compacted during the render) is hashed too (and it is
  // sent the change list or the path order when its bodies are in and it asks for them).
  const catalogTask = (async (): Promise<FileRef> => {
    let known: FileHash | undefined
    if (input.catalogReady) {
      known = await input.catalogReady
      input.log(`The catalog was compacted after ${seconds(started)}s of sealing`)
    }
    linkSync(path.join(releaseDir, 'catalog.sqlite'), path.join(releaseDir, catalogName))
    const ref = await seal(catalogName, before?.catalog, known)
    // Both names stay one inode (the shim opens catalog.sqlite, mirrors fetch /mirror/catalog.sqlite).
    replaceWithLink(path.join(releaseDir, catalogName), path.join(releaseDir, 'catalog.sqlite'))
    return ref
  })()
  const manifestTask = (async () => {
    const reconciler = input.recycled ? createReconciler(releaseDir, input.recycled.tree, input.recycled.storeDir) : null
    let sealed: Awaited<ReturnType<typeof writeManifest>>
    try {
      sealed = await writeManifest(releaseDir, previousDir, { serial, id }, reconciler?.shard, nameChanges ? (c) => nameChanges.add(c) : undefined)
      nameChangesWritten(nameChanges ? nameChanges.write(path.join(releaseDir, NAME_CHANGES_FILE)) : null)
    } catch (err) {
      nameChangesFailed(err)
      // Nothing may still be linking into a release folder being removed.
      await reconciler?.close()
      throw err
    }
    const m = sealed.members
    const damaged = m.damaged > 0 ? ` (${m.damaged} whose bytes no longer matched their index compressed again)` : ''
    const copied = m.total > 0 ? `; ${m.reused} of the ${m.total} gzip members of its changed shards copied from the previous release${damaged}` : ''
    input.log(`Wrote the manifest and change file after ${seconds(started)}s of sealing${formatCpu(cpu)}${copied}`)
    if (reconciler) {
      const r = await reconciler.finish()
      input.log(
        `Reconciled the tree of release ${String(input.recycled!.tree.serial).padStart(8, '0')} after ${seconds(started)}s of sealing: ` +
          `${r.sameShards} of 256 manifest shards unchanged, ${r.linked} names linked, ${r.removed} removed, ${r.swept} stored bodies no release names removed`,
      )
    }
    const feed = writeFeed(releaseDir, previousDir, { ...sealed.change, serial, previous: before?.serial ?? null, createdAt, counts: sealed.counts }, input.options.feedRetention)
    return { sealed, feed }
  })()
  const snapshotTask = (async (): Promise<FileRef | null> => {
    if (!input.options.snapshot) return null
    const [[bodyOrder, pack], catalog, hashed, catalogCopy] = await Promise.all([orders, catalogTask, input.previousSnapshotHashed ?? null, input.catalogCopy ?? null])
    const name = `${MIRROR_DIR}/snapshot-${id}.sqlite`
    const target = path.join(releaseDir, name)
    // The previous release's snapshot: the bodies and names it already holds are copied, not inserted again.
    const previous: PreviousSnapshot | null =
      previousSnapshot && before?.snapshot ? { snapshot: previousSnapshot, expected: { sha256: before.snapshot.sha256, size: before.snapshot.size }, hashed } : null
    // Hashed by writeSnapshot beside its check; the size is checked again by seal().
    const written = await writeExtra(
      'snapshot',
      input.options.snapshotWorker ? () => writeSnapshotInChild(releaseDir, bodyOrder!, pathOrder, target, catalog.sha256, { pack, previous, catalogCopy, nameChanges: nameChangesFile }) : null,
      () => writeSnapshot(releaseDir, bodyOrder!, pathOrder, target, catalog.sha256, { pack, previous, catalogCopy, nameChanges: nameChangesFile }),
    )
    const ref = await seal(name, before?.snapshot, written)
    // Once the file is final (stamped, or linked to the previous release's): the next build trusts this hash while stat says nothing wrote the file since.
    recordHash(path.join(releaseDir, SNAPSHOT_HASH_RECORD), target, ref)
    input.log(`Wrote the snapshot (${(ref.size / 1e6).toFixed(1)} MB) after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
    return ref
  })()
  const archiveTask = (async (): Promise<FileRef | null> => {
    if (!input.options.archive) return null
    const [bodyOrder, pack] = await orders
    const name = `${MIRROR_DIR}/tree-${id}.tar.gz`
    const target = path.join(releaseDir, name)
    // The previous release's archive and member index: its unchanged members are copied, not compressed again.
    const previous: PreviousArchive | null =
      previousDir && before?.archive
        ? { archive: path.join(previousDir, 'public', before.archive.path), members: path.join(previousDir, ARCHIVE_MEMBERS), expected: { sha256: before.archive.sha256, size: before.archive.size } }
        : null
    // Hashed by writeArchive as it wrote; the size is checked again by seal().
    const written = await writeExtra(
      'archive',
      input.options.archiveWorker ? () => writeArchiveInChild(releaseDir, bodyOrder!, target, pack, previous) : null,
      () => writeArchive(releaseDir, bodyOrder!, target, pack, previous),
    )
    const ref = await seal(name, before?.archive, written)
    input.log(`Wrote the archive (${(ref.size / 1e6).toFixed(1)} MB) after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
    return ref
  })()
  try {
    // allSettled: a failing part must not leave another writing into a release being removed.
    for (const r of await Promise.allSettled([manifestTask, catalogTask, snapshotTask, archiveTask])) if (r.status === 'rejected') throw r.reason
  } finally {
    const b = await bodyOrder.catch(() => null)
    const p = pathOrderSort ? await (pathOrderSort as Promise<string>).catch(() => null) : null
    if (b) removeBodyOrder(b)
    if (p) removeBodyOrder(p)
    rmSync(path.join(releaseDir, NAME_CHANGES_FILE), { force: true })
    removeBodyPack(releaseDir)
    // Taken by the snapshot, unless it failed (or was not written) first.
    const copy = await input.catalogCopy?.catch(() => null)
    if (copy) rmSync(copy, { force: true })
  }
  // All settled and fulfilled above.
  const [{ sealed, feed }, catalog, snapshot, archive] = await Promise.all([manifestTask, catalogTask, snapshotTask, archiveTask])
  if (before?.snapshot && !snapshot) extras.removed++
  if (before?.archive && !archive) extras.removed++

  const pointer: Pointer = {
    format: 1,
    serial,
    id,
    previous: before?.serial ?? null,
    createdAt,
    sourceRevision: input.sourceRevision,
    files: input.stats.files,
    bodies: input.stats.bodies,
    bytes: input.stats.bytes,
    changes: sealed.counts,
    manifest: sealed.manifest,
    catalog,
    snapshot,
    archive,
    feed,
  }
  syncFileSystem(releaseDir)
  input.log(`Synced the file system after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
  const json = JSON.stringify(pointer, null, 2) + '\n'
  writeFileSync(path.join(releaseDir, 'release.json'), json)
  const tmp = path.join(releaseDir, MIRROR_DIR, '.pointer.tmp')
  writeFileSync(tmp, json)
  // The pointer keeps its name from release to release: its ETag must change with its bytes.
  stampContentMtime(tmp, hashBytes(json))
  renameSync(tmp, path.join(releaseDir, MIRROR_DIR, 'pointer.json'))
  const changes = { ...sealed.counts }
  addCounts(changes, extras)
  return { pointer, changes }
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1)
}

/**
 * Hashes a mirror document (unless `known`, its hash taken when it was written and the size checked
 * here) and stamps its content mtime (its ETag then follows its bytes).
 */
async function describe(releaseDir: string, name: string, known?: FileHash): Promise<FileRef> {
  const file = path.join(releaseDir, name)
  const size = known ? statSync(file).size : null
  if (known && size !== known.size) throw new Error(`${name} is ${size} bytes, not the ${known.size} it was hashed at`)
  const hashed = known ?? (await hashFile(file))
  stampContentMtime(file, hashed.sha256)
  return { path: mirrorUrl(name), ...hashed }
}

/** Replaces `target` by a hard link to `source` (same bytes), atomically. */
function replaceWithLink(source: string, target: string): void {
  // rename(2) over another name of the same inode does nothing and would leave tmp behind.
  if (statSync(source).ino === statSync(target).ino) return
  const tmp = `${target}.link-tmp`
  rmSync(tmp, { force: true })
  linkOrCopy(source, tmp)
  renameSync(tmp, target)
}
/**
 * Flushes the file system holding the release (`sync -f`: one syncfs(2) instead of an fsync per
 * file, which would cost hours at millions of files), so the pointer never names files that a
 * power loss could take back. Without the coreutils binary it is skipped: the rename still orders
 * the switch, only durability across power loss is lost.
 */
export function syncFileSystem(dir: string): void {
  try {
    execFileSync('sync', ['-f', dir], { stdio: 'ignore', timeout: 600_000 })
  } catch {
    // Not fatal: see above.
  }
}
