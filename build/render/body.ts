/**
 * Response bodies: the `{ data, meta? }` envelope serialised once, and the ETag derived from the
 * bytes. Both the build and the shim produce bodies only through these functions. The build needs
 * only the bytes (its ETags come from the stored files' mtimes), so each rendering has a `…Bytes`
 * form that does not hash them: a body hashed for its ETag and again for the content store cost a
 * second SHA-256 per body (bench/results/BUILD-PROFILE.md).
 */
import { hash } from 'node:crypto'
import type { PageMeta } from '../schema/api.ts'
import { contentEtag } from './etag.ts'

/** A serialised response body with its strong ETag. */
export interface Body {
  bytes: Buffer
  etag: string
}

/** The bytes of `{ data }` (or `{ data, meta }`). */
export function renderBodyBytes(data: unknown, meta?: PageMeta): Buffer {
  return Buffer.from(meta === undefined ? `{"data":${JSON.stringify(data)}}` : `{"data":${JSON.stringify(data)},"meta":${JSON.stringify(meta)}}`)
}

/** Serialises `{ data }` (or `{ data, meta }`). */
export function renderBody(data: unknown, meta?: PageMeta): Body {
  return createBody(renderBodyBytes(data, meta))
}

/** The bytes of `{ data: [...] }` from items that are already JSON text (stored renderings). */
export function renderRawListBytes(items: readonly string[], meta?: PageMeta): Buffer {
  const data = `[${items.join(',')}]`
  return Buffer.from(meta === undefined ? `{"data":${data}}` : `{"data":${data},"meta":${JSON.stringify(meta)}}`)
}

/** Serialises `{ data: [...] }` from items that are already JSON text (stored renderings). */
export function renderRawListBody(items: readonly string[], meta?: PageMeta): Body {
  return createBody(renderRawListBytes(items, meta))
}

/** The bytes of `{ data: <json text> }` around one stored rendering. */
export function renderRawBytes(item: string): Buffer {
  return Buffer.from(`{"data":${item}}`)
}

/** Serialises `{ data: <json text> }` around one stored rendering. */
export function renderRawBody(item: string): Body {
  return createBody(renderRawBytes(item))
}

/**
 * Wraps bytes with their ETag (strong, content-based; the rule is build/render/etag.ts). The
 * one-shot `crypto.hash` costs about half of a `createHash` object's update and digest for a body
 * of a few KB (its hex answer is cheaper than its Buffer).
 */
export function createBody(bytes: Buffer): Body {
  return { bytes, etag: contentEtag(hash('sha256', bytes, 'hex'), bytes.length) }
}

/** Computes PageMeta for a page of a list of `total` items. */
export function renderPageMeta(page: number, limit: number, total: number): PageMeta {
  return { page, limit, total, totalPages: Math.ceil(total / limit) }
}
