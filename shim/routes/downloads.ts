/**
 * Route of downloads (SPEC.md §4 "Files and hash lookup"): a 302 to the immutable, content-addressed
 * file object (DESIGN "Download redirect"), served by the shim under /objects or by a configured
 * files base URL. The redirect itself is never cached: it is the request that is counted, once per
 * visitor, file and UTC day (shim/download-counter.ts). HEAD answers the same without counting.
 */
import { notFound } from '../errors.ts'
import { getRequestState } from '../respond.ts'
import type { Route, RouteInput } from './index.ts'

/** GET/HEAD /files/{id}/download: 302 to `<filesBaseUrl>/<sha256>/<filename>`; 404 for an unknown or invisible file. */
async function handleDownload(input: RouteInput): Promise<void> {
  const { ctx, event, params } = input
  // The catalog holds only files of visible versions of visible projects, so absent = not public.
  const file = await ctx.release.db.get<{ sha256: string; filename: string }>(`SELECT sha256, filename FROM files WHERE id = ?`, [params.id!])
  if (!file) throw notFound(`File ${JSON.stringify(params.id)}`)
  // The 302 waits for the count's commit (group-committed), so an acknowledged download is never lost.
  if (event.node.req.method === 'GET') await ctx.downloads.record(params.id!, getRequestState(event).clientKey)
  const res = event.node.res
  res.statusCode = 302
  res.setHeader('Location', `${ctx.options.filesBaseUrl}/${file.sha256}/${encodeURIComponent(file.filename)}`)
  res.setHeader('Cache-Control', 'no-store')
  res.setHeader('Content-Length', 0)
  res.end()
}

/** The downloads routes. */
export const downloadsRoutes: Route[] = [{ pattern: ['files', ':id', 'download'], handler: handleDownload }]
