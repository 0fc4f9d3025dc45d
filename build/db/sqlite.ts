/**
 * The one module that opens SQLite: promise wrappers over the async `sqlite3` binding, so queries
 * run off the event loop. Used by the build (read-write) and the shim (read-only).
 */
import sqlite3 from 'sqlite3'

export type SqlValue = string | number | bigint | null | Buffer
export type SqlParams = readonly SqlValue[] | Record<string, SqlValue>
export type Row = Record<string, unknown>

/** An open database with promise-returning helpers. */
export interface Db {
  readonly raw: sqlite3.Database
  readonly file: string
  run(sql: string, params?: SqlParams): Promise<{ changes: number; lastID: number }>
  all<T = Row>(sql: string, params?: SqlParams): Promise<T[]>
  get<T = Row>(sql: string, params?: SqlParams): Promise<T | undefined>
  exec(sql: string): Promise<void>
  prepare(sql: string): Promise<Statement>
  close(): Promise<void>
}

/** A prepared statement, reused across calls (no re-parse per request). */
export interface Statement {
  all<T = Row>(params?: SqlParams): Promise<T[]>
  get<T = Row>(params?: SqlParams): Promise<T | undefined>
  run(params?: SqlParams): Promise<{ changes: number }>
  finalize(): Promise<void>
}

/** Options of openDb. */
export interface OpenDbOptions {
  readonly?: boolean
  /** Milliseconds to wait on a locked database before SQLITE_BUSY. */
  busyTimeout?: number
  /**
   * Statements `all` keeps prepared, by SQL text, least recently used dropped first (0, the default:
   * none). For a read-only connection whose queries are a few fixed texts with bound values, as the
   * shim's are: node-sqlite3's `Database#all` prepares its statement on every call, about 60–70 µs
   * of CPU for the 100-hash lookup at the large catalog (bench/results/PROFILE.md, Session 17).
   */
  statementCache?: number
  /** `file:` URIs in ATTACH (`?mode=ro` attaches a database read-only); off by default, as in SQLite. */
  uri?: boolean
}

/** Opens (or creates) a database file. */
export function openDb(file: string, options: OpenDbOptions = {}): Promise<Db> {
  const mode = (options.readonly ? sqlite3.OPEN_READONLY : sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE) | (options.uri ? sqlite3.OPEN_URI : 0)
  return new Promise((resolve, reject) => {
    const raw = new sqlite3.Database(file, mode, (err) => {
      if (err) return reject(err)
      raw.configure('busyTimeout', options.busyTimeout ?? 5000)
      resolve(wrapDb(raw, file, options.statementCache ?? 0))
    })
  })
}

/**
 * `db` with its `all` run on statements prepared once and kept (as openDb's `statementCache` does),
 * for a pass of paged reads on a connection opened without them; `release` finalizes them and leaves
 * the connection open (`close` does both). node-sqlite3's `Database#all` prepares on SQLite's
 * thread and runs the statement only once this thread has had a turn to hear that it is prepared:
 * a page asked for ahead while this thread renders the last one was prepared, then waited for the
 * render to end before it ran. At the large catalog the versions' pass of the render waited 8.6 s
 * of its 15.4 for its pages that way (bench/results/BUILD-PROFILE.md, Session 40). A kept
 * statement runs as soon as it is asked.
 */
export function keepingStatements(db: Db, limit: number): Db & { release(): Promise<void> } {
  const kept = keptStatements(db.raw, limit)
  return {
    ...db,
    all: <T>(sql: string, params?: SqlParams) => kept.all<T>(sql, params),
    release: () => kept.finalizeAll(),
    close: async () => {
      await kept.finalizeAll()
      await db.close()
    },
  }
}

function args(params?: SqlParams): unknown[] {
  return params === undefined ? [] : [params]
}

function wrapDb(raw: sqlite3.Database, file: string, statementCache: number): Db {
  const kept = statementCache > 0 ? keptStatements(raw, statementCache) : undefined
  return {
    raw,
    file,
    run: (sql, params) =>
      new Promise((resolve, reject) => {
        raw.run(sql, ...args(params), function (this: sqlite3.RunResult, err: Error | null) {
          if (err) reject(err)
          else resolve({ changes: this.changes, lastID: this.lastID })
        })
      }),
    all: <T>(sql: string, params?: SqlParams) =>
      kept
        ? kept.all<T>(sql, params)
        : new Promise<T[]>((resolve, reject) => {
            raw.all(sql, ...args(params), (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows)))
          }),
    get: <T>(sql: string, params?: SqlParams) =>
      new Promise<T | undefined>((resolve, reject) => {
        raw.get(sql, ...args(params), (err: Error | null, row: T | undefined) => (err ? reject(err) : resolve(row)))
      }),
    exec: (sql) => new Promise((resolve, reject) => raw.exec(sql, (err) => (err ? reject(err) : resolve()))),
    prepare: (sql) =>
      new Promise((resolve, reject) => {
        const stmt: sqlite3.Statement = raw.prepare(sql, (err) => (err ? reject(err) : resolve(wrapStatement(stmt))))
      }),
    close: async () => {
      // sqlite3_close refuses a connection with statements not finalized.
      await kept?.finalizeAll()
      await new Promise<void>((resolve, reject) => raw.close((err) => (err ? reject(err) : resolve())))
    },
  }
}

/**
 * Prepared statements by SQL text, at most `limit`, the least recently used finalized first. A
 * statement's calls queue behind each other in node-sqlite3 (as a connection's queries run one at a
 * time anyway), and `all` resets it after its last row, so one statement serves every caller.
 * Callers wait for the preparation: node-sqlite3 drops the calls queued on a statement that fails to
 * prepare without calling them back. One that fails is forgotten at once (its callers get SQLite's
 * error; the next call prepares the text again). One evicted is finalized only after the callers
 * that already hold it have queued their calls (a macrotask later), so none meets a finalized one.
 */
function keptStatements(raw: sqlite3.Database, limit: number) {
  const statements = new Map<string, Promise<sqlite3.Statement>>()
  // Each statement once prepared: a call to it is queued at once, not a microtask later.
  const prepared = new WeakMap<Promise<sqlite3.Statement>, sqlite3.Statement>()
  const finalize = (stmt: sqlite3.Statement): Promise<void> => new Promise((resolve) => stmt.finalize(() => resolve()))
  const prepare = (sql: string): Promise<sqlite3.Statement> =>
    new Promise((resolve, reject) => {
      const stmt: sqlite3.Statement = raw.prepare(sql, (err) => (err ? reject(err) : resolve(stmt)))
    })
  const statement = (sql: string): Promise<sqlite3.Statement> => {
    const kept = statements.get(sql)
    if (kept !== undefined) {
      // Most recently used last: a Map iterates in insertion order.
      statements.delete(sql)
      statements.set(sql, kept)
      return kept
    }
    const made = prepare(sql)
    statements.set(sql, made)
    made.then(
      (stmt) => void prepared.set(made, stmt),
      () => {
        if (statements.get(sql) === made) statements.delete(sql)
      },
    )
    if (statements.size > limit) {
      const [oldest, old] = statements.entries().next().value as [string, Promise<sqlite3.Statement>]
      statements.delete(oldest)
      old.then((stmt) => setImmediate(() => void finalize(stmt)), () => {})
    }
    return made
  }
  return {
    all<T>(sql: string, params: SqlParams | undefined): Promise<T[]> {
      const run = (stmt: sqlite3.Statement): Promise<T[]> =>
        new Promise<T[]>((resolve, reject) => {
          stmt.all(...args(params), (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows)))
        })
      const made = statement(sql)
      const stmt = prepared.get(made)
      return stmt ? run(stmt) : made.then(run)
    },
    /** Finalizes every kept statement (before the connection closes). */
    async finalizeAll(): Promise<void> {
      const all = [...statements.values()]
      statements.clear()
      const settled = await Promise.allSettled(all)
      // A macrotask later, as for an eviction: callers holding one have queued their calls by then.
      await new Promise((resolve) => setImmediate(resolve))
      await Promise.all(settled.flatMap((s) => (s.status === 'fulfilled' ? [finalize(s.value)] : [])))
    },
  }
}

function wrapStatement(stmt: sqlite3.Statement): Statement {
  return {
    all: <T>(params?: SqlParams) =>
      new Promise<T[]>((resolve, reject) => {
        stmt.all(...args(params), (err: Error | null, rows: T[]) => (err ? reject(err) : resolve(rows)))
      }),
    get: <T>(params?: SqlParams) =>
      new Promise<T | undefined>((resolve, reject) => {
        stmt.get(...args(params), (err: Error | null, row: T | undefined) => (err ? reject(err) : resolve(row)))
      }),
    run: (params) =>
      new Promise((resolve, reject) => {
        stmt.run(...args(params), function (this: sqlite3.RunResult, err: Error | null) {
          if (err) reject(err)
          else resolve({ changes: this.changes })
        })
      }),
    finalize: () => new Promise((resolve) => stmt.finalize(() => resolve())),
  }
}

/**
 * Several read connections to one database file behind one Db, so up to `dbs.length` queries run at
 * once, each on its connection's own SQLite thread. A query goes to the first connection with fewer
 * than `spillAt` queries in flight, else to the one with the fewest (the first of those). With the
 * default 2, a query waits behind at most one other before the next connection takes it: the
 * queries of a light load stay on the first connection (its page cache stays warm, and no second
 * SQLite thread takes the core the event loop needs), and a queue spills over. Measured at the large
 * catalog, 32 in flight (bench/results/PROFILE.md, "Session 13"): spilling at 1 cost one-off bulk
 * lookups about 6% of their requests/s against one connection, spilling at 2 none, and both took
 * cache-off lookups from about 217 to 304–316 requests/s. For read-only use: a statement prepared
 * on the pool stays on one connection, and `raw` is the first connection's.
 */
export function createDbPool(dbs: readonly Db[], spillAt = 2): Db {
  if (dbs.length === 0) throw new Error('a pool needs at least one connection')
  if (dbs.length === 1) return dbs[0]!
  const inFlight = dbs.map(() => 0)
  const pick = (): number => {
    for (let i = 0; i < dbs.length; i++) if (inFlight[i]! < spillAt) return i
    let best = 0
    for (let i = 1; i < dbs.length; i++) if (inFlight[i]! < inFlight[best]!) best = i
    return best
  }
  const on = async <T>(call: (db: Db) => Promise<T>): Promise<T> => {
    const i = pick()
    inFlight[i]!++
    try {
      return await call(dbs[i]!)
    } finally {
      inFlight[i]!--
    }
  }
  return {
    raw: dbs[0]!.raw,
    file: dbs[0]!.file,
    run: (sql, params) => on((db) => db.run(sql, params)),
    all: <T>(sql: string, params?: SqlParams) => on((db) => db.all<T>(sql, params)),
    get: <T>(sql: string, params?: SqlParams) => on((db) => db.get<T>(sql, params)),
    exec: (sql) => on((db) => db.exec(sql)),
    prepare: (sql) => dbs[pick()]!.prepare(sql),
    close: async () => {
      const results = await Promise.allSettled(dbs.map((db) => db.close()))
      const failed = results.find((r) => r.status === 'rejected')
      if (failed) throw (failed as PromiseRejectedResult).reason
    },
  }
}
