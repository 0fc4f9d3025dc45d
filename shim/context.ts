/**
 * The shim context, created once at start-up and passed to every handler: options, the live
 * release, the static cache. A poller swaps to a new release when `current` changes; the old
 * database stays open for a grace period so requests in flight finish on it.
 */
import type { ShimOptions } from './config.ts'
import { openRelease, resolveLiveRelease, type Release } from './release.ts'
import { createStaticCache, type StaticCache } from './static-cache.ts'

/** State shared by the handlers. */
export interface ShimContext {
  options: ShimOptions
  release: Release
  cache: StaticCache
  /** Checks `current` now and swaps if it moved; resolves true when it swapped. */
  reload(): Promise<boolean>
  close(): Promise<void>
}

const GRACE_MS = 30_000

/** Creates the context and starts the release poller. */
export async function createShimContext(options: ShimOptions): Promise<ShimContext> {
  const cache = createStaticCache(options.cacheBytes)
  const timers = new Set<NodeJS.Timeout>()
  let swapping: Promise<boolean> | null = null
  const ctx: ShimContext = {
    options,
    release: await openRelease(options.distDir),
    cache,
    reload() {
      swapping ??= (async () => {
        try {
          const live = resolveLiveRelease(options.distDir)
          if (!live || live === ctx.release.dir) return false
          const old = ctx.release
          ctx.release = await openRelease(options.distDir)
          cache.clear()
          const t = setTimeout(() => {
            timers.delete(t)
            void old.db.close().catch(() => {})
          }, GRACE_MS)
          t.unref()
          timers.add(t)
          return true
        } finally {
          swapping = null
        }
      })()
      return swapping
    },
    async close() {
      clearInterval(poller)
      for (const t of timers) clearTimeout(t)
      await ctx.release.db.close()
    },
  }
  const poller = setInterval(() => {
    ctx.reload().catch((err: unknown) => console.error('[shim] release reload failed:', err))
  }, options.releasePollMs || 2 ** 31 - 1)
  poller.unref()
  return ctx
}
