/**
 * Static bodies of the live release kept in memory, least recently used first out, bounded in bytes.
 * A hit costs a Map lookup: no disk read and no hashing per request (PERF-BASELINE: a disk read per
 * request is about 4x slower).
 */
import { readFile } from 'node:fs/promises'
import { createBody, type Body } from '../build/render/body.ts'

/** An LRU of file bodies. */
export interface StaticCache {
  /** The body of a release file, or null when the file does not exist. */
  read(file: string): Promise<Body | null>
  clear(): void
  readonly size: number
}

/** Creates a cache holding at most maxBytes of bodies. */
export function createStaticCache(maxBytes: number): StaticCache {
  const entries = new Map<string, Body>()
  let bytes = 0
  const evict = (): void => {
    for (const [key, body] of entries) {
      if (bytes <= maxBytes) break
      entries.delete(key)
      bytes -= body.bytes.length
    }
  }
  return {
    async read(file) {
      const hit = entries.get(file)
      if (hit) {
        entries.delete(file)
        entries.set(file, hit)
        return hit
      }
      let bytesRead: Buffer
      try {
        bytesRead = await readFile(file)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG') return null
        throw err
      }
      const body = createBody(bytesRead)
      if (body.bytes.length <= maxBytes) {
        entries.set(file, body)
        bytes += body.bytes.length
        evict()
      }
      return body
    },
    clear() {
      entries.clear()
      bytes = 0
    },
    get size() {
      return entries.size
    },
  }
}
