/**
 * The day secret shared by replicas: one visitor must get one id whichever replica it reaches, so
 * the secret of a UTC day lives in Redis (`SET NX`: the first replica's candidate wins), expiring an
 * hour after its day ends (never beside the counts), cached in memory and in the tmpfs file. A
 * replica learns tomorrow's secret a day ahead, so an outage across midnight still has it, and puts
 * the secrets it uses back into a Redis that restarted empty (SET NX again: never a replacement).
 */
import { createSecretKey, readSecretFile, utcDay, writeSecretFile } from './download-secret.ts'
import { downloadKeys } from './download-drain.ts'
import { isRedisReady, type RedisClient, type RedisOutage } from './redis.ts'

// The day's secret: the candidate unless one exists already.
const SECRET = `redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
return redis.call('GET', KEYS[1])`

/** Options of the shared secret. */
export interface SharedDaySecretOptions {
  redis: RedisClient
  secretFile: string | null
  now: () => number
  /** The outage tracker of the caller (a failed Redis call is its outage too). */
  outage: RedisOutage
}

/** The shared secret. */
export interface SharedDaySecret {
  /** The day's secret: memory, then Redis, then the tmpfs copy; null when none can be known now. */
  find(day: string): Promise<Buffer | null>
  close(): void
}

/** Creates the shared secret over a Redis client. */
export function createSharedDaySecret(options: SharedDaySecretOptions): SharedDaySecret {
  const { redis, now, outage } = options
  const secrets = new Map<string, Buffer>()
  const fetching = new Map<string, Promise<Buffer>>()

  const fetchSecret = (day: string, candidate: Buffer): Promise<Buffer> => {
    const ttl = Math.max(60_000, Date.parse(`${day}T00:00:00Z`) + 86_400_000 + 3_600_000 - now())
    return redis.eval(SECRET, 1, downloadKeys.secret(day), candidate.toString('base64'), ttl).then((v) => Buffer.from(String(v), 'base64'))
  }
  const learn = (day: string): Promise<Buffer> => {
    let p = fetching.get(day)
    if (!p) {
      p = fetchSecret(day, readSecretFile(options.secretFile, day) ?? createSecretKey())
        .then((key) => {
          secrets.set(day, key)
          if (day === utcDay(now())) writeSecretFile(options.secretFile, day, key)
          return key
        })
        .finally(() => fetching.delete(day))
      fetching.set(day, p)
    }
    return p
  }
  const restore = (): void => {
    for (const [day, key] of secrets) fetchSecret(day, key).catch(() => {})
  }
  redis.on('ready', restore)

  return {
    async find(day) {
      // Past days' secrets leave memory, so yesterday's visitors cannot be linked any more.
      for (const d of secrets.keys()) if (d < utcDay(now()) && d !== day) secrets.delete(d)
      const usable = isRedisReady(redis) && !outage.isOpen()
      const known = secrets.get(day)
      if (known) {
        const next = utcDay(Date.parse(`${day}T00:00:00Z`) + 86_400_000)
        if (usable && !secrets.has(next) && !fetching.has(next)) learn(next).catch((err: unknown) => outage.fail(err))
        return known
      }
      if (usable) {
        try {
          return await learn(day)
        } catch (err) {
          outage.fail(err)
        }
      }
      const saved = readSecretFile(options.secretFile, day)
      if (saved) secrets.set(day, saved)
      return saved
    },
    close() {
      redis.off('ready', restore)
    },
  }
}
