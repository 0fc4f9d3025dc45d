/**
 * Stamps stored bodies with their content mtime (build/render/etag.ts), so a static server that
 * derives ETags from mtime and size (nginx) sends the ETag the shim computes from the bytes. Hard
 * links share the inode and so the stamp; copies must be stamped again (linkOrCopy does).
 */
import { utimesSync, type Stats } from 'node:fs'
import { contentMtime } from '../render/etag.ts'

/** Sets the file's mtime (and atime) to the content mtime of its SHA-256. */
export function stampContentMtime(file: string, sha256: string): void {
  const seconds = contentMtime(sha256)
  utimesSync(file, seconds, seconds)
}

/** Whether a stat already carries the content mtime of this SHA-256 (whole seconds compared, as nginx does). */
export function hasContentMtime(st: Stats, sha256: string): boolean {
  return Math.floor(st.mtimeMs / 1000) === contentMtime(sha256)
}
