/**
 * The one module that talks to Redis (the shared store of replicas): the client and its failure
 * policy. Commands never wait for a connection (no offline queue) and give up after `timeoutMs`,
 * so an unreachable or stalled Redis costs a request at most one short timeout; callers then fall
 * back (rate limit: per-process budget; downloads: local spool). Reconnection is automatic.
 */
import { Redis } from 'ioredis'

/** A Redis client. */
export type RedisClient = Redis

/** Creates the client; it connects in the background (the shim starts and serves without Redis). */
export function createRedisClient(url: string, timeoutMs: number, log: (line: string) => void = (l) => console.error(l)): RedisClient {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(1000, timeoutMs),
    // A command lost with its connection fails at once instead of being replayed later.
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(100 * attempt, 2000),
  })
  // Connection errors repeat on every reconnection attempt; the stores log outages once each.
  client.on('error', () => {})
  let connected = false
  client.on('ready', () => {
    log(`[redis] ${connected ? 'reconnected' : 'connected'} to ${client.options.host}:${client.options.port}`)
    connected = true
  })
  return client
}

/** Whether the client can take commands now. */
export function isRedisReady(client: RedisClient): boolean {
  return client.status === 'ready'
}

/** Closes the client: a clean QUIT when connected, else a plain disconnect. */
export async function closeRedisClient(client: RedisClient): Promise<void> {
  if (isRedisReady(client)) {
    try {
      await client.quit()
      return
    } catch {
      // Fall through to a disconnect.
    }
  }
  client.disconnect()
}

/**
 * Tracks an outage of Redis as seen by one store: logs once when it starts and once when it ends
 * (never per request), and tells callers to skip Redis for `retryMs` after a failure, so a stalled
 * server costs one timeout per interval rather than one per request.
 */
export interface RedisOutage {
  /** Whether Redis should be skipped now (failed recently). */
  isOpen(): boolean
  /** Records a failure. */
  fail(err: unknown): void
  /** Records a success. */
  ok(): void
}

/** Creates an outage tracker logging as `label` with `fallback` describing what happens meanwhile. */
export function createRedisOutage(label: string, fallback: string, retryMs = 1000, log: (line: string) => void = (l) => console.error(l)): RedisOutage {
  let down = false
  let skipUntil = 0
  return {
    isOpen: () => down && performance.now() < skipUntil,
    fail(err) {
      skipUntil = performance.now() + retryMs
      if (down) return
      down = true
      log(`${label} Redis unavailable (${(err as Error)?.message ?? String(err)}): ${fallback}`)
    },
    ok() {
      if (!down) return
      down = false
      log(`${label} Redis is back`)
    },
  }
}
