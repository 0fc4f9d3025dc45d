/**
 * Static bodies of the live release kept in memory, bounded in bytes. A hit costs one Map lookup
 * and a flag write: no disk read and no hashing per request (PERF-BASELINE: a disk read per request
 * is about 4x slower), and no Map reordering either — eviction is CLOCK (second chance), which
 * approximates least-recently-used: re-inserting every hit to keep exact LRU order cost about 3%
 * of a static read (bench/results/serve.md).
 */
import { readFile } from 'node:fs/promises'
import { createBody, type Body } from '../build/render/body.ts'

/**
 * What an entry costs beside its body's bytes: the key (a path of about 100 characters), the Map
 * slot, the entry, the Body, its ETag string and the Buffer object. Counted against the bound, so
 * the JavaScript heap the cache holds stays within CACHE_BYTES even when the cache is full of
 * tiny bodies (`{"data":[]}` under thousands of URLs): the shim's heap limit relies on it
 * (shim/heap.ts).
 */
export const ENTRY_OVERHEAD_BYTES = 400

/** A bounded in-memory store of file bodies. */
export interface StaticCache {
  /** The cached body of a release file (a hit, synchronously: no promise on the hot path), or undefined. Optional: a store without memory has no hits. */
  get?(file: string): Body | undefined
  /** The body of a release file, or null when the file does not exist. */
  read(file: string): Promise<Body | null>
  clear(): void
  readonly size: number
}

interface Entry {
  body: Body
  /** Set by a hit; eviction clears it once (second chance) before evicting. */
  used: boolean
}

/** Creates a cache holding at most maxBytes of bodies (each counted with ENTRY_OVERHEAD_BYTES). */
export function createStaticCache(maxBytes: number): StaticCache {
  // Insertion order is the clock hand's order: the first entries are the oldest.
  const entries = new Map<string, Entry>()
  let bytes = 0
  const evict = (): void => {
    for (const [key, entry] of entries) {
      if (bytes <= maxBytes) break
      entries.delete(key)
      if (entry.used) {
        entry.used = false
        entries.set(key, entry)
      } else {
        bytes -= entry.body.bytes.length + ENTRY_OVERHEAD_BYTES
      }
    }
  }
  const get = (file: string): Body | undefined => {
    const entry = entries.get(file)
    if (entry === undefined) return undefined
    entry.used = true
    return entry.body
  }
  return {
    get,
    async read(file) {
      const hit = get(file)
      if (hit) return hit
      let bytesRead: Buffer
      try {
        bytesRead = await readFile(file)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG') return null
        throw err
      }
      // Another request may have read the same file meanwhile: keep one entry, count its bytes once.
      const raced = get(file)
      if (raced) return raced
      const body = createBody(bytesRead)
      if (body.bytes.length + ENTRY_OVERHEAD_BYTES <= maxBytes) {
        entries.set(file, { body, used: false })
        bytes += body.bytes.length + ENTRY_OVERHEAD_BYTES
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
