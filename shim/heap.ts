/**
 * The shim's memory bound. `npm run serve` starts node with `--max-old-space-size=${SHIM_HEAP_MB:-224}`:
 * below about 256 MB V8 grows its heap more sparingly between collections, and at the large
 * catalog that kept the shim's RSS under all load at 241 MB, against 325 MB with V8's default limit
 * (bench/results/serve.md, "Memory"). The static cache's JavaScript objects count against
 * CACHE_BYTES (ENTRY_OVERHEAD_BYTES), so the heap needs CACHE_BYTES plus what requests in flight
 * and the code hold: a limit below that would end in an out-of-memory crash under a crawl, so the
 * shim refuses to start instead.
 */
import { getHeapStatistics } from 'node:v8'

/** The `--max-old-space-size` (MB) of package.json's serve script when SHIM_HEAP_MB is unset; the two must agree. */
export const SHIM_HEAP_MB_DEFAULT = 224

/**
 * The `--max-semi-space-size` (MB) of the serve script when SHIM_SEMI_SPACE_MB is unset: V8's own
 * default for this heap (a 32 MB new space), so the default changes nothing. 32 makes the bulk hash
 * lookups of a crawl cheaper and their tail shorter (fewer scavenges, so the static cache's
 * turnover dies young instead of being promoted and mark-compacted every second or so), for about
 * 34 MB more RSS under load: measured at the large catalog, 0.84 → 0.6 ms of CPU per bulk lookup,
 * p99 one at a time 15 → 2.2 ms, RSS under all load 282 → 316 MB, over the 300 MB goal
 * (bench/results/PROFILE.md, Session 7). For hosts with the memory to spare.
 */
export const SHIM_SEMI_SPACE_MB_DEFAULT = 16

/**
 * The `--initial-old-space-size` (MB) of the serve script when SHIM_INITIAL_OLD_SPACE_MB is unset:
 * the old generation may grow to this before V8's first full collection, and V8 keeps its limit at
 * least this high after. With the static cache off, the shim's heap holds about 15 MB, and V8 set its
 * limit a little above that. Every cache-off bulk lookup allocates its answer's 107 KB BLOB outside
 * the heap, and those promoted while their request was in flight reached that limit about eight
 * times a second. Each full collection stopped the event loop for 2–4 ms, which every request in
 * flight waited out. At 64 MB the limit is not reached: at the large catalog, cache off, 32 in
 * flight, 162 mark-compacts in 20 s became 4; p99 went from about 31 to about 20 ms, with about 12%
 * more requests a second, for 22 MB more RSS (141 → 163 MB). At 32 MB nothing changed. With the
 * static cache full, the heap is already past this size (bench/results/PROFILE.md, Session 26).
 */
export const SHIM_INITIAL_OLD_SPACE_MB_DEFAULT = 64

/**
 * glibc's `MALLOC_ARENA_MAX` of the serve script when that variable is unset. glibc gives each
 * thread that allocates its own arena (up to eight per core), and the shim's threads all allocate:
 * SQLite's queries on libuv's threads, V8's helpers, the file reads. Each arena keeps what it freed
 * for its thread, so RSS grows by the peak of every arena. With two, the shim's RSS after the
 * dynamic load at the large catalog was 245–253 MB against 265–270 MB (peaks 249–261 against
 * 268–270), with no difference in requests/s beyond the host's noise (bench/results/PROFILE.md,
 * Session 19).
 */
export const SHIM_MALLOC_ARENA_MAX_DEFAULT = 2

/**
 * V8 flags of the serve script besides the heap's.
 *
 * `--no-allocation-site-pretenuring`: under load (32 requests in flight) a request's objects
 * outlive a scavenge or two, so V8 marks the places that make them to allocate straight into the old
 * generation, and keeps doing so once the load falls and those objects die young; the old generation
 * then filled within a second and was collected in full again and again, each collection stopping
 * every request for up to 80 ms. At the large catalog, bulk project reads one at a time after the
 * bench's load at 32 in flight: 13–20 full collections in 10 s and p99 18–76 ms with pretenuring,
 * 0–1 and p99 6–18 ms without, in five alternated rounds. In the bench every one-at-a-time p99 with
 * the static cache on fell 1.2–7×, and the cache-on rows at 32 in flight were no worse (bench/results/PROFILE.md,
 * Session 44). With `CACHE_BYTES=0` pretenuring did not pay either: in six alternated rounds the
 * median CPU a request with it was 3% lower to 11% higher than without it, row by row (Session 45),
 * so it stays off whatever the cache.
 *
 * `--log --logfile=/dev/null`: V8's logger turned on, writing nowhere. In `npm run bench:serve` at
 * the large catalog, a shim without them answered static 200s at 0.64–0.71× raw node in 8 of 13 runs
 * (and 0.79–0.88× in the rest); with them, at 0.79–0.90× in 10 of 10, the last four runs alternating
 * with and without (bench/results/PROFILE.md, Session 8). The logger registers a code-event listener;
 * why that keeps the shim out of the slower state is not known.
 *
 * A shim started without these flags still works; placed after them, `--no-log` turns the logger off
 * and `--allocation-site-pretenuring` pretenuring back on.
 */
export const SHIM_V8_FLAGS = ['--no-allocation-site-pretenuring', '--log', '--logfile=/dev/null'] as const

/** Heap the shim needs beside its static cache: code, schemas, the limiter, requests in flight. */
export const HEAP_HEADROOM_BYTES = 64 * 1024 * 1024

/** Why the heap limit is too small for the cache, or null when it is large enough. */
export function checkHeapLimit(cacheBytes: number, heapLimitBytes: number = getHeapStatistics().heap_size_limit): string | null {
  const needed = cacheBytes + HEAP_HEADROOM_BYTES
  if (heapLimitBytes >= needed) return null
  const mb = (n: number): number => Math.ceil(n / (1024 * 1024))
  return (
    `the JavaScript heap limit (${mb(heapLimitBytes)} MB) is below CACHE_BYTES (${mb(cacheBytes)} MB) plus ${mb(HEAP_HEADROOM_BYTES)} MB: ` +
    `raise SHIM_HEAP_MB (npm run serve) or node's --max-old-space-size to at least ${mb(needed)}, or lower CACHE_BYTES`
  )
}
