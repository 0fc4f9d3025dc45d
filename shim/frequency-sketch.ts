/**
 * How often each key of the static cache was asked recently: TinyLFU's frequency sketch (Einziger,
 * Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", 2017; Caffeine's
 * FrequencySketch). A count-min sketch of saturating 4-bit counters (0–15), four per key, read as their
 * minimum; every `resetAfter` additions all counters are halved, so what was asked long ago counts
 * less than what is asked now. It holds no key: its memory is fixed whatever it counts, and a
 * collision only makes a key look more asked than it was.
 *
 * The static cache (shim/static-cache.ts) asks it which of two keys to keep when it is full: the
 * newcomer or the entry its eviction would take out. Callers hash a key once (keyHash) and keep the
 * number, so a hit on a kept entry counts without hashing its key again.
 */
import { keyHashes } from './doorkeeper.ts'

/** Counts of recent asks by key hash (keyHash). */
export interface FrequencySketch {
  /** Counts one ask of the key with this hash. */
  add(hash: number): void
  /** About how often the key was asked recently (0–15); never fewer times than it was since the last halving. */
  estimate(hash: number): number
  /** Forgets every count. */
  clear(): void
  /** Its memory (bytes of counters). */
  readonly bytes: number
}

/** The most a counter holds (4 bits' worth, as Caffeine's). */
const MAX_COUNT = 15
/** Counters set and read per key. */
const PROBES = 4

/** A key's hash for the sketch: 30 bits, so an entry holds it as a small integer (no heap number). */
export function keyHash(key: string): number {
  return keyHashes(key)[1] >>> 2
}

/** The counter of probe i of a hash: double hashing over the table, the step odd so the probes differ. */
function slot(hash: number, i: number, mask: number): number {
  const step = (Math.imul(hash, 0x27d4eb2f) >>> 7) | 1
  return (hash + i * step) & mask
}

/**
 * A sketch of `counters` 4-bit counters (rounded up to a power of two, at least 8,192: a small cache's
 * sketch would otherwise be all collisions), two to a byte, halved every `resetAfter` additions (at
 * least 1,024).
 */
export function createFrequencySketch(counters: number, resetAfter: number): FrequencySketch {
  resetAfter = Math.max(1024, resetAfter)
  let width = 8192
  while (width < counters) width *= 2
  const table = new Uint8Array(width / 2)
  const mask = width - 1
  let added = 0
  const countAt = (at: number): number => (table[at >>> 1]! >>> ((at & 1) << 2)) & 0xf
  return {
    add(hash) {
      for (let i = 0; i < PROBES; i++) {
        const at = slot(hash, i, mask)
        if (countAt(at) < MAX_COUNT) table[at >>> 1]! += 1 << ((at & 1) << 2)
      }
      if (++added >= resetAfter) {
        // Both nibbles of each byte halved at once: shift, and drop what crossed from the high one.
        for (let i = 0; i < table.length; i++) table[i] = (table[i]! >>> 1) & 0x77
        added = 0
      }
    },
    estimate(hash) {
      let least = MAX_COUNT
      for (let i = 0; i < PROBES; i++) least = Math.min(least, countAt(slot(hash, i, mask)))
      return least
    },
    clear() {
      table.fill(0)
      added = 0
    },
    bytes: table.length,
  }
}
