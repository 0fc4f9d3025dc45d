/**
 * The shim context, created once at start-up and passed to every handler: options, the live
 * release, the static cache. A poller swaps to a new release when `current` changes; the old
 * database stays open for a grace period so requests in flight finish on it.
 */
import { createTrustedProxies, type TrustedProxies } from './client-ip.ts'
import type { ShimOptions } from './config.ts'
import { openDownloadCounter, type DownloadCounter } from './download-counter.ts'
import { openRedisDownloadCounter } from './download-counter-redis.ts'
import { defaultSecretFile } from './download-secret.ts'
import { createMemoryRateLimiter, type RateLimiter } from './rate-limit.ts'
import { createRedisRateLimiter } from './rate-limit-redis.ts'
import { closeRedisClient, createRedisClient, type RedisClient } from './redis.ts'
import { createSnapshotStatic, openRelease, openSnapshot, resolveLiveRelease, type Release } from './release.ts'
import { createStaticCache, type StaticCache } from './static-cache.ts'

/** State shared by the handlers. */
export interface ShimContext {
  options: ShimOptions
  release: Release
  cache: StaticCache
  limiter: RateLimiter
  trustedProxies: TrustedProxies
  downloads: DownloadCounter
  /** The clock (injectable in tests). */
  now: () => number
  /** Checks `current` now and swaps if it moved; resolves true when it swapped. */
  reload(): Promise<boolean>
  close(): Promise<void>
}

const GRACE_MS = 30_000

/** Injectable parts of the context (tests). */
export interface ShimDependencies {
  now?: () => number
  limiter?: RateLimiter
}

/** Creates the context and starts the release poller. */
export async function createShimContext(options: ShimOptions, deps: ShimDependencies = {}): Promise<ShimContext> {
  const now = deps.now ?? Date.now
  const access = { connections: options.readConnections, mmapBytes: options.catalogMmapBytes }
  const release = options.snapshotFile ? await openSnapshot(options.snapshotFile, access) : await openRelease(options.distDir, access)
  const cache = options.snapshotFile ? createSnapshotStatic(release) : createStaticCache(options.cacheBytes)
  const trustedProxies = createTrustedProxies(options.trustedProxies)
  // One client for both stores; it connects in the background, so the shim starts without Redis.
  const redis: RedisClient | null =
    options.redisUrl && (options.rateLimitStore === 'redis' || options.downloadStore === 'redis') ? createRedisClient(options.redisUrl, options.redisTimeoutMs) : null
  const secretFile = options.downloadSecretFile === 'auto' ? defaultSecretFile(options.countersFile) : options.downloadSecretFile
  const downloads =
    redis && options.downloadStore === 'redis'
      ? await openRedisDownloadCounter({ file: options.countersFile, redis, secretFile, drain: options.downloadDrain, now })
      : await openDownloadCounter({ file: options.countersFile, secretFile, now })
  const limiter =
    deps.limiter ??
    (redis && options.rateLimitStore === 'redis'
      ? createRedisRateLimiter(redis, { limit: options.rateLimit, windowSeconds: options.rateWindowSeconds, replicas: options.replicas, now })
      : createMemoryRateLimiter(options.rateLimit, options.rateWindowSeconds, now))
  const timers = new Set<NodeJS.Timeout>()
  let swapping: Promise<boolean> | null = null
  const ctx: ShimContext = {
    options,
    release,
    cache,
    limiter,
    trustedProxies,
    downloads,
    now,
    reload() {
      // Cleared once settled, in a callback: a check that finds nothing new settles without an
      // await, and a `finally` inside the function ran before the promise was stored, which then
      // stayed settled with `false` for every later poll (the shim never swapped again).
      swapping ??= (async () => {
        // A snapshot is one fixed file: there is nothing to swap to.
        if (options.snapshotFile) return false
        const live = resolveLiveRelease(options.distDir)
        if (!live || live === ctx.release.dir) return false
        const old = ctx.release
        ctx.release = await openRelease(options.distDir, access)
        cache.clear()
        const t = setTimeout(() => {
          timers.delete(t)
          void old.db.close().catch(() => {})
        }, GRACE_MS)
        t.unref()
        timers.add(t)
        return true
      })().finally(() => {
        swapping = null
      })
      return swapping
    },
    async close() {
      clearInterval(poller)
      for (const t of timers) clearTimeout(t)
      await downloads.close()
      if (redis) await closeRedisClient(redis)
      await ctx.release.db.close()
    },
  }
  const poller = setInterval(() => {
    ctx.reload().catch((err: unknown) => console.error('[shim] release reload failed:', err))
  }, options.releasePollMs || 2 ** 31 - 1)
  poller.unref()
  return ctx
}
