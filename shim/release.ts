/**
 * The live release as the shim sees it: its folder (resolved once per swap, so every request of a
 * generation reads one consistent release) and its catalog database, opened read-only.
 */
import { existsSync, realpathSync } from 'node:fs'
import path from 'node:path'
import { createDbPool, openDb, type Db } from '../build/db/sqlite.ts'
import { readHashIndexRow, type HashIndex } from '../build/hash-index.ts'
import { createBody } from '../build/render/body.ts'
import { readVersionTargetsRow, type VersionTargets } from '../build/version-targets.ts'
import type { StaticCache } from './static-cache.ts'

/** An opened release. */
export interface Release {
  /** Real path of the release folder. */
  dir: string
  /** Real path of its `public/` tree. */
  publicDir: string
  id: string
  db: Db
  /** The game segment of `/{game}/versions`. */
  game: string
  /**
   * The catalog's index of known file hashes (build/hash-index.ts), held in memory; undefined for a
   * catalog built before it had one (Session 24): every hash then goes to SQLite.
   */
  hashIndex?: HashIndex
  /**
   * What each version targets (build/version-targets.ts), held in memory for update matching with
   * the hash index; undefined for a catalog built before it had them (Session 25): update matching
   * then walks the versions in SQLite.
   */
  versionTargets?: VersionTargets
  /** Whether its `files` rows carry their version's rowid (`version_rowid`); false for a catalog built before they did. */
  filesVersionRowid: boolean
  /** Whether its `versions` rows carry their body's ETag (`body_etag`); false for a catalog built before they did (Session 24). */
  versionsBodyEtag: boolean
}

/** How the shim opens a catalog: from ShimOptions' readConnections and catalogMmapBytes. */
export interface CatalogAccess {
  /** Read connections behind one Db; up to this many queries run at once. */
  connections: number
  /** Bytes of the file each connection maps into memory (`PRAGMA mmap_size`); 0 reads pages with pread. */
  mmapBytes: number
}

/**
 * Opens a catalog database read-only: `connections` connections behind one Db (createDbPool, which
 * spills a query to the next connection once the first has two in flight). Each connection runs its
 * queries on its own thread, so SQLite work queued up (the cache off, or just after a release went
 * live) uses both cores of this machine: at the large catalog with the cache off, 32 in flight, two
 * connections answered about 1.4× the bulk lookups of one, p99 about 30% lower
 * (bench/results/PROFILE.md, "Session 13").
 *
 * Each connection has SQLite's default page cache (2,000 KiB). Bulk hash lookups and update matching
 * descend three or four B-trees per hash through 8 KB pages, and 8 MB kept those indexes' interior pages
 * (bulk update 2.2 → 2.0 ms of CPU per 100-hash request at the large catalog, interleaved A/B; 16 MB
 * no better). But the cache counts in RSS, outside the JS heap, and with 8 MB the full benchmark
 * measured the shim at 301 MB under all load, over the 300 MB goal (289 MB in a shorter run; 282–284
 * MB with the default): the memory bound is kept, the 9% is not (bench/results/PROFILE.md, "Session
 * 5" and "Session 6").
 *
 * `mmapBytes` (CATALOG_MMAP_BYTES) maps the file's first bytes into each connection: a page missing
 * from the page cache is then read from the kernel's page cache without a pread. With the cache off,
 * about 45% of the shim's CPU was those preads (about 6 a hash; `perf`, bench/results/PROFILE.md,
 * "Session 14"). The mapped pages count in the process's RSS (as shared file pages, reclaimable by
 * the kernel), so it is off unless asked for. A release's catalog is never written once published,
 * which mapping needs: a mapped file cut short under a reader would kill the process with SIGBUS.
 */
async function openCatalog(file: string, access: CatalogAccess): Promise<Db> {
  const opened = await Promise.allSettled(Array.from({ length: access.connections }, () => openReader(file, access.mmapBytes)))
  const failed = opened.find((o) => o.status === 'rejected')
  if (failed) {
    await Promise.allSettled(opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value.close()] : [])))
    throw (failed as PromiseRejectedResult).reason
  }
  return createDbPool(opened.map((o) => (o as PromiseFulfilledResult<Db>).value))
}

/**
 * Statements each read connection keeps prepared (openDb's statementCache): the shim's queries are
 * about 20 fixed texts (a few with a table or an order picked from a fixed list), so every one stays
 * prepared and none is prepared again per request.
 */
const READER_STATEMENTS = 64

/** One read-only connection, its mapping set; closed again when the setting fails. */
async function openReader(file: string, mmapBytes: number): Promise<Db> {
  const db = await openDb(file, { readonly: true, statementCache: READER_STATEMENTS })
  if (mmapBytes === 0) return db
  try {
    // SQLite answers with the size it took: a smaller one (its compile-time limit) is refused, not kept.
    const row = await db.get<{ mmap_size: number }>(`PRAGMA mmap_size = ${Math.trunc(mmapBytes)}`)
    if (row?.mmap_size !== mmapBytes) throw new Error(`SQLite took mmap_size ${row?.mmap_size ?? 'none'} for ${file}, not the ${mmapBytes} asked (CATALOG_MMAP_BYTES)`)
    return db
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

/**
 * The catalog's index of known hashes, or undefined when its catalog has no `hash_index` table (built
 * before it had one, perhaps with the Bloom filter `hash_filter` that came before it, which is not
 * read: every hash then goes to SQLite). A table without a sound row is refused: the index would
 * rule out files that are there.
 */
async function readHashIndex(db: Db, file: string): Promise<HashIndex | undefined> {
  const table = await db.get(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hash_index'`)
  if (!table) return undefined
  const row = await db.get<{ buckets: unknown; keys: unknown; rowids: unknown; entries: unknown }>(`SELECT buckets, keys, rowids, entries FROM hash_index`)
  return readHashIndexRow(row ?? { buckets: undefined, keys: undefined, rowids: undefined, entries: undefined }, file)
}

/** The catalog's version targets, or undefined when it has no `version_targets` table; a table without a sound row is refused. */
async function readVersionTargets(db: Db, file: string): Promise<VersionTargets | undefined> {
  const table = await db.get(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'version_targets'`)
  if (!table) return undefined
  const row = await db.get<Parameters<typeof readVersionTargetsRow>[0]>(`SELECT starts, targets, target_width, target_starts, target_values, value_width, value_names FROM version_targets`)
  if (row === undefined) throw new Error(`${file}: its version_targets table has no row`)
  return readVersionTargetsRow(row, file)
}

/** Whether the catalog's `files` table has `version_rowid` (catalogs built since Session 22). */
async function hasFilesVersionRowid(db: Db): Promise<boolean> {
  return (await db.get(`SELECT 1 FROM pragma_table_info('files') WHERE name = 'version_rowid'`)) !== undefined
}

/** Whether the catalog's `versions` table has `body_etag` (catalogs built since Session 24). */
async function hasVersionsBodyEtag(db: Db): Promise<boolean> {
  return (await db.get(`SELECT 1 FROM pragma_table_info('versions') WHERE name = 'body_etag'`)) !== undefined
}

/** What a catalog has or lacks by the build that made it, read once at open, for a release or a snapshot alike. */
async function readCatalogLayout(db: Db, file: string): Promise<Pick<Release, 'game' | 'hashIndex' | 'versionTargets' | 'filesVersionRowid' | 'versionsBodyEtag'>> {
  const game = (await db.get<{ value: string }>(`SELECT value FROM meta WHERE key = 'game'`))!.value
  return {
    game,
    hashIndex: await readHashIndex(db, file),
    versionTargets: await readVersionTargets(db, file),
    filesVersionRowid: await hasFilesVersionRowid(db),
    versionsBodyEtag: await hasVersionsBodyEtag(db),
  }
}

/** Real path of the release `current` points to, or null when there is none yet. */
export function resolveLiveRelease(distDir: string): string | null {
  const pointer = path.join(distDir, 'current')
  if (!existsSync(pointer)) return null
  return realpathSync(pointer)
}

/** Opens the live release's catalog as `access` says; fails with a message naming the fix when nothing was built. */
export async function openRelease(distDir: string, access: CatalogAccess): Promise<Release> {
  const dir = resolveLiveRelease(distDir)
  if (!dir) throw new Error(`no release in ${distDir}: run \`npm run build\` first`)
  const db = await openCatalog(path.join(dir, 'catalog.sqlite'), access)
  try {
    return { dir, publicDir: path.join(dir, 'public'), id: path.basename(dir), db, ...(await readCatalogLayout(db, path.join(dir, 'catalog.sqlite'))) }
  } catch (err) {
    await db.close().catch(() => {})
    throw err
  }
}

/**
 * Opens an offline snapshot (build/release/snapshot.ts) as the release. Its `dir` is a name that
 * exists on no disk, so file lookups (objects, /mirror) find nothing; static bodies come from the
 * snapshot's tables through createSnapshotStatic.
 */
export async function openSnapshot(file: string, access: CatalogAccess): Promise<Release> {
  const real = realpathSync(file)
  const db = await openCatalog(real, access)
  const format = await db.get<{ value: string }>(`SELECT value FROM snapshot_info WHERE key = 'format'`).catch(() => undefined)
  if (!format) {
    await db.close()
    throw new Error(`${file} is not a release snapshot (no snapshot_info table)`)
  }
  const dir = `${real}#snapshot`
  // A snapshot names no release (its bytes depend on the data only): its file name stands for it.
  return { dir, publicDir: path.join(dir, 'public'), id: path.basename(real, '.sqlite'), db, ...(await readCatalogLayout(db, real)) }
}

/** The static lookup of a snapshot: `read(dir, /api/v1/...)` answers from its tables (the release-relative `public/api/v1/....json`). */
export function createSnapshotStatic(release: Release): StaticCache {
  const sql = `SELECT b.body FROM static_paths p JOIN static_bodies b ON b.sha256 = p.sha256 WHERE p.path = ?`
  return {
    async read(releaseDir, urlPath) {
      if (releaseDir !== release.dir) return null
      const row = await release.db.get<{ body: Buffer }>(sql, [`public${urlPath}.json`])
      return row ? createBody(Buffer.from(row.body)) : null
    },
    clear() {},
    generation: 0,
    size: 0,
  }
}
