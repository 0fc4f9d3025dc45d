/**
 * Loads the source catalog: globs `data/` with fast-glob (a rebuild lists it with list-sources.ts),
 * parses and validates each record with its zod schema, computes blob sizes and hashes
 * (load-records.ts), and streams the normalised records into the staging database in batches.
 * Memory stays flat as the catalog grows.
 *
 * Both cores: the files of each kind go in chunks of CHUNK to the load worker (a child process,
 * load-pool.ts) while it has fewer than WORKER_QUEUE, and are parsed here when it has that many; the
 * chunks' rows and problems are applied in glob order whoever parsed them, so staging and the
 * problem list are the same as from one thread. Inserts run on SQLite's thread.
 *
 * A rebuild with staging kept from the last build (staging-cache.ts) lists the files with their
 * stats (one `find` walk, list-sources.ts), drops the rows of changed and removed files, and reads
 * only the changed and new ones.
 *
 * Records are read synchronously into one reused buffer: the 104,015 version records of a
 * 10,000-project catalog take 2.8–3.5 s and 0.6 s of CPU so, against 14–19 s and 8 s with 64
 * `fs.promises.readFile` in flight (open, fstat, read and close each a thread-pool round trip and a
 * promise); 18 s against 21 s with the pages evicted from the cache (bench/results/HISTORY.md).
 */
import path from 'node:path'
import fg from 'fast-glob'
import type { BuildContext } from './context.ts'
import { addProblem } from './context.ts'
import type { Db } from './db/sqlite.ts'
import { listSources, statSignature } from './list-sources.ts'
import { RACY } from './staging-cache.ts'
import { createLoadPool, type LoadPool } from './load-pool.ts'
import { parseRecordChunk, recordKinds, type RecordChunk, type RecordKindName } from './load-records.ts'

const BATCH = 1000
/** Files per chunk: large enough that a round trip to the worker is small beside its parsing. */
const CHUNK = 128
/** Chunks parsed ahead of the oldest one not yet applied (bounds the rows held in memory). */
const AHEAD = 8
/** Chunks queued at each worker: it never waits for the next one while this thread parses its own. */
const WORKER_QUEUE = 2

/** What a load did: records per staging table, and the record files read (all of them unless staging was kept). */
export interface LoadCounts {
  records: Record<string, number>
  filesRead: number
}

/**
 * Loads every source record into staging; problems are collected in ctx. With `kept` (staging
 * kept from the last build, staging-cache.ts), only record files whose stat signature (or one of
 * whose blobs') changed, and new ones, are read; the rows of those and of removed files are
 * dropped first.
 */
export async function loadSource(ctx: BuildContext, kept = false): Promise<LoadCounts> {
  const counts: Record<string, number> = {}
  let filesRead = 0
  // A pool is started only when there is something to parse (a kept staging with no change needs none).
  let pool = null as LoadPool | null
  const startPool = (): LoadPool | null => (pool ??= ctx.options.loadWorkers > 0 ? createLoadPool(ctx.options.dataDir, ctx.options.loadWorkers) : null)
  try {
    let listedAll = true
    if (kept) {
      await ctx.staging.exec(`DELETE FROM s_touched`)
      listedAll = await listSourcesInto(ctx)
    }
    for (const kind of Object.keys(recordKinds) as RecordKindName[]) {
      const { tables } = recordKinds[kind]
      const changed = kept ? await changedSources(ctx, kind, listedAll) : null
      if (changed && changed.length === 0) {
        counts[tables[0]!] = await countRows(ctx, tables[0]!)
        continue
      }
      const loaded = await loadKind(ctx, kind, changed && changed.length < CHUNK * 4 ? null : startPool(), changed)
      if (changed) await recordTouched(ctx, kind, `(SELECT value FROM json_each(?))`, [JSON.stringify(changed)])
      counts[tables[0]!] = changed ? await countRows(ctx, tables[0]!) : loaded.count
      filesRead += loaded.files
    }
    if (kept) await ctx.staging.exec(`DROP TABLE temp.listed; DROP TABLE IF EXISTS temp.gone;`)
  } finally {
    const usage = await pool?.close()
    if (usage) ctx.options.log(`… the load worker${pool!.size > 1 ? `s (${pool!.size}) ` : ' '}used ${usage.cpuSeconds.toFixed(1)}s of CPU, peak RSS ${(usage.maxRss / 1e6).toFixed(0)} MB`)
  }
  if (counts.s_catalog === 0) addProblem(ctx, 'catalog.json', '(record)', 'missing: the catalog needs a catalog.json')
  return { records: counts, filesRead }
}

async function countRows(ctx: BuildContext, table: string): Promise<number> {
  return (await ctx.staging.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n
}

/**
 * Lists every record file of the data folder with its stat signature into `temp.listed` (kind,
 * file, signature; list-sources.ts), in the order the folders are read: one walk for all kinds.
 * With BUILD_CHANGED_FILES, no walk: `temp.listed` holds only the named files that are there, with
 * their fresh signatures, and `temp.gone` those that are not (their rows are dropped); every other
 * file counts as unchanged without a stat. Returns whether `temp.listed` holds every file
 * (changedSources reads it so).
 */
async function listSourcesInto(ctx: BuildContext): Promise<boolean> {
  const { staging } = ctx
  const kinds = Object.keys(recordKinds) as RecordKindName[]
  await staging.exec(`
    DROP TABLE IF EXISTS temp.listed;
    DROP TABLE IF EXISTS temp.gone;
    CREATE TEMP TABLE listed (kind TEXT NOT NULL, file TEXT PRIMARY KEY, signature TEXT NOT NULL);
  `)
  const named = ctx.options.changedFiles
  if (named) {
    // The files the publisher names as changed (BUILD_CHANGED_FILES). A file stored as racy
    // (changed just before the last build read it) is looked at as if named. Only these are
    // listed: copying staging's 1.16 M files and signatures into the list, for every file but
    // these to compare equal, took 1.4 s of a rebuild at the large catalog and each kind's
    // comparison over them 2.5 s more (bench/results/BUILD-PROFILE.md, Session 41).
    const racy = await staging.all<{ kind: RecordKindName; file: string }>(`SELECT kind, file FROM s_sources WHERE signature = ?`, [RACY])
    const present: [string, string, string][] = []
    const gone: string[] = []
    for (const [kind, file] of [...named.map(([i, file]) => [kinds[i]!, file] as const), ...racy.map((r) => [r.kind, r.file] as const)]) {
      const signature = statSignature(path.join(ctx.options.dataDir, file))
      if (signature === null) gone.push(file)
      else present.push([kind, file, signature])
    }
    await staging.exec(`CREATE TEMP TABLE gone (file TEXT PRIMARY KEY)`)
    await staging.run(`INSERT OR IGNORE INTO temp.gone SELECT value FROM json_each(?)`, [JSON.stringify(gone)])
    await staging.run(`INSERT OR REPLACE INTO temp.listed (kind, file, signature) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?)`, [JSON.stringify(present)])
  } else {
    const listed = createBatcher(staging, 'temp.listed')
    await listSources(ctx.options.dataDir, kinds.map((k) => recordKinds[k].pattern), ([i, file, signature]) => listed.add([kinds[i]!, file, signature]))
    await listed.flush()
  }
  await staging.exec(`CREATE INDEX temp.listed_kind ON listed(kind)`)
  return named === null
}

/**
 * The record files of `kind` to read again into a kept staging, in listing order: new ones, and
 * those whose stat signature or one of whose blobs' differs from s_sources. Their rows, and those
 * of the kind's files gone from the data folder, are deleted. The comparison runs in SQLite (the
 * temp tables of listSourcesInto), so memory stays flat however many files there are. `listedAll`:
 * `temp.listed` holds every file of the data folder; else only the named ones, and `temp.gone`
 * those named that are gone (BUILD_CHANGED_FILES).
 */
async function changedSources(ctx: BuildContext, kind: RecordKindName, listedAll: boolean): Promise<string[]> {
  const { staging } = ctx
  const { tables } = recordKinds[kind]
  await staging.exec(`DROP TABLE IF EXISTS temp.changed; CREATE TEMP TABLE changed (file TEXT PRIMARY KEY);`)
  await staging.run(
    `INSERT INTO temp.changed SELECT g.file FROM temp.listed g LEFT JOIN s_sources s ON s.file = g.file AND s.kind = g.kind
     WHERE g.kind = ? AND (s.file IS NULL OR s.signature <> g.signature)`,
    [kind],
  )
  // Files unchanged themselves whose blobs (read by the load, hashed into their rows) changed:
  // every blob is checked, named or not.
  const withBlobs = await staging.all<{ file: string; blobs: string }>(
    listedAll
      ? `SELECT s.file, s.blobs FROM s_sources s JOIN temp.listed g ON g.file = s.file AND g.kind = s.kind AND g.signature = s.signature WHERE s.kind = ? AND s.blobs IS NOT NULL`
      : `SELECT s.file, s.blobs FROM s_sources s WHERE s.kind = ? AND s.blobs IS NOT NULL AND s.file NOT IN temp.gone AND s.file NOT IN temp.changed`,
    [kind],
  )
  const blobChanged = withBlobs.filter((row) => (JSON.parse(row.blobs) as [string, string][]).some(([blob, signature]) => statSignature(path.join(ctx.options.dataDir, blob)) !== signature))
  if (blobChanged.length > 0) {
    const files = JSON.stringify(blobChanged.map((r) => r.file))
    await staging.run(`INSERT INTO temp.changed SELECT value FROM json_each(?)`, [files])
    // Read from the list below: with only the named files listed, these join it.
    if (!listedAll) await staging.run(`INSERT OR IGNORE INTO temp.listed (kind, file, signature) SELECT kind, file, signature FROM s_sources WHERE file IN (SELECT value FROM json_each(?))`, [files])
  }
  // Rows to drop: those of changed files and of the kind's files no longer listed. Deleted through
  // each table's index on `file` (stagingIndexes): a scan of s_versions would read its 1 M rows.
  await staging.exec(`DROP TABLE IF EXISTS temp.stale; CREATE TEMP TABLE stale (file TEXT PRIMARY KEY);`)
  await staging.run(
    listedAll
      ? `INSERT OR IGNORE INTO temp.stale SELECT s.file FROM s_sources s WHERE s.kind = ? AND (s.file IN temp.changed OR NOT EXISTS (SELECT 1 FROM temp.listed g WHERE g.file = s.file AND g.kind = s.kind))`
      : `INSERT OR IGNORE INTO temp.stale SELECT s.file FROM s_sources s WHERE s.file IN (SELECT file FROM temp.changed UNION ALL SELECT file FROM temp.gone) AND s.kind = ?`,
    [kind],
  )
  await recordTouched(ctx, kind, 'temp.stale')
  for (const table of [...tables, 's_sources']) await staging.run(`DELETE FROM ${table} WHERE file IN temp.stale`)
  const changed = await staging.all<{ file: string }>(`SELECT g.file FROM temp.listed g WHERE g.kind = ? AND g.file IN temp.changed ORDER BY g.rowid`, [kind])
  await staging.exec(`DROP TABLE temp.changed; DROP TABLE temp.stale;`)
  return changed.map((r) => r.file)
}

/** The columns s_touched takes from each kind's first table: its id (a reference file: the file), and a version's project. */
const touchedColumns: Record<RecordKindName, string> = {
  catalog: 'file, NULL',
  categories: 'file, NULL',
  types: 'file, NULL',
  gameVersions: 'file, NULL',
  users: 'id, NULL',
  projects: 'id, NULL',
  versions: 'id, project_id',
}

/**
 * Records in s_touched the records of `kind` in the files `files` (an SQL list: a table or a
 * subquery, with `params`): those about to be dropped, and those just read again. A rebuild
 * reuses what it can of the previous release for the others (catalog-memo.ts).
 */
async function recordTouched(ctx: BuildContext, kind: RecordKindName, files: string, params: string[] = []): Promise<void> {
  const table = recordKinds[kind].tables[0]!
  await ctx.staging.run(`INSERT INTO s_touched (kind, id, project_id) SELECT ?, ${touchedColumns[kind]} FROM ${table} WHERE file IN ${files}`, [kind, ...params])
}

/**
 * Loads the records of one kind: globbed (or `only` these files) in chunks, parsed here or in the
 * worker, applied in order. Returns the records that validated and the files read.
 */
async function loadKind(ctx: BuildContext, kind: RecordKindName, pool: LoadPool | null, only: readonly string[] | null = null): Promise<{ count: number; files: number }> {
  const { pattern, tables } = recordKinds[kind]
  const batchers = new Map([...tables, 's_sources'].map((t) => [t, createBatcher(ctx.staging, t)]))
  const pending: Promise<RecordChunk>[] = []
  let count = 0
  let files = 0
  let lastProgress = Date.now()
  const apply = async (chunk: RecordChunk): Promise<void> => {
    ctx.problems.push(...chunk.problems)
    for (const [table, rows] of Object.entries(chunk.rows)) {
      const batch = batchers.get(table)!
      for (const row of rows) await batch.addSerialised(row)
    }
    count += chunk.count
    if (Date.now() - lastProgress > 5000) {
      lastProgress = Date.now()
      ctx.options.log(`… loaded ${count} ${pattern} records`)
    }
  }
  const dispatch = async (chunk: string[]): Promise<void> => {
    files += chunk.length
    if (pool && pool.busy < WORKER_QUEUE * pool.size) {
      const remote = pool.run(kind, chunk)
      // Awaited in order below; a failure surfaces there.
      remote.catch(() => {})
      pending.push(remote)
    } else pending.push(Promise.resolve(parseRecordChunk(kind, ctx.options.dataDir, chunk)))
    while (pending.length > AHEAD) await apply(await pending.shift()!)
  }
  let chunk: string[] = []
  const listed: AsyncIterable<unknown> | Iterable<string> = only ?? fg.stream(pattern, { cwd: ctx.options.dataDir, onlyFiles: true })
  for await (const entry of listed) {
    chunk.push(String(entry))
    if (chunk.length >= CHUNK) {
      await dispatch(chunk)
      chunk = []
    }
  }
  if (chunk.length > 0) await dispatch(chunk)
  for (const done of pending) await apply(await done)
  for (const batch of batchers.values()) await batch.flush()
  return { count, files }
}

/** Batched inserts into one table. */
export interface Batcher {
  /** Adds a row. */
  add(row: unknown[]): Promise<void>
  /** Adds a row already serialised as a JSON array. */
  addSerialised(row: string): Promise<void>
  /** Inserts what is buffered and waits for every insert. */
  flush(): Promise<void>
}

/**
 * Buffers rows and inserts them with one statement per batch (a JSON array bound as one parameter).
 * A full batch is queued behind the previous one and add() waits only for that previous one, so
 * the caller prepares the next batch while SQLite inserts this one (order kept, two in flight).
 */
export function createBatcher(db: Db, table: string): Batcher {
  let rows: string[] = []
  let columns = 0
  let pending: Promise<unknown> = Promise.resolve()
  const queue = (): Promise<unknown> => {
    const before = pending
    if (rows.length === 0) return before
    // The same text as JSON.stringify of the array of rows.
    const json = `[${rows.join(',')}]`
    const select = Array.from({ length: columns }, (_, i) => `value->>${i}`).join(', ')
    rows = []
    pending = before.then(() => db.run(`INSERT INTO ${table} SELECT ${select} FROM json_each(?)`, [json]))
    // Marked handled here; the error is thrown by the next add() or flush(), which await it.
    pending.catch(() => {})
    return before
  }
  return {
    async add(row) {
      columns = row.length
      rows.push(JSON.stringify(row))
      if (rows.length >= BATCH) await queue()
    },
    async addSerialised(row) {
      // Rows of one table all have the table's columns: counted once, on the first row.
      if (columns === 0) columns = (JSON.parse(row) as unknown[]).length
      rows.push(row)
      if (rows.length >= BATCH) await queue()
    },
    async flush() {
      queue()
      await pending
    },
  }
}
