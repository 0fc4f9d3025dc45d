/** Node HTTP server settings shared by the CLI and the tests. */
import type { Server } from 'node:http'

/**
 * Timeouts for a server that may face clients directly: a slow-header client is dropped after
 * 15 s (slowloris), a whole request after 30 s; keep-alive outlives a typical 60 s LB idle timeout.
 */
export function configureServer(server: Server | import('node:https').Server): void {
  server.headersTimeout = 15_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 65_000
}
