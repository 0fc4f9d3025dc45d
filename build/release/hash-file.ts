/** SHA-256 and size of a file, streamed (snapshots and catalogs are gigabytes at the large size). */
import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'

/** SHA-256 (hex) and size in bytes of a file. */
export interface FileHash {
  sha256: string
  size: number
}

/** Hashes a file without holding it in memory. */
export async function hashFile(file: string): Promise<FileHash> {
  const hash = createHash('sha256')
  let size = 0
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    hash.update(chunk as Buffer)
    size += (chunk as Buffer).length
  }
  return { sha256: hash.digest('hex'), size }
}
