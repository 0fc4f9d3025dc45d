/**
 * The build: load → validate → catalog SQLite → render every static response → publish a new
 * release atomically. A failing build prints every problem and leaves the live release untouched.
 */
import path from 'node:path'
import { renameSync, rmSync } from 'node:fs'
import { copyFile } from 'node:fs/promises'
import { writeCatalog, type CatalogMaps } from './catalog.ts'
import type { SearchIndexBeside } from './search-index.ts'
import type { SealWorkerUsage } from './release/seal-child.ts'
import {
  createProjectBodiesWriter,
  keepStagingLineage,
  memoKey,
  readProjectBodies,
  resolveMemoSource,
  takeStagingLineage,
  type ProjectBodiesWriter,
} from './catalog-memo.ts'
import { formatCpu } from './cpu.ts'
import type { BuildContext, BuildOptions, Problem } from './context.ts'
import { openDb, type Db } from './db/sqlite.ts'
import { BUILD_CACHE_KIB, stagingIndexes, stagingPragmas, stagingSchema } from './db/schema.ts'
import { loadSource } from './load.ts'
import type { DiffCounts } from './release/formats.ts'
import { readPointer } from './release/feed.ts'
import { hashAhead, hashFileOffThread, recordedHash, type FileHash, type HashedAhead } from './release/hash-file.ts'
import { resolveSourceRevision } from './release/options.ts'
import { abortRelease, prepareRelease, publishRelease, type ReleaseInfo } from './release/publish.ts'
import { sealRelease } from './release/seal.ts'
import { SNAPSHOT_HASH_RECORD } from './release/snapshot.ts'
import { createWritePool } from './release/write-pool.ts'
import { createLocalSink, type ReleaseSink } from './release/write-sink.ts'
import type { WriteStats } from './release/writer.ts'
import { writeProjectFiles } from './static/projects.ts'
import { writeObjects, writeSiteFiles } from './static/site.ts'
import { writeUserFiles } from './static/users.ts'
import { prepareVersionFiles, writeVersionFiles } from './static/versions.ts'
import { dropStagingCache, keepStagingCache, stagingCacheKey, takeStagingCache } from './staging-cache.ts'
import { validateCatalog } from './validate.ts'

/** Result of a build: `changes` counts every file of the release (served files, catalog, snapshot, archive). */
export type BuildResult =
  | { ok: true; release: ReleaseInfo; changes: DiffCounts; releaseDir: string; seconds: number }
  | { ok: false; problems: Problem[] }

/** Raised for a catalog that does not validate; carries every problem. */
export class CatalogError extends Error {
  constructor(readonly problems: Problem[]) {
    super(`${problems.length} problem(s) in the source catalog`)
  }
}

/** Runs a whole build. */
export async function runBuild(options: BuildOptions): Promise<BuildResult> {
  const started = Date.now()
  const cpu = process.cpuUsage()
  const log = options.log
  const pending = prepareRelease(options.distDir, options.recycle ? options.keepReleases : null)
  if (pending.recycled) {
    const r = pending.recycled
    log(`Writing release ${pending.id} over the tree of release ${String(r.serial).padStart(8, '0')} (${r.files} names), which it would have removed (BUILD_RECYCLE)`)
  }
  const stagingFile = path.join(pending.dir, 'staging.sqlite')
  // BUILD_STAGING_CACHE=0: no cache is used (no key is needed), and one left by earlier builds is removed.
  const stagingKey = options.stagingCache ? stagingCacheKey(options.dataDir) : null
  if (stagingKey === null) dropStagingCache(options.distDir)
  // Taken (read and removed) before the staging: the lineage names the release the kept staging was built into.
  const lineage = stagingKey === null ? null : takeStagingLineage(options.distDir)
  const kept = stagingKey !== null && takeStagingCache(options.distDir, stagingFile, stagingKey)
  const renderKey = stagingKey === null ? null : memoKey(options.baseUrl, options.filesBaseUrl)
  const memo = resolveMemoSource(kept, lineage, pending.previousDir, renderKey)
  const staging = await openDb(stagingFile)
  const ctx: BuildContext = { options, problems: [], staging, releaseDir: pending.dir }
  let compaction: Promise<CompactedCatalog> | null = null
  let search: SearchIndexBeside | null = null
  let versionReader: Promise<Db> | null = null
  let catalogReady: Promise<FileHash> | null = null
  let writer: ReleaseSink | null = null
  let projectBodies: ProjectBodiesWriter | null = null
  let db: Db | null = null
  let snapshotAhead: Promise<HashedAhead | null> | null = null
  let catalogCopy: Promise<string | null> | null = null
  try {
    // The live release's snapshot (6.4 GB at the large catalog) is vouched for by the SHA-256 its
    // build recorded when it sealed it, if stat says nothing wrote the file since; else hashed now,
    // on a thread of its own, beside the load and the catalog. The seal then copies from it without
    // hashing it again, if stat still says so (snapshot.ts). Reading and hashing it here cost about
    // 5 s of CPU and 6.4 GB read from the disk when not cached (bench/results/BUILD-PROFILE.md, Session 56).
    const previousPointer = pending.previousDir ? readPointer(pending.previousDir) : null
    if (options.release.snapshot && previousPointer?.snapshot) {
      const file = path.join(pending.previousDir!, 'public', previousPointer.snapshot.path)
      const recorded = recordedHash(path.join(pending.previousDir!, SNAPSHOT_HASH_RECORD), file, previousPointer.snapshot)
      snapshotAhead = recorded ? Promise.resolve(recorded) : hashAhead(file)
    }
    await staging.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; ${stagingPragmas} ${kept ? '' : stagingSchema}`)
    const { records: counts, filesRead } = await loadSource(ctx, kept)
    if (kept) {
      const named = options.changedFiles ? ` (of the ${options.changedFiles.length} BUILD_CHANGED_FILES names; the data folder was not listed)` : ''
      log(`Staging kept from the last build: read ${filesRead} changed record files${named}`)
      if (memo.catalogFile === null) log(`No versions' JSON reused from the live release: ${memo.reason}`)
    } else if (options.changedFiles) log(`No staging kept from the last build: every record file was read (BUILD_CHANGED_FILES applies to a rebuild from kept staging)`)
    log(`Loaded ${counts.s_projects} projects, ${counts.s_versions} versions, ${counts.s_users} users in ${secondsSince(started)}s${formatCpu(cpu)}`)
    // Progress inside the catalog phase, the build's longest single-threaded one: where a rebuild's
    // time goes (bench/results/BUILD-PROFILE.md).
    const step = (done: string): void => log(`… ${done} after ${secondsSince(started)}s${formatCpu(cpu)}`)
    await staging.exec(stagingIndexes)
    step('indexed staging')
    // The cross-record checks read staging on its own connection (its own SQLite thread, the other
    // core) while the catalog is written from it: neither waits for the other (bench/results/
    // BUILD-PROFILE.md). The first problem found stops the catalog (a step boundary, or the running
    // statement through sqlite3_interrupt) and the build fails with every problem, as before.
    // A kept staging passed the checks: only what the load touched, and what refers to it, is checked again.
    const validation = validateCatalog(ctx, kept).then((checked) => {
      step(`validated the catalog (${ctx.problems.length} problems; checked ${checked})`)
      if (ctx.problems.length > 0) db?.raw.interrupt()
    })
    validation.catch(() => {})
    // Records that failed their own schema at load: no catalog, only the checks' problems added.
    if (ctx.problems.length > 0) {
      await validation
      throw new CatalogError(ctx.problems)
    }

    const catalogFile = path.join(pending.dir, 'catalog.sqlite')
    db = await openDb(catalogFile)
    const settings = { baseUrl: options.baseUrl }
    // Started before the catalog is written, so the write process is up (≈ 0.4 s) when rendering starts.
    const onProgress = (s: WriteStats): void =>
      log(`… ${s.files} files (${s.bodies} bodies, ${(s.bytes / 1e6).toFixed(0)} MB) after ${secondsSince(started)}s`)
    const storeDir = path.join(options.distDir, 'store')
    // The body pack is read by the snapshot and the archive only.
    const recorder = { packBodies: options.release.snapshot || options.release.archive }
    const recycled = pending.recycled !== null
    writer = options.writeWorker ? createWritePool(pending.dir, onProgress, storeDir, recorder, recycled) : createLocalSink(pending.dir, onProgress, storeDir, recorder, recycled)
    const catalogStep = (done: string): void => {
      if (ctx.problems.length > 0) throw new CatalogError(ctx.problems)
      step(done)
    }
    let maps: CatalogMaps
    try {
      ;({ maps, search } = await writeCatalog(ctx, db, settings, catalogStep, memo))
    } catch (err) {
      // A catalog that failed (or was interrupted) over source data with problems: the problems are the answer.
      await validation
      throw ctx.problems.length > 0 ? new CatalogError(ctx.problems) : err
    }
    await validation
    if (ctx.problems.length > 0) throw new CatalogError(ctx.problems)
    // From here staging is read through the catalog connection's ATTACH: free this connection's cache.
    await staging.exec(`PRAGMA shrink_memory`)
    // The catalog is complete: the renderers only read it (their temp tables are not part of it).
    // Its statistics for the shim's query planner, for every table whatever this connection queried.
    await db.exec(`PRAGMA main.optimize(0x10002)`)
    log(`Wrote the catalog database in ${secondsSince(started)}s${formatCpu(cpu)}`)
    // Compacted into a new file by a second connection while the tree is rendered (VACUUM in place
    // would write the whole database twice: to a temporary copy, then back through the journal). It
    // reads on its own SQLite thread beside the renderers' queries; the search index, built by its
    // worker process meanwhile, is copied into the compacted file; renamed over catalog.sqlite once
    // rendering is done, and sealRelease waits for it before it touches the catalog.
    const searchLine = (usage: SealWorkerUsage | null): string =>
      `… built the search index beside the render${usage ? ` (its worker used ${usage.cpuSeconds.toFixed(1)}s of CPU, peak RSS ${(usage.maxRss / 1e6).toFixed(0)} MB)` : ''} and copied it into the compacted catalog after ${secondsSince(started)}s`
    compaction = compactCatalog(catalogFile, search, (usage) => log(searchLine(usage)), options.release.snapshot ? `${catalogFile}.snapshot` : null)
    // Awaited below, or in the catch when the build fails first.
    compaction.catch(() => {})
    catalogCopy = compaction.then((c) => c.copy)
    catalogCopy.catch(() => {})
    // The versions are read on a connection of their own (its own SQLite thread).
    versionReader = prepareVersionFiles(catalogFile, BUILD_CACHE_KIB)
    versionReader.catch(() => {})
    // The live release's bodies (of versions whose JSON was reused, of projects whose inputs did not
    // change) are named without being read when the seal needs none of them or can read them from
    // the live release's snapshot (else from the store, body-pack.ts).
    const unread = memo.catalogFile !== null && (!recorder.packBodies || !!previousPointer?.snapshot)
    await writeSiteFiles(db, writer)
    await writeUserFiles(db, writer)
    // Each project's bodies are listed for the next build (catalog-memo.ts, PROJECT_BODIES).
    projectBodies = renderKey === null ? null : createProjectBodiesWriter(pending.dir, renderKey)
    // Passed, not kept in a variable: the map (60 MB at the large catalog) is not held through the seal.
    const { reused: projectsNamed } = await writeProjectFiles(
      db,
      maps,
      writer,
      unread && maps.projectMemo && renderKey !== null && pending.previousDir ? readProjectBodies(pending.previousDir, renderKey) : null,
      projectBodies,
    )
    projectBodies?.finish()
    if (projectsNamed > 0) log(`… named ${projectsNamed} projects' bodies from the live release without rendering them, after ${secondsSince(started)}s`)
    const versions = await versionReader
    versionReader = null
    const { unread: named } = await writeVersionFiles(versions, writer, maps.hashOwners, maps.storedVersion, unread)
    if (named > 0) log(`… named ${named} versions' bodies from the live release without reading them, after ${secondsSince(started)}s`)
    await writeObjects(db, options.dataDir, writer)
    await db.run(`DETACH DATABASE staging`)
    await db.close()
    db = null
    catalogReady = compaction.then(({ file, hash }) => {
      renameSync(file, catalogFile)
      return hash
    })
    // Awaited by sealRelease, or below when the build fails first.
    catalogReady.catch(() => {})
    await staging.close()
    // Every record loaded and validated: kept for the next build (staging-cache.ts), or removed.
    if (stagingKey !== null) keepStagingCache(options.distDir, stagingFile, stagingKey)
    else rmSync(stagingFile, { force: true })
    const { stats, usage } = await writer.finish()
    if (usage) {
      const { process: remote, main } = usage.batches
      log(`… the write process used ${usage.cpuSeconds.toFixed(1)}s of CPU, peak RSS ${(usage.maxRss / 1e6).toFixed(0)} MB; it wrote ${remote} batches, the main thread ${main}`)
    }
    log(`Wrote the static tree (${stats.files} files, ${stats.bodies} bodies) in ${secondsSince(started)}s${formatCpu(cpu)}`)

    const { pointer: release, changes } = await sealRelease({
      releaseDir: pending.dir,
      previousDir: pending.previousDir,
      serial: pending.serial,
      id: pending.id,
      sourceRevision: resolveSourceRevision(options.sourceRevision, options.dataDir),
      stats,
      catalogReady,
      previousSnapshotHashed: snapshotAhead,
      catalogCopy,
      options: options.release,
      log,
      recycled: pending.recycled ? { tree: pending.recycled, storeDir } : null,
      storeDir,
    })
    // What the recycled release had beside its tree, removed in the background since the start (publish.ts).
    await pending.discarded.catch((err: Error) => log(`Could not remove ${err.message}; the next build removes what is left`))
    const releaseDir = publishRelease(options.distDir, pending, options.keepReleases, {
      onLive: () => log(`Release ${pending.id} is live after ${secondsSince(started)}s`),
      log,
    })
    // The kept staging is this release's: the next build may reuse its versions' JSON (catalog-memo.ts).
    if (renderKey !== null) keepStagingLineage(options.distDir, { catalogSha256: release.catalog.sha256, key: renderKey })
    const seconds = Number(secondsSince(started))
    const c = changes
    log(
      `Rendered ${stats.files} files (${stats.bodies} bodies, ${(stats.bytes / 1e6).toFixed(1)} MB; ${stats.written} bodies written) in ${seconds}s → release ${release.id}: ` +
        `${c.added} added, ${c.changed} changed, ${c.removed} removed, ${c.unchanged} unchanged (served files, catalog, snapshot, archive)`,
    )
    return { ok: true, release, changes, releaseDir, seconds }
  } catch (err) {
    // Neither the write process nor the compaction may write into a release folder being removed.
    await writer?.close()
    projectBodies?.close()
    await db?.close().catch(() => {})
    await versionReader?.then((reader) => reader.close()).catch(() => {})
    await compaction?.catch(() => {})
    await catalogCopy?.catch(() => {})
    await catalogReady?.catch(() => {})
    await search?.close().catch(() => {})
    // Nothing of the build may go on reading once it has returned.
    await snapshotAhead
    await staging.close().catch(() => {})
    await pending.discarded.catch(() => {})
    abortRelease(options.distDir, pending)
    if (err instanceof CatalogError) return { ok: false, problems: err.problems }
    throw err
  }
}

/** A compacted catalog file and its SHA-256 and size, and the copy of it for the snapshot (its path once made; null when not asked for or it failed). */
interface CompactedCatalog {
  file: string
  hash: FileHash
  copy: Promise<string | null>
}

/**
 * `VACUUM INTO` a new file beside `catalogFile`, on a connection of its own; the search index,
 * once built, copied into it (`copied` is told) and its statistics added; then its SHA-256 at once,
 * while its pages are still in memory (hashed at the seal, the 3.5 GB of the large catalog came
 * back from the disk and held the snapshot back for a minute: bench/results/BUILD-PROFILE.md), on a
 * thread of its own (hashFileOffThread), beside the seal's. Beside the hash, copied to `copyTo`
 * (copy_file_range, on the thread pool) for the snapshot, which would otherwise copy the 2.7 GB in
 * the seal, where both cores are busy; a copy that fails is removed, and the snapshot copies the
 * catalog itself.
 */
async function compactCatalog(catalogFile: string, search: SearchIndexBeside, copied: (usage: SealWorkerUsage | null) => void, copyTo: string | null): Promise<CompactedCatalog> {
  const compact = `${catalogFile}.compact`
  const db = await openDb(catalogFile)
  try {
    await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}`)
    await db.run(`VACUUM INTO ?`, [compact])
  } finally {
    await db.close()
  }
  const out = await openDb(compact)
  let usage: SealWorkerUsage | null
  try {
    await out.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;`)
    usage = await search.finish(out)
    // The search tables' statistics; the others' came with the copy (sqlite_stat1 is a table).
    await out.exec(`PRAGMA main.optimize(0x10002)`)
  } finally {
    await out.close()
  }
  copied(usage)
  const copy = copyTo
    ? copyFile(compact, copyTo).then(
        () => copyTo,
        () => {
          rmSync(copyTo, { force: true })
          return null
        },
      )
    : Promise.resolve(null)
  try {
    return { file: compact, hash: await hashFileOffThread(compact), copy }
  } catch (err) {
    // Nothing may still be writing into a release folder being removed.
    await copy
    throw err
  }
}

function secondsSince(start: number): string {
  return ((Date.now() - start) / 1000).toFixed(1)
}
