/** Node HTTP server settings shared by the CLI and the tests. */
import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { ALLOWED_METHODS, EXPOSED_HEADERS, JSON_TYPE } from './respond.ts'

/**
 * Timeouts for a server that may face clients directly: a slow-header client is dropped after
 * 15 s (slowloris), a whole request after 30 s; keep-alive outlives a typical 60 s LB idle timeout.
 * What never reaches the app gets the envelope and the common headers too (`rateLimit` is the
 * X-Ratelimit-Limit they carry): a request Node's parser refuses (431 for a header block over 16
 * KiB, 408 for a timed-out request, 400 otherwise; the status codes Node itself would send) and a
 * CONNECT, which Node would otherwise hand to a 'connect' listener or drop without a word.
 */
export function configureServer(server: Server | import('node:https').Server, rateLimit: number): void {
  server.headersTimeout = 15_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 65_000
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's own handler: answer only when no response of this connection has started.
    const inFlight = (socket as Duplex & { _httpMessage?: { _headerSent?: boolean } })._httpMessage
    if (err.code !== 'ECONNRESET' && socket.writable && !inFlight?._headerSent) {
      const [status, code, message] = clientErrorAnswer(err.code)
      socket.end(rawErrorResponse(status, code, message, rateLimit), () => socket.destroy())
    } else {
      socket.destroy()
    }
  })
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.end(rawErrorResponse(405, 'method_not_allowed', 'Method CONNECT is not allowed', rateLimit, [`Allow: ${ALLOWED_METHODS}`]), () => socket.destroy())
  })
}

function clientErrorAnswer(code: string | undefined): [number, string, string] {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'headers_too_large', 'The request line and headers are larger than 16 KiB']
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'request_timeout', 'The request was not received in time']
    default:
      return [400, 'bad_request', 'The request is not valid HTTP/1.1']
  }
}

/** A whole HTTP/1.1 error response (envelope, common headers, connection closed) written to a bare socket. */
function rawErrorResponse(status: number, code: string, message: string, rateLimit: number, extra: string[] = []): string {
  const requestId = randomUUID()
  const body = JSON.stringify({ error: { code, message, requestId } })
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Access-Control-Allow-Origin: *',
    `Access-Control-Expose-Headers: ${EXPOSED_HEADERS}`,
    `X-Ratelimit-Limit: ${rateLimit}`,
    `X-Request-Id: ${requestId}`,
    ...extra,
    `Content-Type: ${JSON_TYPE}`,
    'Cache-Control: no-store',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n')
}
