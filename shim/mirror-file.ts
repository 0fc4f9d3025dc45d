/**
 * Serves the mirror documents of the live release (/mirror/pointer.json, manifest index and shards,
 * change files, catalog, snapshot, archive: build/release/formats.ts) as plain files, streamed.
 * The pointer and the catalog keep their names from release to release, so they get the short TTL;
 * every other name is never reused for other bytes and is immutable.
 */
import { createReadStream, statSync } from 'node:fs'
import path from 'node:path'
import type { H3Event } from 'h3'
import { mirrorContentTypeOf } from '../build/static-paths.ts'
import { IMMUTABLE, mutableCacheControl } from './app.ts'
import type { ShimContext } from './context.ts'
import { notFound } from './errors.ts'

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
  const { req, res } = event.node
  res.setHeader('ETag', etag)
  res.setHeader('Cache-Control', mutable ? mutableCacheControl(ctx) : IMMUTABLE)
  const inm = req.headers['if-none-match']
  if (inm && inm.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === etag)) {
    res.statusCode = 304
    res.end()
    return
  }
  res.setHeader('Content-Type', mirrorContentTypeOf(name))
  res.setHeader('Content-Length', st.size)
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  await new Promise<void>((resolve, reject) => {
    createReadStream(file).on('error', reject).on('end', resolve).pipe(res)
  })
}
