/**
 * Serves the mirror documents of the live release (/mirror/pointer.json, manifest index and shards,
 * change files, catalog, snapshot, archive: build/release/formats.ts) as plain files, streamed.
 * The pointer and the catalog keep their names from release to release, so they get the short TTL;
 * every other name is never reused for other bytes and is immutable.
 */
import { statSync } from 'node:fs'
import path from 'node:path'
import type { H3Event } from 'h3'
import { IMMUTABLE, mutableCacheControl } from './app.ts'
import type { ShimContext } from './context.ts'
import { notFound } from './errors.ts'
import { sendFile } from './send-file.ts'

const TYPES: Record<string, string> = { '.json': 'application/json', '.gz': 'application/gzip', '.sqlite': 'application/vnd.sqlite3' }

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
  const mutable = name === 'pointer.json' || name === 'catalog.sqlite'
  // Files of a release never change in place, so inode, size and mtime identify the bytes.
  const etag = `"${st.ino.toString(36)}-${st.size.toString(36)}-${Math.floor(st.mtimeMs).toString(36)}"`
  await sendFile(event, file, { etag, cacheControl: mutable ? mutableCacheControl(ctx) : IMMUTABLE, contentType: TYPES[path.extname(name)] ?? 'application/octet-stream', size: st.size })
}
