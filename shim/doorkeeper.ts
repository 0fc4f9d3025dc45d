/**
 * The static cache's doorkeeper (StaticCache.admit): which answer keys were asked recently, in two
 * Bloom filters of 32 KB each (TinyLFU's doorkeeper, rotated instead of reset). A key is noted in
 * the newer filter; when that has taken KEYS_PER_FILTER keys it becomes the older one and the older
 * is emptied to be the newer, so a key asked again is recognised while fewer than 16,384 other
 * first-time keys came after it, and forgotten after at most 32,768. A first attempt kept the keys
 * themselves in two Sets: 117–121 bytes of heap a key, 4 MB for this window, and taken from
 * CACHE_BYTES that pushed the bench's static reads out of a cache they nearly filled (bench/results/
 * PROFILE.md, Session 12). A filter holds no key, so it costs 64 KB whatever it notes; its price is
 * a false positive now and then (0.27% of 163,840 first-time keys in a probe; under 1% checked in
 * test/memory-bounds.test.ts), which only keeps one answer early.
 */

/** Bits of each filter (a power of two): 32 KB. */
const FILTER_BITS = 1 << 18
/** Keys noted in the newer filter before it becomes the older one. */
export const KEYS_PER_FILTER = 16_384
/** Bits set and tested per key: with 16,384 keys in 2^18 bits, 0.24% false positives per filter. */
const PROBES = 4

/** Remembers keys asked recently. */
export interface Doorkeeper {
  /** True when `key` was noted before (recently); otherwise notes it and returns false. */
  seen(key: string): boolean
  /** Forgets every key. */
  clear(): void
}

/** FNV-1a over the key's UTF-16 code units, then a murmur3 finaliser for the second hash (also the frequency sketch's, shim/frequency-sketch.ts). */
export function keyHashes(key: string): [number, number] {
  let h = 0x811c9dc5
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
  let g = h ^ 0x9e3779b9
  g = Math.imul(g ^ (g >>> 16), 0x85ebca6b)
  g = Math.imul(g ^ (g >>> 13), 0xc2b2ae35)
  g ^= g >>> 16
  // Odd, so the probes h, h + g, h + 2g, ... are distinct bits.
  return [h >>> 0, (g | 1) >>> 0]
}

function has(filter: Uint32Array, h: number, g: number): boolean {
  for (let i = 0; i < PROBES; i++) {
    const bit = (h + i * g) & (FILTER_BITS - 1)
    if ((filter[bit >>> 5]! & (1 << (bit & 31))) === 0) return false
  }
  return true
}

function add(filter: Uint32Array, h: number, g: number): void {
  for (let i = 0; i < PROBES; i++) {
    const bit = (h + i * g) & (FILTER_BITS - 1)
    filter[bit >>> 5]! |= 1 << (bit & 31)
  }
}

/** Creates an empty doorkeeper (64 KB). */
export function createDoorkeeper(): Doorkeeper {
  let newer = new Uint32Array(FILTER_BITS / 32)
  let older = new Uint32Array(FILTER_BITS / 32)
  let noted = 0
  return {
    seen(key) {
      const [h, g] = keyHashes(key)
      if (has(newer, h, g) || has(older, h, g)) return true
      if (noted >= KEYS_PER_FILTER) {
        const emptied = older.fill(0)
        older = newer
        newer = emptied
        noted = 0
      }
      add(newer, h, g)
      noted++
      return false
    },
    clear() {
      newer.fill(0)
      older.fill(0)
      noted = 0
    },
  }
}
