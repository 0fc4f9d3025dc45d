/**
 * Rate limiting behind a small interface whose store can be swapped (in memory for one process; a
 * shared store for replicas). The in-memory store is rate-limiter-flexible's RateLimiterMemory: a
 * fixed window per client key whose entry expires with its window, so memory stays bounded however
 * many clients pass. The shared store of replicas is shim/rate-limit-redis.ts.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'

/** The outcome of one request against the budget. */
export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** When the window resets, epoch seconds (GitHub's meaning of X-Ratelimit-Reset). */
  resetEpochSeconds: number
  /** Whole seconds to wait before retrying (≥ 1), meaningful when not allowed. */
  retryAfterSeconds: number
}

/** A limiter: consumes one request of a client key. */
export interface RateLimiter {
  consume(key: string): Promise<RateDecision>
}

/** The decision of a rate-limiter-flexible result against a budget of `limit`. */
export function decideRate(res: RateLimiterRes, allowed: boolean, limit: number, now: () => number): RateDecision {
  const ms = Math.max(0, res.msBeforeNext)
  return {
    allowed,
    limit,
    remaining: allowed ? Math.max(0, res.remainingPoints) : 0,
    resetEpochSeconds: Math.ceil((now() + ms) / 1000),
    retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
  }
}

/** Creates the in-memory limiter: `limit` requests per `windowSeconds` per key. */
export function createMemoryRateLimiter(limit: number, windowSeconds: number, now: () => number = Date.now): RateLimiter {
  const limiter = new RateLimiterMemory({ points: limit, duration: windowSeconds })
  return {
    async consume(key) {
      try {
        return decideRate(await limiter.consume(key, 1), true, limit, now)
      } catch (err) {
        if (err instanceof RateLimiterRes) return decideRate(err, false, limit, now)
        throw err
      }
    },
  }
}

/** The headers of a decision, sent on every response of the shim. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  return {
    'X-Ratelimit-Limit': String(decision.limit),
    'X-Ratelimit-Remaining': String(decision.remaining),
    'X-Ratelimit-Reset': String(decision.resetEpochSeconds),
  }
}
