/**
 * The drain of shared download counting: replicas push each new visit to one Redis list
 * (shim/download-counter-redis.ts); one replica at a time (a lock, `SET NX PX`) moves the list into
 * the SQLite counter file, the file the next build folds into `downloads`. A batch is read, then
 * committed with its dedup rows (commitVisits), and only then trimmed from the list, and only while
 * the lock is still held: a crash between commit and trim redelivers the batch, which the dedup rows
 * absorb (a visit already present is never counted twice).
 */
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import type { Db } from '../build/db/sqlite.ts'
import { commitVisits, type Visit } from './download-counter.ts'
import { isRedisReady, type RedisClient } from './redis.ts'

/** Redis keys of shared download counting. */
export const downloadKeys = {
  events: 'dl:events',
  lock: 'dl:drain-lock',
  visit: (v: Visit): string => `dl:v:${v.day}:${v.fileId}:${v.visitor}`,
  secret: (day: string): string => `dl:secret:${day}`,
} as const

const eventSchema = z.tuple([z.string().regex(/^\d{4}-\d{2}-\d{2}$/), z.string().min(1), z.string().min(1)])

/** The list entry of a visit. */
export function renderEvent(v: Visit): string {
  return JSON.stringify([v.day, v.fileId, v.visitor])
}

const LOCK_MS = 15_000
const BATCH = 500

// Trims the drained batch and renews the lock, only if this drainer still holds the lock.
const TRIM_IF_HOLDER = `if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('LTRIM', KEYS[1], tonumber(ARGV[2]), -1)
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`

const RELEASE_IF_HOLDER = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

/** A drainer of the shared event list into a counter database. */
export interface DownloadDrain {
  /** Drains what the list holds if this replica gets the lock; resolves with the visits moved. */
  drain(): Promise<number>
}

/** Creates the drainer. */
export function createDownloadDrain(redis: RedisClient, db: Db, log: (line: string) => void): DownloadDrain {
  let failing = false
  // Tokens of lock attempts that timed out: a stalled Redis may still have granted them later.
  let unsure: string[] = []
  return {
    async drain() {
      if (!isRedisReady(redis)) return 0
      const token = randomBytes(12).toString('base64url')
      let moved = 0
      try {
        for (const t of unsure) await redis.eval(RELEASE_IF_HOLDER, 1, downloadKeys.lock, t)
        unsure = []
        unsure.push(token)
        const granted = (await redis.set(downloadKeys.lock, token, 'PX', LOCK_MS, 'NX')) === 'OK'
        unsure = []
        if (!granted) return 0
        try {
          for (;;) {
            const items = await redis.lrange(downloadKeys.events, 0, BATCH - 1)
            if (items.length === 0) break
            const visits: Visit[] = []
            for (const item of items) {
              const parsed = eventSchema.safeParse(safeJson(item))
              if (parsed.success) visits.push({ day: parsed.data[0], fileId: parsed.data[1], visitor: parsed.data[2] })
              else log(`[downloads] dropped a malformed event of ${downloadKeys.events}: ${item.slice(0, 100)}`)
            }
            await commitVisits(db, visits)
            if ((await redis.eval(TRIM_IF_HOLDER, 2, downloadKeys.events, downloadKeys.lock, token, items.length, LOCK_MS)) !== 1) break
            moved += items.length
          }
        } finally {
          await redis.eval(RELEASE_IF_HOLDER, 1, downloadKeys.lock, token).catch(() => {})
        }
        if (failing) log('[downloads] drain into the counter file works again')
        failing = false
      } catch (err) {
        // Nothing is lost: the list keeps every event not yet trimmed, and the next tick retries.
        if (!failing) log(`[downloads] drain failed, events stay in Redis and are retried: ${(err as Error).message}`)
        failing = true
      }
      return moved
    },
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
