/**
 * Serves the mirror documents of the live release (/mirror/pointer.json, manifest index and shards,
 * change files, catalog, snapshot, archive: build/release/formats.ts) as plain files, streamed.
 * The pointer and the catalog keep their names from release to release, so they get the short TTL;
 * every other name is never reused for other bytes and is immutable.
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import type { H3Event } from 'h3'
import { formatEtag } from '../build/render/etag.ts'
import { mirrorContentTypeOf } from '../build/static-paths.ts'
import { IMMUTABLE, mutableCacheControl } from './app.ts'
import type { ShimContext } from './context.ts'
import { notFound } from './errors.ts'
import { sendFile } from './send-file.ts'

/** Mirror documents whose name is reused by every release: the short TTL; every other name is immutable. */
export const MUTABLE_MIRROR_NAMES: readonly string[] = ['pointer.json', 'catalog.sqlite']

/**
 * Answers GET/HEAD /mirror/<segments>. Security: the segments were checked by isSafePath (no `..`,
 * no separators); names starting with a dot (temp files of a build in progress) are never served.
 */
export async function sendMirrorFile(ctx: ShimContext, event: H3Event, segments: string[]): Promise<void> {
  if (segments.length === 0 || segments.some((s) => s.startsWith('.'))) throw notFound('The mirror file')
  const file = path.join(ctx.release.publicDir, 'mirror', ...segments)
  const st = statSync(file, { throwIfNoEntry: false })
  if (!st || !st.isFile()) throw notFound('The mirror file')
  const name = segments.join('/')
  const mutable = MUTABLE_MIRROR_NAMES.includes(name)
  // Files of a release never change in place, so mtime and size identify the bytes; the same rule
  // as nginx's, so both answer the same ETag for the same file (README, "Running behind nginx").
  const etag = formatEtag(Math.floor(st.mtimeMs / 1000), st.size)
  await sendFile(event, file, { etag, cacheControl: mutable ? mutableCacheControl(ctx) : IMMUTABLE, contentType: mirrorContentTypeOf(name), size: st.size })
}
