/** Defaults of the shim and their resolution from the environment (read only by shim/cli.ts). */
import path from 'node:path'

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
  /** Where the download day secret survives restarts (tmpfs); null keeps it in memory only. */
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

/** Default shim options. */
export const shimDefaults = {
  host: '0.0.0.0',
  port: 3000,
  distDir: 'dist',
  rateLimit: 120,
  rateWindowSeconds: 60,
  cacheBytes: 128 * 1024 * 1024,
  releasePollMs: 2000,
  maxAge: 60,
  staleWhileRevalidate: 600,
  replicas: 1,
  redisTimeoutMs: 200,
} as const

function choice<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  const v = value === undefined || value === '' ? allowed[0]! : value
  if (!(allowed as readonly string[]).includes(v)) throw new Error(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`)
  return v as T
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(value)}`)
  return n
}

/** Resolves shim options from overrides and an environment map. */
export function resolveShimOptions(
  overrides: Partial<ShimOptions> = {},
  env: Record<string, string | undefined> = {},
): ShimOptions {
  const distDir = path.resolve(overrides.distDir ?? env.DIST_DIR ?? shimDefaults.distDir)
  const snapshot = overrides.snapshotFile !== undefined ? overrides.snapshotFile : env.SNAPSHOT ? path.resolve(env.SNAPSHOT) : null
  const options: ShimOptions = {
    host: overrides.host ?? env.HOST ?? shimDefaults.host,
    port: overrides.port ?? int(env.PORT, shimDefaults.port, 'PORT'),
    distDir,
    rateLimit: overrides.rateLimit ?? int(env.RATE_LIMIT, shimDefaults.rateLimit, 'RATE_LIMIT'),
    rateWindowSeconds: overrides.rateWindowSeconds ?? int(env.RATE_WINDOW_SECONDS, shimDefaults.rateWindowSeconds, 'RATE_WINDOW_SECONDS'),
    trustedProxies: overrides.trustedProxies ?? (env.TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    cacheBytes: overrides.cacheBytes ?? int(env.CACHE_BYTES, shimDefaults.cacheBytes, 'CACHE_BYTES'),
    releasePollMs: overrides.releasePollMs ?? int(env.RELEASE_POLL_MS, shimDefaults.releasePollMs, 'RELEASE_POLL_MS'),
    maxAge: overrides.maxAge ?? int(env.MAX_AGE, shimDefaults.maxAge, 'MAX_AGE'),
    staleWhileRevalidate: overrides.staleWhileRevalidate ?? int(env.STALE_WHILE_REVALIDATE, shimDefaults.staleWhileRevalidate, 'STALE_WHILE_REVALIDATE'),
    filesBaseUrl: (overrides.filesBaseUrl ?? env.FILES_BASE_URL ?? '/objects').replace(/\/+$/, ''),
    countersFile: path.resolve(overrides.countersFile ?? env.COUNTERS_FILE ?? (snapshot ? `${snapshot}.counters.sqlite` : path.join(distDir, 'counters.sqlite'))),
    downloadSecretFile: overrides.downloadSecretFile !== undefined ? overrides.downloadSecretFile : (env.DOWNLOAD_SECRET_FILE ?? 'auto'),
    cacheScope: overrides.cacheScope ?? choice(env.CACHE_SCOPE, ['private', 'public'] as const, 'CACHE_SCOPE'),
    snapshotFile: snapshot,
    redisUrl: overrides.redisUrl !== undefined ? overrides.redisUrl : env.REDIS_URL || null,
    rateLimitStore: overrides.rateLimitStore ?? choice(env.RATE_LIMIT_STORE, ['memory', 'redis'] as const, 'RATE_LIMIT_STORE'),
    downloadStore: overrides.downloadStore ?? choice(env.DOWNLOAD_STORE, ['sqlite', 'redis'] as const, 'DOWNLOAD_STORE'),
    replicas: overrides.replicas ?? Math.max(1, int(env.REPLICAS, shimDefaults.replicas, 'REPLICAS')),
    redisTimeoutMs: overrides.redisTimeoutMs ?? Math.max(1, int(env.REDIS_TIMEOUT_MS, shimDefaults.redisTimeoutMs, 'REDIS_TIMEOUT_MS')),
    downloadDrain: overrides.downloadDrain ?? choice(env.DOWNLOAD_DRAIN, ['1', '0'] as const, 'DOWNLOAD_DRAIN') === '1',
  }
  if ((options.rateLimitStore === 'redis' || options.downloadStore === 'redis') && !options.redisUrl) {
    throw new Error('RATE_LIMIT_STORE=redis or DOWNLOAD_STORE=redis needs REDIS_URL (e.g. redis://127.0.0.1:6379)')
  }
  return options
}
