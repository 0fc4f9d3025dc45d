/**
 * Parses the request target once, safely: the path is split into decoded segments and the query
 * into a null-prototype map. The static lookup and the router both use these segments, so the
 * route guard and the file lookup always see the same path.
 */
import { apiError } from './errors.ts'

/** A parsed request target. */
export interface RequestTarget {
  /** Decoded path segments, e.g. ['api', 'v1', 'projects', 'sodium']. */
  segments: string[]
  /** The raw query string without `?` ('' when absent or empty). */
  search: string
}

const MAX_TARGET = 8192

/**
 * Security: a segment may not be empty, `.` or `..`, nor contain `/`, `\` or control characters
 * after decoding, so no encoding (`%2e%2e`, `%2f`, `%5c`, double encoding) can walk out of the tree;
 * such paths are simply not found. NUL and malformed escapes are 400.
 */
export function parseRequestTarget(url: string): RequestTarget {
  if (url.length > MAX_TARGET) throw apiError(414, 'uri_too_long', `The request target is longer than ${MAX_TARGET} characters`)
  const q = url.indexOf('?')
  const rawPath = q === -1 ? url : url.slice(0, q)
  const search = q === -1 ? '' : url.slice(q + 1)
  if (rawPath.includes('\0') || /%00/i.test(url)) throw apiError(400, 'bad_request', 'The request target contains a NUL byte')
  if (!rawPath.startsWith('/')) throw apiError(400, 'bad_request', 'The request path must start with /')
  const parts = rawPath.split('/').slice(1)
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop()
  const segments: string[] = []
  for (const part of parts) {
    let segment: string
    try {
      segment = decodeURIComponent(part)
    } catch {
      throw apiError(400, 'bad_request', 'The request path contains a malformed percent-encoding')
    }
    segments.push(segment)
  }
  return { segments, search }
}

/** Whether every segment is a plain name that can be mapped to a file. */
export function isSafePath(segments: readonly string[]): boolean {
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..' || s.length > 255) return false
    // eslint-disable-next-line no-control-regex
    if (/[\\/\x00-\x1f\x7f]/.test(s)) return false
  }
  return true
}
