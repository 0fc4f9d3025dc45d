/** Defaults of the shim and their resolution from the environment (read only by shim/cli.ts). */
import path from 'node:path'
import { ConfigError, envChoice, envInt, envSwitch, envText } from '../build/env.ts'

/** Options of the shim (README, "Configuration"). */
export interface ShimOptions {
  host: string
  port: number
  /** Folder holding `current` (the live release) and `releases/`. */
  distDir: string
  /** Requests per window per client. */
  rateLimit: number
  /** Rate-limit window in seconds. */
  rateWindowSeconds: number
  /** CIDR ranges of proxies whose X-Forwarded-For is trusted. */
  trustedProxies: string[]
  /** Bytes of static bodies kept in memory. */
  cacheBytes: number
  /** Read connections to the live catalog database; up to this many queries run at once. */
  readConnections: number
  /** Bytes of the catalog each read connection maps into memory (SQLite's mmap_size); 0 reads it with pread. */
  catalogMmapBytes: number
  /** How often the `current` pointer is checked for a new release (ms; 0 = never). */
  releasePollMs: number
  /** max-age of mutable JSON, seconds. */
  maxAge: number
  /** stale-while-revalidate of mutable JSON, seconds. */
  staleWhileRevalidate: number
  /** Where download redirects point; default: the release's own /objects. */
  filesBaseUrl: string
  /** Download counter database (its own file, never touched by a rebuild). */
  countersFile: string
  /**
   * Where the download day secret survives restarts (tmpfs); `auto` picks a file under /dev/shm (in
   * memory only where there is none), null keeps it in memory only (DOWNLOAD_SECRET_FILE=none).
   */
  downloadSecretFile: string | null
  /**
   * Cache-Control scope of shim responses. They carry per-client X-Ratelimit-Remaining/Reset, which a
   * shared cache must not replay to other clients, so `private` by default (RELIABILITY C7).
   */
  cacheScope: 'private' | 'public'
  /** Serve this offline snapshot (one SQLite file) instead of a release of distDir (SNAPSHOT). */
  snapshotFile: string | null
  /** Redis shared by replicas (REDIS_URL); required when a store below is `redis`. */
  redisUrl: string | null
  /** Where rate-limit windows live: this process (`memory`) or Redis shared by replicas. */
  rateLimitStore: 'memory' | 'redis'
  /** Where downloads are deduplicated and queued: the SQLite counter file only, or Redis first. */
  downloadStore: 'sqlite' | 'redis'
  /** Number of shim processes sharing Redis: with Redis down each allows ceil(rateLimit / replicas). */
  replicas: number
  /** How long a Redis command may take before the shim falls back (ms). */
  redisTimeoutMs: number
  /** With DOWNLOAD_STORE=redis: whether this replica drains Redis into countersFile (the build's file). */
  downloadDrain: boolean
}

/**
 * The most read connections: each query holds one of libuv's threads (UV_THREADPOOL_SIZE, 4 unless
 * set) while it runs, and file reads and the download counter need that pool too.
 */
export const MAX_READ_CONNECTIONS = 16

/**
 * The most CATALOG_MMAP_BYTES: SQLite's compile-time limit (SQLITE_MAX_MMAP_SIZE, 0x7fff0000 in the
 * sqlite3 binding); a larger mmap_size is cut to it silently, so the shim refuses it instead.
 */
export const MAX_CATALOG_MMAP_BYTES = 0x7fff0000

/**
 * A warning when READ_CONNECTIONS would take all of libuv's threads (UV_THREADPOOL_SIZE, 4 unless
 * set): queries running on every connection at once would keep file reads and the download counter
 * waiting. Null when two threads stay free.
 */
export function threadPoolWarning(readConnections: number, env: Record<string, string | undefined>): string | null {
  const threads = Number(env.UV_THREADPOOL_SIZE) || 4
  if (readConnections + 2 <= threads) return null
  return `READ_CONNECTIONS=${readConnections} leaves ${Math.max(0, threads - readConnections)} of libuv's ${threads} threads for file reads and the download counter: set UV_THREADPOOL_SIZE=${readConnections + 2} (README, "Configuration")`
}

/** Default shim options. */
export const shimDefaults = {
  host: '0.0.0.0',
  port: 3000,
  distDir: 'dist',
  rateLimit: 120,
  rateWindowSeconds: 60,
  cacheBytes: 128 * 1024 * 1024,
  readConnections: 2,
  catalogMmapBytes: 0,
  releasePollMs: 2000,
  maxAge: 60,
  staleWhileRevalidate: 600,
  replicas: 1,
  redisTimeoutMs: 200,
} as const

/** Resolves shim options from overrides and an environment map. */
export function resolveShimOptions(
  overrides: Partial<ShimOptions> = {},
  env: Record<string, string | undefined> = {},
): ShimOptions {
  const distDir = path.resolve(overrides.distDir ?? envText(env, 'DIST_DIR') ?? shimDefaults.distDir)
  const snapshotFile = envText(env, 'SNAPSHOT')
  const snapshot = overrides.snapshotFile !== undefined ? overrides.snapshotFile : snapshotFile !== undefined ? path.resolve(snapshotFile) : null
  const options: ShimOptions = {
    host: overrides.host ?? envText(env, 'HOST') ?? shimDefaults.host,
    port: overrides.port ?? envInt(env, 'PORT', shimDefaults.port, 0, 65535),
    distDir,
    rateLimit: overrides.rateLimit ?? envInt(env, 'RATE_LIMIT', shimDefaults.rateLimit, 1),
    rateWindowSeconds: overrides.rateWindowSeconds ?? envInt(env, 'RATE_WINDOW_SECONDS', shimDefaults.rateWindowSeconds, 1),
    trustedProxies: overrides.trustedProxies ?? (env.TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    cacheBytes: overrides.cacheBytes ?? envInt(env, 'CACHE_BYTES', shimDefaults.cacheBytes, 0),
    readConnections: overrides.readConnections ?? envInt(env, 'READ_CONNECTIONS', shimDefaults.readConnections, 1, MAX_READ_CONNECTIONS),
    catalogMmapBytes: overrides.catalogMmapBytes ?? envInt(env, 'CATALOG_MMAP_BYTES', shimDefaults.catalogMmapBytes, 0, MAX_CATALOG_MMAP_BYTES),
    releasePollMs: overrides.releasePollMs ?? envInt(env, 'RELEASE_POLL_MS', shimDefaults.releasePollMs, 0),
    maxAge: overrides.maxAge ?? envInt(env, 'MAX_AGE', shimDefaults.maxAge, 0),
    staleWhileRevalidate: overrides.staleWhileRevalidate ?? envInt(env, 'STALE_WHILE_REVALIDATE', shimDefaults.staleWhileRevalidate, 0),
    filesBaseUrl: (overrides.filesBaseUrl ?? envText(env, 'FILES_BASE_URL') ?? '/objects').replace(/\/+$/, ''),
    countersFile: path.resolve(overrides.countersFile ?? envText(env, 'COUNTERS_FILE') ?? (snapshot ? `${snapshot}.counters.sqlite` : path.join(distDir, 'counters.sqlite'))),
    downloadSecretFile: overrides.downloadSecretFile !== undefined ? overrides.downloadSecretFile : downloadSecretFrom(env),
    cacheScope: overrides.cacheScope ?? envChoice(env, 'CACHE_SCOPE', ['private', 'public'] as const),
    snapshotFile: snapshot,
    redisUrl: overrides.redisUrl !== undefined ? overrides.redisUrl : env.REDIS_URL || null,
    rateLimitStore: overrides.rateLimitStore ?? envChoice(env, 'RATE_LIMIT_STORE', ['memory', 'redis'] as const),
    downloadStore: overrides.downloadStore ?? envChoice(env, 'DOWNLOAD_STORE', ['sqlite', 'redis'] as const),
    replicas: overrides.replicas ?? envInt(env, 'REPLICAS', shimDefaults.replicas, 1),
    redisTimeoutMs: overrides.redisTimeoutMs ?? envInt(env, 'REDIS_TIMEOUT_MS', shimDefaults.redisTimeoutMs, 1),
    downloadDrain: overrides.downloadDrain ?? envSwitch(env, 'DOWNLOAD_DRAIN'),
  }
  if ((options.rateLimitStore === 'redis' || options.downloadStore === 'redis') && !options.redisUrl) {
    throw new ConfigError('RATE_LIMIT_STORE=redis or DOWNLOAD_STORE=redis needs REDIS_URL (e.g. redis://127.0.0.1:6379)')
  }
  return options
}

/**
 * DOWNLOAD_SECRET_FILE: `auto` when unset, empty or `auto`; null (memory only: a restart draws a new
 * secret, so a visitor may be counted once more that day) for `none`; else the file.
 */
function downloadSecretFrom(env: Record<string, string | undefined>): string | null {
  const value = envText(env, 'DOWNLOAD_SECRET_FILE') ?? 'auto'
  return value === 'none' ? null : value
}
