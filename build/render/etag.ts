/**
 * The one ETag rule of the API: `"<hex seconds>-<hex size>"`, the format nginx gives a static file
 * from its mtime and length. Every stored body's mtime is set to a value derived from its SHA-256
 * (contentMtime; build/release/content-mtime.ts), so the ETag the shim computes from the bytes and
 * the one nginx (or any mtime-and-size static server) computes from the file are the same string,
 * and both depend only on the content.
 */

/**
 * Seconds derived from a body's SHA-256: its first 30 bits, so a date between 1970 and 2004. Never
 * in the future (tar, make and backup tools warn about or mishandle future mtimes) and valid on every
 * file system; with the size beside it, a changed body keeps its old ETag with probability about
 * 2^-30 per change. These mtimes are not dates: nginx's Last-Modified is removed.
 */
export function contentMtime(sha256: string | Buffer): number {
  const first = typeof sha256 === 'string' ? Number.parseInt(sha256.slice(0, 8), 16) : sha256.readUInt32BE(0)
  return first >>> 2
}

/** The ETag of a file or body from its (derived or real) mtime in seconds and its size in bytes. */
export function formatEtag(mtimeSeconds: number, size: number): string {
  return `"${mtimeSeconds.toString(16)}-${size.toString(16)}"`
}

/** The ETag of bytes with this SHA-256 and size. */
export function contentEtag(sha256: string | Buffer, size: number): string {
  return formatEtag(contentMtime(sha256), size)
}

/** The size in bytes an ETag of formatEtag names; null for another string. */
export function etagSize(etag: string): number | null {
  const m = /^"[0-9a-f]+-([0-9a-f]+)"$/.exec(etag)
  return m ? Number.parseInt(m[1]!, 16) : null
}
