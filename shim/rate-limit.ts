/**
 * Rate limiting behind a small interface whose store can be swapped (in memory for one process; a
 * shared store for replicas). The in-memory store is a fixed window per client key, with the
 * semantics of rate-limiter-flexible's RateLimiterMemory (the window starts at a key's first
 * request; past `limit` the key is refused until the window ends), answered synchronously: the
 * static hot path calls it on every request, and RateLimiterMemory's promise and result object per
 * request showed in its profile (bench/results/PROFILE.md). The shared store of replicas is
 * shim/rate-limit-redis.ts.
 */
import type { RateLimiterRes } from 'rate-limiter-flexible'

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
  /** The same as consume, synchronously; only stores that answer from memory have it (a shared store has not). */
  consumeNow?(key: string): RateDecision
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

interface Window {
  count: number
  /** Epoch ms when the window ends (Infinity for a window of 0 s: one window forever, as RateLimiterMemory). */
  endsAt: number
}

/**
 * Creates the in-memory limiter: `limit` requests per `windowSeconds` per key. Memory stays bounded
 * without a timer per key: windows live in two generations that rotate every window length, so a
 * generation is dropped only once every window in it has ended.
 */
export function createMemoryRateLimiter(limit: number, windowSeconds: number, now: () => number = Date.now): RateLimiter {
  const windowMs = windowSeconds * 1000
  let current = new Map<string, Window>()
  let previous = new Map<string, Window>()
  let rotateAt = windowMs > 0 ? now() + windowMs : Infinity
  const consumeNow = (key: string): RateDecision => {
    const t = now()
    if (t >= rotateAt) {
      previous = current
      current = new Map()
      rotateAt = t + windowMs
    }
    let window = current.get(key) ?? previous.get(key)
    if (window === undefined || t >= window.endsAt) {
      window = { count: 0, endsAt: windowMs > 0 ? t + windowMs : Infinity }
      current.set(key, window)
    }
    window.count++
    const ms = window.endsAt === Infinity ? 0 : window.endsAt - t
    return {
      allowed: window.count <= limit,
      limit,
      remaining: Math.max(0, limit - window.count),
      resetEpochSeconds: Math.ceil((t + ms) / 1000),
      retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
    }
  }
  return {
    consume: (key) => Promise.resolve(consumeNow(key)),
    consumeNow,
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
