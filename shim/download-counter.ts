/**
 * Download counting: once per (UTC day, file, visitor). The visitor is an HMAC of the client key
 * with a secret of the day (shim/download-secret.ts); no IP or User-Agent is ever stored. Counts
 * live in their own SQLite file (WAL, synchronous=FULL), never touched by a rebuild; the next build
 * folds `file_downloads` into `downloads`.
 *
 * Writes are group-committed: a download waits for the transaction holding its event (one
 * transaction per batch, dedup rows and counter increments together), so a 302 is only sent for a
 * committed count and `kill -9` loses no acknowledged download. If the store stays locked longer
 * than commitTimeoutMs the redirect is sent anyway and the event stays queued and is retried.
 * This is the single-process store; shim/download-counter-redis.ts shares counting across replicas.
 */
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { createGroupCommit } from './group-commit.ts'
import { createSecretKey, previousDay, readSecretFile, renderVisitor, utcDay, writeSecretFile } from './download-secret.ts'

/** Options of the counter. */
export interface DownloadCounterOptions {
  file: string
  /** Where the day secret is kept between restarts (tmpfs: gone on reboot); null = memory only. */
  secretFile: string | null
  now?: () => number
  commitTimeoutMs?: number
  maxBatch?: number
}

/** The counter store. */
export interface DownloadCounter {
  /** Counts one download; resolves once committed (or after the commit timeout, still queued). */
  record(fileId: string, clientKey: string): Promise<void>
  /** Events waiting to be committed (a metric of the backlog). */
  backlog(): number
  /** Commits everything queued. */
  flush(): Promise<void>
  close(): Promise<void>
}

/** One counted visit: no address, only the day's HMAC of it. */
export interface Visit {
  day: string
  fileId: string
  visitor: string
}

export const counterSchema = `
CREATE TABLE IF NOT EXISTS download_visits (day TEXT NOT NULL, file_id TEXT NOT NULL, visitor TEXT NOT NULL, PRIMARY KEY (day, file_id, visitor)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_downloads (file_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
`

/** Opens (creating if needed) the counter database and checks its durability settings. */
export async function openCounterDb(file: string): Promise<Db> {
  mkdirSync(path.dirname(file), { recursive: true })
  const db = await openDb(file, { busyTimeout: 5000 })
  await db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; ${counterSchema}`)
  const mode = await db.get<{ journal_mode: string }>(`PRAGMA journal_mode`)
  if (mode?.journal_mode !== 'wal') throw new Error(`${file}: the counter database must be in WAL mode (is ${mode?.journal_mode})`)
  return db
}

/**
 * Commits a batch in one transaction: inserts its dedup rows and adds to the totals exactly the
 * rows inserted, so a visit already present (a duplicate, a redelivery) is never counted twice.
 * Only today's and yesterday's rows can still deduplicate anything; older ones are pruned.
 */
export async function commitVisits(db: Db, batch: Visit[]): Promise<void> {
  if (batch.length === 0) return
  await db.exec('BEGIN IMMEDIATE')
  try {
    const rows = await db.all<{ file_id: string }>(
      `INSERT OR IGNORE INTO download_visits (day, file_id, visitor)
       SELECT value->>0, value->>1, value->>2 FROM json_each(?) RETURNING file_id`,
      [JSON.stringify(batch.map((e) => [e.day, e.fileId, e.visitor]))],
    )
    const counts = new Map<string, number>()
    for (const r of rows) counts.set(r.file_id, (counts.get(r.file_id) ?? 0) + 1)
    if (counts.size > 0) {
      await db.run(
        `INSERT INTO file_downloads (file_id, n) SELECT value->>0, value->>1 FROM json_each(?) WHERE true
         ON CONFLICT (file_id) DO UPDATE SET n = n + excluded.n`,
        [JSON.stringify([...counts])],
      )
    }
    const today = batch.reduce((max, e) => (e.day > max ? e.day : max), '')
    await db.run(`DELETE FROM download_visits WHERE day < ?`, [previousDay(today)])
    await db.exec('COMMIT')
  } catch (err) {
    await db.exec('ROLLBACK').catch(() => {})
    throw err
  }
}

/** Opens the single-process counter over its SQLite file. */
export async function openDownloadCounter(options: DownloadCounterOptions): Promise<DownloadCounter> {
  const now = options.now ?? Date.now
  const db = await openCounterDb(options.file)
  const queue = createGroupCommit<Visit>((batch) => commitVisits(db, batch), {
    maxBatch: options.maxBatch ?? 500,
    timeoutMs: options.commitTimeoutMs ?? 2000,
    label: '[downloads]',
  })
  let secret: { day: string; key: Buffer } = { day: '', key: Buffer.alloc(0) }

  const daySecret = (day: string): Buffer => {
    if (secret.day === day) return secret.key
    let key = readSecretFile(options.secretFile, day)
    if (!key) {
      key = createSecretKey()
      writeSecretFile(options.secretFile, day, key)
    }
    secret = { day, key }
    return key
  }

  return {
    record(fileId, clientKey) {
      const day = utcDay(now())
      // Events arriving while a transaction runs join the next one (group commit).
      return queue.add({ day, fileId, visitor: renderVisitor(daySecret(day), clientKey) })
    },
    backlog: queue.backlog,
    flush: queue.flush,
    async close() {
      await queue.flush()
      await db.close()
    },
  }
}
