/**
 * The shared rate limiter of replicas: rate-limiter-flexible's RateLimiterRedis (a fixed window per
 * client key, one atomic Lua increment per request, the window's TTL giving X-Ratelimit-Reset), so
 * N replicas enforce one budget instead of N × the limit. A client already over the budget is
 * refused from memory until its window ends (inMemoryBlockOnConsumed), at no Redis round trip.
 *
 * Fails open: when Redis is unreachable or slower than the client timeout, each process enforces
 * its share of the budget, ceil(limit / replicas), in memory; the outage is logged once and Redis
 * is tried again after a second, so the shared budget returns by itself.
 */
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { decideRate, type RateDecision, type RateLimiter } from './rate-limit.ts'
import { createRedisOutage, type RedisClient } from './redis.ts'

/** Options of the shared limiter. */
export interface RedisRateLimiterOptions {
  limit: number
  windowSeconds: number
  /** Number of shim processes sharing the budget (sizes the per-process fallback). */
  replicas: number
  now?: () => number
  log?: (line: string) => void
}

/** Creates the limiter over a Redis client, falling back to a per-process budget. */
export function createRedisRateLimiter(redis: RedisClient, options: RedisRateLimiterOptions): RateLimiter {
  const now = options.now ?? Date.now
  const { limit, windowSeconds } = options
  const shared = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'rl',
    points: limit,
    duration: windowSeconds,
    inMemoryBlockOnConsumed: limit,
    rejectIfRedisNotReady: true,
  })
  const fallbackLimit = Math.ceil(limit / Math.max(1, options.replicas))
  const fallback = new RateLimiterMemory({ points: fallbackLimit, duration: windowSeconds })
  const outage = createRedisOutage('[rate-limit]', `each process allows ${fallbackLimit} requests per ${windowSeconds} s per client until it returns`, 1000, options.log)

  const consumeFallback = async (key: string): Promise<RateDecision> => {
    try {
      return decideRate(await fallback.consume(key, 1), true, fallbackLimit, now)
    } catch (err) {
      if (err instanceof RateLimiterRes) return decideRate(err, false, fallbackLimit, now)
      throw err
    }
  }

  return {
    async consume(key) {
      if (outage.isOpen()) return consumeFallback(key)
      try {
        const res = await shared.consume(key, 1)
        outage.ok()
        return decideRate(res, true, limit, now)
      } catch (err) {
        if (err instanceof RateLimiterRes) {
          outage.ok()
          return decideRate(err, false, limit, now)
        }
        outage.fail(err)
        return consumeFallback(key)
      }
    },
  }
}
