/**
 * Streams a file of the live release that is too large or too rarely read for the memory cache:
 * file objects (/objects) and mirror documents (/mirror). One place for their conditional GET.
 */
import { createReadStream } from 'node:fs'
import type { H3Event } from 'h3'
import { matchesIfNoneMatch } from './respond.ts'

/** What a streamed response carries besides its bytes. */
export interface FileResponse {
  etag: string
  cacheControl: string
  contentType: string
  size: number
  /** More headers of a 200 (e.g. Content-Disposition). */
  headers?: Record<string, string>
}

/** Sends `file`: 304 when If-None-Match matches, else 200 with the headers and (for GET) the streamed bytes. */
export async function sendFile(event: H3Event, file: string, response: FileResponse): Promise<void> {
  const { req, res } = event.node
  res.setHeader('ETag', response.etag)
  res.setHeader('Cache-Control', response.cacheControl)
  if (matchesIfNoneMatch(req.headers['if-none-match'], response.etag)) {
    res.statusCode = 304
    res.end()
    return
  }
  res.setHeader('Content-Type', response.contentType)
  res.setHeader('Content-Length', response.size)
  for (const [name, value] of Object.entries(response.headers ?? {})) res.setHeader(name, value)
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  await new Promise<void>((resolve, reject) => {
    createReadStream(file).on('error', reject).on('end', resolve).pipe(res)
  })
}
