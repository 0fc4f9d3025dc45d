/**
 * Download counting shared by replicas through Redis. Every replica derives the visitor from the
 * same day secret (shim/download-shared-secret.ts); dedup is `SET dl:v:{day}:{file}:{visitor} 1 NX EX 172800`
 * and a new visit is pushed to one Redis list in the same Lua script, so the 302 is sent once the
 * visit is in Redis; one replica at a time drains the list into the SQLite counter file
 * (shim/download-drain.ts).
 *
 * When Redis is unreachable or slow the visit goes to a spool table of the local counter file
 * (group-committed, synchronous=FULL) before the 302, and is replayed through the same Lua script
 * when Redis returns, so dedup still holds. A replica that never learned the day's secret (started
 * during the outage on a host without it in tmpfs) holds the event in memory (bounded) instead:
 * writing the client key to disk would store an address.
 */
import type { Db } from '../build/db/sqlite.ts'
import { openCounterDb, type DownloadCounter, type Visit } from './download-counter.ts'
import { createDownloadDrain, downloadKeys, renderEvent } from './download-drain.ts'
import { renderVisitor, utcDay } from './download-secret.ts'
import { createSharedDaySecret } from './download-shared-secret.ts'
import { createGroupCommit } from './group-commit.ts'
import { createRedisOutage, isRedisReady, type RedisClient } from './redis.ts'

/** Options of the shared counter. */
export interface RedisDownloadCounterOptions {
  /** The local counter file: the spool, and the counts when this replica drains. */
  file: string
  redis: RedisClient
  secretFile: string | null
  /** Whether this replica drains the shared list into `file` (the file the build reads). */
  drain: boolean
  now?: () => number
  /** How often spooled events are replayed and the list drained, ms. */
  intervalMs?: number
  maxSpool?: number
  maxHeld?: number
  log?: (line: string) => void
}

const DEDUP_SECONDS = 172_800

// KEYS[1] the event list, KEYS[2..] dedup keys; ARGV[1] dedup TTL, ARGV[2..] the events.
const RECORD = `local added = 0
for i = 2, #KEYS do
  if redis.call('SET', KEYS[i], '1', 'NX', 'EX', ARGV[1]) then
    redis.call('RPUSH', KEYS[1], ARGV[i])
    added = added + 1
  end
end
return added`

const spoolSchema = `CREATE TABLE IF NOT EXISTS download_spool (day TEXT NOT NULL, file_id TEXT NOT NULL, visitor TEXT NOT NULL, PRIMARY KEY (day, file_id, visitor)) WITHOUT ROWID;`

/** Opens the shared counter; replay and drain run every `intervalMs` in the background. */
export async function openRedisDownloadCounter(options: RedisDownloadCounterOptions): Promise<DownloadCounter> {
  const { redis } = options
  const now = options.now ?? Date.now
  const log = options.log ?? ((line: string) => console.error(line))
  const maxSpool = options.maxSpool ?? 1_000_000
  const maxHeld = options.maxHeld ?? 10_000
  const db = await openCounterDb(options.file)
  await db.exec(spoolSchema)
  // The drain gets its own connection: its transactions must not interleave with spool writes.
  const drainDb: Db | null = options.drain ? await openCounterDb(options.file) : null
  const drainer = drainDb ? createDownloadDrain(redis, drainDb, log) : null
  const outage = createRedisOutage('[downloads]', 'download events are spooled in the counter file (held in memory while the day secret is unknown here) and replayed when it returns', 1000, log)
  let spoolSize = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM download_spool`))!.n
  const held: { day: string; fileId: string; clientKey: string }[] = []
  let dropped = 0
  const secrets = createSharedDaySecret({ redis, secretFile: options.secretFile, now, outage })
  const findSecret = secrets.find

  const pushVisits = (visits: Visit[]): Promise<unknown> =>
    redis.eval(RECORD, visits.length + 1, downloadKeys.events, ...visits.map(downloadKeys.visit), DEDUP_SECONDS, ...visits.map(renderEvent))

  const spool = createGroupCommit<Visit>(
    async (batch) => {
      const { changes } = await db.run(
        `INSERT OR IGNORE INTO download_spool (day, file_id, visitor) SELECT value->>0, value->>1, value->>2 FROM json_each(?)`,
        [JSON.stringify(batch.map((v) => [v.day, v.fileId, v.visitor]))],
      )
      spoolSize += changes
    },
    { maxBatch: 500, timeoutMs: 2000, label: '[downloads] spool' },
  )

  const drop = (what: string): void => {
    dropped++
    if (dropped === 1 || dropped % 1000 === 0) log(`[downloads] ${what} is full: ${dropped} download event(s) dropped so far`)
  }

  /** Stores a visit: in Redis when it answers in time, else in the local spool. */
  const storeVisit = async (visit: Visit): Promise<void> => {
    if (isRedisReady(redis) && !outage.isOpen()) {
      try {
        await pushVisits([visit])
        outage.ok()
        return
      } catch (err) {
        outage.fail(err)
      }
    } else if (!isRedisReady(redis)) {
      outage.fail(new Error(`connection ${redis.status}`))
    }
    if (spoolSize + spool.backlog() >= maxSpool) return drop('the spool')
    await spool.add(visit)
  }

  /** Replays held and spooled events into Redis, then drains the list when this replica drains. */
  const replay = async (): Promise<void> => {
    if (!isRedisReady(redis) || outage.isOpen()) return
    let replayed = 0
    try {
      while (held.length > 0) {
        const secret = await findSecret(held[0]!.day)
        if (!secret) break
        const e = held.shift()!
        await storeVisit({ day: e.day, fileId: e.fileId, visitor: renderVisitor(secret, e.clientKey) })
      }
      for (;;) {
        const rows = await db.all<{ day: string; file_id: string; visitor: string }>(`SELECT day, file_id, visitor FROM download_spool LIMIT 500`)
        if (rows.length === 0) break
        // Replayed through the same dedup: a visit already counted (or replayed twice) adds nothing.
        await pushVisits(rows.map((r) => ({ day: r.day, fileId: r.file_id, visitor: r.visitor })))
        const { changes } = await db.run(
          `DELETE FROM download_spool WHERE (day, file_id, visitor) IN (SELECT value->>0, value->>1, value->>2 FROM json_each(?))`,
          [JSON.stringify(rows.map((r) => [r.day, r.file_id, r.visitor]))],
        )
        spoolSize = Math.max(0, spoolSize - changes)
        replayed += rows.length
      }
      outage.ok()
    } catch (err) {
      outage.fail(err)
    }
    if (replayed > 0) log(`[downloads] replayed ${replayed} spooled download event(s) into Redis`)
    if (drainer && isRedisReady(redis)) await drainer.drain()
  }

  let stopped = false
  let running: Promise<void> = Promise.resolve()
  let timer: NodeJS.Timeout | undefined
  const schedule = (): void => {
    if (stopped) return
    timer = setTimeout(() => {
      running = replay().finally(schedule)
    }, options.intervalMs ?? 1000)
    timer.unref()
  }
  schedule()

  return {
    async record(fileId, clientKey) {
      const day = utcDay(now())
      const secret = await findSecret(day)
      if (secret) return storeVisit({ day, fileId, visitor: renderVisitor(secret, clientKey) })
      // No secret of the day can be known now: hold the event (in memory only) until Redis answers.
      outage.fail(new Error(`connection ${redis.status}`))
      if (held.length >= maxHeld) return drop('the in-memory queue')
      held.push({ day, fileId, clientKey })
    },
    backlog: () => spool.backlog() + spoolSize + held.length,
    async flush() {
      await spool.flush()
      await running
      await replay()
    },
    async close() {
      stopped = true
      clearTimeout(timer)
      await running
      await spool.flush()
      await replay()
      if (held.length > 0) log(`[downloads] ${held.length} download event(s) held without the day secret are lost at shutdown`)
      secrets.close()
      await db.close()
      await drainDb?.close()
    },
  }
}
