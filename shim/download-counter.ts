/**
 * Download counting: once per (UTC day, file, visitor). The visitor is an HMAC of the client key
 * with a secret of the day; the secret lives in memory and in a tmpfs file (so a restart keeps it)
 * and is replaced at each UTC day, so yesterday's visitors can no longer be linked to addresses.
 * No IP or User-Agent is ever stored. Counts live in their own SQLite file (WAL, synchronous=FULL),
 * never touched by a rebuild; the next build folds `file_downloads` into `downloads`.
 *
 * Writes are group-committed: a download waits for the transaction holding its event (one
 * transaction per batch, dedup rows and counter increments together), so a 302 is only sent for a
 * committed count and `kill -9` loses no acknowledged download. If the store stays locked longer
 * than commitTimeoutMs the redirect is sent anyway and the event stays queued and is retried.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db } from '../build/db/sqlite.ts'

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

interface Event {
  day: string
  fileId: string
  visitor: string
  done: () => void
}

export const counterSchema = `
CREATE TABLE IF NOT EXISTS download_visits (day TEXT NOT NULL, file_id TEXT NOT NULL, visitor TEXT NOT NULL, PRIMARY KEY (day, file_id, visitor)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_downloads (file_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
`

/** Opens (creating if needed) the counter database and checks its durability settings. */
export async function openDownloadCounter(options: DownloadCounterOptions): Promise<DownloadCounter> {
  const now = options.now ?? Date.now
  const maxBatch = options.maxBatch ?? 500
  const commitTimeoutMs = options.commitTimeoutMs ?? 2000
  mkdirSync(path.dirname(options.file), { recursive: true })
  const db = await openDb(options.file, { busyTimeout: 5000 })
  await db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; ${counterSchema}`)
  const mode = await db.get<{ journal_mode: string }>(`PRAGMA journal_mode`)
  if (mode?.journal_mode !== 'wal') throw new Error(`${options.file}: the counter database must be in WAL mode (is ${mode?.journal_mode})`)

  const queue: Event[] = []
  let flushing: Promise<void> | null = null
  let secret: { day: string; key: Buffer } = { day: '', key: Buffer.alloc(0) }
  let prunedDay = ''

  const daySecret = (day: string): Buffer => {
    if (secret.day === day) return secret.key
    secret = loadSecret(options.secretFile, day)
    return secret.key
  }

  const commit = async (batch: Event[]): Promise<void> => {
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
      const today = batch[batch.length - 1]!.day
      if (today !== prunedDay) {
        // Only today's and yesterday's rows can still deduplicate anything.
        await db.run(`DELETE FROM download_visits WHERE day < ?`, [previousDay(today)])
        prunedDay = today
      }
      await db.exec('COMMIT')
    } catch (err) {
      await db.exec('ROLLBACK').catch(() => {})
      throw err
    }
  }

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.slice(0, maxBatch)
      try {
        await commit(batch)
        queue.splice(0, batch.length)
        for (const e of batch) e.done()
      } catch (err) {
        console.error(`[downloads] commit failed, ${queue.length} event(s) kept for retry:`, (err as Error).message)
        await new Promise((r) => setTimeout(r, 250))
      }
    }
  }

  const startDrain = (): Promise<void> => {
    flushing ??= drain().finally(() => {
      flushing = null
    })
    return flushing
  }

  return {
    record(fileId, clientKey) {
      const day = new Date(now()).toISOString().slice(0, 10)
      const visitor = createHmac('sha256', daySecret(day)).update(clientKey).digest('base64url')
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, commitTimeoutMs)
        queue.push({ day, fileId, visitor, done: () => (clearTimeout(timer), resolve()) })
        // Events arriving while a transaction runs join the next one (group commit).
        void startDrain()
      })
    },
    backlog: () => queue.length,
    async flush() {
      while (queue.length > 0 || flushing) await startDrain()
    },
    async close() {
      await startDrain()
      await db.close()
    },
  }
}

function previousDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10)
}

/** The day's secret: from the secret file when it is today's, else a new random one written there. */
function loadSecret(file: string | null, day: string): { day: string; key: Buffer } {
  if (file && existsSync(file)) {
    try {
      const saved = JSON.parse(readFileSync(file, 'utf8')) as { day: string; key: string }
      if (saved.day === day) return { day, key: Buffer.from(saved.key, 'base64') }
    } catch {
      // A damaged secret file is replaced below.
    }
  }
  const key = randomBytes(32)
  if (file) {
    mkdirSync(path.dirname(file), { recursive: true })
    const tmp = `${file}.${process.pid}.tmp`
    writeFileSync(tmp, JSON.stringify({ day, key: key.toString('base64') }), { mode: 0o600 })
    renameSync(tmp, file)
  }
  return { day, key }
}

/** Default place of the day secret: tmpfs when the machine has one (never beside the counts). */
export function defaultSecretFile(countersFile: string): string | null {
  if (!existsSync('/dev/shm')) return null
  const tag = createHmac('sha256', 'catalog').update(path.resolve(countersFile)).digest('hex').slice(0, 16)
  return `/dev/shm/catalog-download-secret-${tag}.json`
}
