/**
 * API errors: handlers throw h3's error type with the envelope's code in `data`; the app's one
 * error hook (handleError) turns every error into the envelope. Anything unexpected is a 500 whose
 * message is logged, never sent.
 */
import { createError, type H3Error, type H3Event } from 'h3'
import { sendErrorEnvelope, setCommonHeaders, type ErrorDetail } from './respond.ts'

interface ErrorData {
  code: string
  details?: ErrorDetail[]
  headers?: Record<string, string>
}

/** Creates an error that answers `status` with the envelope `{ code, message, details }`. */
export function apiError(status: number, code: string, message: string, details?: ErrorDetail[], headers?: Record<string, string>): H3Error<ErrorData> {
  return createError<ErrorData>({ statusCode: status, statusMessage: undefined, message, data: { code, details, headers } })
}

/** 404 not_found naming what is missing. */
export function notFound(what: string): H3Error<ErrorData> {
  return apiError(404, 'not_found', `${what} was not found`)
}

/** 422 validation_failed with one detail per problem. */
export function validationFailed(details: ErrorDetail[]): H3Error<ErrorData> {
  const message = details.length === 1 ? `Invalid parameter ${details[0]!.path}: ${details[0]!.message}` : `${details.length} parameters are invalid`
  return apiError(422, 'validation_failed', message, details)
}

const codesByStatus: Record<number, string> = {
  400: 'bad_request',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  414: 'uri_too_long',
  422: 'validation_failed',
  429: 'rate_limited',
  500: 'internal_error',
  503: 'unavailable',
}

/** The app's error hook: every error becomes the envelope, with the common headers. */
export function createErrorHandler(rateLimit: () => number): (error: H3Error, event: H3Event) => void {
  return (error, event) => {
    if (event.node.res.headersSent) return
    const data = (error.data ?? {}) as Partial<ErrorData>
    let status = error.statusCode || 500
    let message = error.message
    if (!data.code && (error.unhandled || status >= 500)) {
      console.error('[shim] unexpected error', error.cause ?? error)
      status = 500
      message = 'Internal server error'
    }
    // Headers set before the error (ETag of a half-done response) must not leak into the envelope.
    for (const name of event.node.res.getHeaderNames()) event.node.res.removeHeader(name)
    setCommonHeaders(event, rateLimit())
    for (const [name, value] of Object.entries(data.headers ?? {})) event.node.res.setHeader(name, value)
    sendErrorEnvelope(event, status, data.code ?? codesByStatus[status] ?? 'error', message, data.details)
  }
}
