/**
 * Where each file of a release goes in the bucket and with which headers. A key is the file's URL
 * path (build/release/manifest.ts fileUrl, decoded) under the prefix, so the bucket serves the same
 * URL space as the shim's static side: `api/v1/projects/sodium` (the local `.json` suffix only
 * exists because a folder cannot also be a file; a bucket has no folders), `objects/<sha256>/<name>`
 * and `mirror/...`. A CDN or a static website endpoint in front of the bucket needs no rewrite.
 */
import type { FileRef, ManifestIndex, Pointer } from '../release/formats.ts'
import { fileUrl, MIRROR_DIR, shardFile } from '../release/manifest.ts'
import { contentTypeOf, JSON_CONTENT_TYPE, mirrorContentTypeOf } from '../static-paths.ts'
import type { PublishSettings } from './options.ts'

/** Cache-Control of names that never change bytes (the shim's for file objects). */
export const IMMUTABLE = 'public, max-age=31536000, immutable'

/** Cache-Control of the pointer and the catalog: names reused by every release, revalidated on each read. */
export const REVALIDATE = 'public, no-cache'

/** Release-relative name of the pointer. */
export const POINTER_NAME = `${MIRROR_DIR}/pointer.json`

/** Release-relative name of the catalog database published for mirrors. */
export const CATALOG_NAME = `${MIRROR_DIR}/catalog.sqlite`

/** Bucket key of a release-relative name (`public/...`). */
export function resolveKey(prefix: string, name: string): string {
  return prefix + decodeURIComponent(fileUrl(name)).slice(1)
}

/** Headers an object is stored with (S3 replays them on every GET). */
export interface ObjectHeaders {
  contentType: string
  cacheControl: string
  contentDisposition: string | null
}

/** The headers of a release-relative name. */
export function resolveHeaders(name: string, options: Pick<PublishSettings, 'maxAge' | 'staleWhileRevalidate'>): ObjectHeaders {
  if (name.startsWith('public/objects/')) {
    const filename = name.slice(name.lastIndexOf('/') + 1)
    return { contentType: contentTypeOf(filename), cacheControl: IMMUTABLE, contentDisposition: `attachment; filename*=UTF-8''${encodeURIComponent(filename)}` }
  }
  if (name.startsWith(`${MIRROR_DIR}/`)) {
    const mutable = name === POINTER_NAME || name === CATALOG_NAME
    return { contentType: mirrorContentTypeOf(name), cacheControl: mutable ? REVALIDATE : IMMUTABLE, contentDisposition: null }
  }
  // Mutable JSON: public (a bucket sends no per-client headers, unlike the shim) and short-lived.
  return { contentType: JSON_CONTENT_TYPE, cacheControl: `public, max-age=${options.maxAge}, stale-while-revalidate=${options.staleWhileRevalidate}`, contentDisposition: null }
}

/** A mirror document of a release: its name and what identifies its bytes. */
export interface MirrorDoc {
  name: string
  /** SHA-256 the bytes must have, or null when the pointer's hash is of the uncompressed text. */
  sha256: string | null
  /** `sha256:size` of the pointer's reference: equal identities are equal files. */
  identity: string
}

/**
 * The mirror documents a pointer names (the pointer itself excepted), in upload order: shards,
 * manifest index, change files, snapshot, archive, and the catalog last (its name is reused, so it
 * is overwritten as late as possible before the pointer).
 */
export function listMirrorDocs(pointer: Pointer, index: ManifestIndex): MirrorDoc[] {
  const byBytes = (ref: FileRef): MirrorDoc => ({ name: `public${ref.path}`, sha256: ref.sha256, identity: `${ref.sha256}:${ref.size}` })
  const docs: MirrorDoc[] = index.shards.map((s) => ({ name: shardFile(s.sha256), sha256: null, identity: `${s.sha256}:${s.size}` }))
  docs.push(byBytes(pointer.manifest))
  for (const e of pointer.feed.changes) docs.push({ name: `public${e.path}`, sha256: null, identity: `${e.sha256}:${e.size}` })
  for (const ref of [pointer.snapshot, pointer.archive]) if (ref) docs.push(byBytes(ref))
  docs.push(byBytes(pointer.catalog))
  // Two shards can have the same text (both empty, say): one object.
  return [...new Map(docs.map((d) => [d.name, d])).values()]
}
