/**
 * Loads the source catalog: globs `data/` with fast-glob (the only user of it), parses and validates
 * each record with its zod schema, computes blob sizes and hashes (load-records.ts), and streams the
 * normalised records into the staging database in batches. Memory stays flat as the catalog grows.
 *
 * Both cores: the files of each kind go in chunks of CHUNK to the load worker (a child process,
 * load-pool.ts) while it has fewer than WORKER_QUEUE, and are parsed here when it has that many; the
 * chunks' rows and problems are applied in glob order whoever parsed them, so staging and the
 * problem list are the same as from one thread. Inserts run on SQLite's thread.
 *
 * Records are read synchronously into one reused buffer: the 104,015 version records of a
 * 10,000-project catalog take 2.8–3.5 s and 0.6 s of CPU so, against 14–19 s and 8 s with 64
 * `fs.promises.readFile` in flight (open, fstat, read and close each a thread-pool round trip and a
 * promise); 18 s against 21 s with the pages evicted from the cache (README, "Performance").
 */
import fg from 'fast-glob'
import type { BuildContext } from './context.ts'
import { addProblem } from './context.ts'
import type { Db } from './db/sqlite.ts'
import { createLoadPool, type LoadPool } from './load-pool.ts'
import { parseRecordChunk, recordKinds, type RecordChunk, type RecordKindName } from './load-records.ts'

const BATCH = 1000
/** Files per chunk: large enough that a round trip to the worker is small beside its parsing. */
const CHUNK = 128
/** Chunks parsed ahead of the oldest one not yet applied (bounds the rows held in memory). */
const AHEAD = 8
/** Chunks queued at each worker: it never waits for the next one while this thread parses its own. */
const WORKER_QUEUE = 2

/** Loads every source record into staging; problems are collected in ctx. Returns record counts. */
export async function loadSource(ctx: BuildContext): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  const pool = ctx.options.loadWorkers > 0 ? createLoadPool(ctx.options.dataDir, ctx.options.loadWorkers) : null
  try {
    for (const kind of Object.keys(recordKinds) as RecordKindName[]) {
      const { tables } = recordKinds[kind]
      counts[tables[0]!] = await loadKind(ctx, kind, pool)
    }
  } finally {
    const usage = await pool?.close()
    if (usage) ctx.options.log(`… the load worker${pool!.size > 1 ? `s (${pool!.size}) ` : ' '}used ${usage.cpuSeconds.toFixed(1)}s of CPU, peak RSS ${(usage.maxRss / 1e6).toFixed(0)} MB`)
  }
  if (counts.s_catalog === 0) addProblem(ctx, 'catalog.json', '(record)', 'missing: the catalog needs a catalog.json')
  return counts
}

/** Loads the records of one kind: globbed in chunks, parsed here or in the worker, applied in order. */
async function loadKind(ctx: BuildContext, kind: RecordKindName, pool: LoadPool | null): Promise<number> {
  const { pattern, tables } = recordKinds[kind]
  const batchers = new Map(tables.map((t) => [t, createBatcher(ctx.staging, t)]))
  const pending: Promise<RecordChunk>[] = []
  let count = 0
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
  const dispatch = async (files: string[]): Promise<void> => {
    if (pool && pool.busy < WORKER_QUEUE * pool.size) {
      const remote = pool.run(kind, files)
      // Awaited in order below; a failure surfaces there.
      remote.catch(() => {})
      pending.push(remote)
    } else pending.push(Promise.resolve(parseRecordChunk(kind, ctx.options.dataDir, files)))
    while (pending.length > AHEAD) await apply(await pending.shift()!)
  }
  let files: string[] = []
  for await (const entry of fg.stream(pattern, { cwd: ctx.options.dataDir, onlyFiles: true })) {
    files.push(String(entry))
    if (files.length >= CHUNK) {
      await dispatch(files)
      files = []
    }
  }
  if (files.length > 0) await dispatch(files)
  for (const chunk of pending) await apply(await chunk)
  for (const batch of batchers.values()) await batch.flush()
  return count
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
