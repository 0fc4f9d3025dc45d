/**
 * Response bodies: the `{ data, meta? }` envelope serialised once, and the ETag derived from the
 * bytes. Both the build and the shim produce bodies only through these functions.
 */
import { createHash } from 'node:crypto'
import type { PageMeta } from '../schema/api.ts'
import { contentEtag } from './etag.ts'

/** A serialised response body with its strong ETag. */
export interface Body {
  bytes: Buffer
  etag: string
}

/** Serialises `{ data }` (or `{ data, meta }`). */
export function renderBody(data: unknown, meta?: PageMeta): Body {
  const json = meta === undefined ? `{"data":${JSON.stringify(data)}}` : `{"data":${JSON.stringify(data)},"meta":${JSON.stringify(meta)}}`
  return createBody(Buffer.from(json))
}

/** Serialises `{ data: [...] }` from items that are already JSON text (stored renderings). */
export function renderRawListBody(items: readonly string[], meta?: PageMeta): Body {
  const data = `[${items.join(',')}]`
  const json = meta === undefined ? `{"data":${data}}` : `{"data":${data},"meta":${JSON.stringify(meta)}}`
  return createBody(Buffer.from(json))
}

/** Serialises `{ data: <json text> }` around one stored rendering. */
export function renderRawBody(item: string): Body {
  return createBody(Buffer.from(`{"data":${item}}`))
}

/** Wraps bytes with their ETag (strong, content-based; the rule is build/render/etag.ts). */
export function createBody(bytes: Buffer): Body {
  return { bytes, etag: contentEtag(createHash('sha256').update(bytes).digest(), bytes.length) }
}

/** Computes PageMeta for a page of a list of `total` items. */
export function renderPageMeta(page: number, limit: number, total: number): PageMeta {
  return { page, limit, total, totalPages: Math.ceil(total / limit) }
}
