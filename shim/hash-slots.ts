/**
 * A table of values keyed by a lowercase hex SHA-1 or SHA-256 (40 or 64 characters), kept as bytes
 * in a typed array and found by open addressing: the static cache's index of the single hash lookups
 * it keeps (shim/static-cache.ts), which a bulk lookup asks 100 times a request.
 *
 * Why not a Map: at the large catalog a one-off bulk lookup's 100 Map lookups were a quarter of its
 * CPU, each about 1 µs of memory latency (bench/results/PROFILE.md, Sessions 53 and 54): the Map's
 * bucket, its entry, the key string it compares and the value, each a cache miss somewhere in a
 * heap of 100,000 entries. Here a key's bytes sit in its slot, 32 bytes of one typed array, so the
 * probe and the comparison are one miss, and only the value is another. Reading the query's hex
 * digits costs about as much as V8 hashing the string did. A micro-benchmark of 100 lookups and
 * copies of their bodies from 100,000 (bench/hash-slots.ts) measured about a fifth less time than
 * with the Map.
 *
 * Linear probing, at most half full (it doubles past that), deletion by shifting back the entries
 * after the one removed (no tombstones, so a long-lived table does not fill with them). The slot of
 * a key comes from all of its words mixed with a seed drawn when the table is made: the hashes are
 * users' files, and a seed no one knows keeps anyone from crafting hashes that pile into one run of
 * slots.
 */
import { randomBytes } from 'node:crypto'

/** The most 32-bit words a key has (SHA-256: 64 hex digits); SHA-1 keys use the first five. */
const WORDS = 8
/** The table is doubled before more than 1 slot in LOAD_DIVISOR is taken. */
const LOAD_DIVISOR = 2
/** Bytes a slot takes: its words, its key's length and its value's reference in a JavaScript array. */
export const HASH_SLOT_BYTES = WORDS * 4 + 1 + 8

/** A table of values by lowercase hex SHA-1 or SHA-256. Keys that are anything else are never found, nor kept (set returns false). */
export interface HashSlots<V> {
  /** The value kept under key, undefined when none is, or null when key is not a 40- or 64-digit lowercase hex string (which this table never keeps). */
  get(key: string): V | undefined | null
  /** Keeps value under key, in place of any value kept under it. False, keeping nothing, when key is not a lowercase hex SHA-1 or SHA-256. */
  set(key: string, value: V): boolean
  /** Forgets what is kept under key; whether anything was. */
  delete(key: string): boolean
  /** Forgets everything (the slots keep their number: a new release fills them again). */
  clear(): void
  /** Keys kept. */
  readonly size: number
  /** Bytes the slots take (HASH_SLOT_BYTES each), whatever is kept in them: 0 until the first key is kept. */
  readonly bytes: number
}

/**
 * Reads a lowercase hex SHA-1 or SHA-256 into `words` (big-endian 32-bit words of its bytes) and
 * returns how many words it has (5 or 8), or 0 when key is not one.
 */
function readHex(key: string, words: Int32Array): number {
  const length = key.length
  if (length !== 40 && length !== 64) return 0
  const n = length >>> 3
  for (let w = 0, at = 0; w < n; w++) {
    let word = 0
    for (const end = at + 8; at < end; at++) {
      const c = key.charCodeAt(at)
      // 0-9 are 48-57, a-f are 97-102: anything else (upper case included) is not a key.
      const digit = c - 48 < 10 ? c - 48 : c - 97 < 6 ? c - 87 : -1
      if (digit < 0) return 0
      word = (word << 4) | digit
    }
    words[w] = word
  }
  return n
}

/**
 * Creates an empty table. Its slots are made with the first key kept, `initialSlots` of them (a
 * power of two, at least 2), and doubled as it fills: a cache that keeps no hash lookup spends
 * nothing on them.
 */
export function createHashSlots<V>(initialSlots = 1024): HashSlots<V> {
  if (!Number.isInteger(Math.log2(initialSlots)) || initialSlots < 2) throw new RangeError(`initialSlots must be a power of two of at least 2, not ${initialSlots}`)
  const seed = randomBytes(4).readInt32LE(0) | 1
  let capacity = 0
  let mask = 0
  let words = new Int32Array(0)
  /** Words of a key in a slot (5 or 8); 0 for a free slot. */
  let lengths = new Uint8Array(0)
  let values: (V | undefined)[] = []
  let size = 0
  /** The key being looked up, as words. */
  const key = new Int32Array(WORDS)

  /** The slot a key of n words (in `of`, from `at`) starts its search at. */
  const home = (of: Int32Array, at: number, n: number): number => {
    let h = seed
    for (let w = 0; w < n; w++) {
      h = Math.imul(h ^ of[at + w]!, 0x9e3779b1)
      h ^= h >>> 15
    }
    return (h ^ n) & mask
  }

  /** The slot holding the key in `key` (n words), or the free slot where it would go. */
  const find = (n: number): number => {
    let slot = home(key, 0, n)
    for (;;) {
      const length = lengths[slot]!
      if (length === 0) return slot
      if (length === n) {
        const at = slot * WORDS
        let w = 0
        while (w < n && words[at + w] === key[w]) w++
        if (w === n) return slot
      }
      slot = (slot + 1) & mask
    }
  }

  /** Puts the key in `key` (n words) and its value in a free slot (the table has room). */
  const place = (slot: number, n: number, value: V): void => {
    words.set(n === WORDS ? key : key.subarray(0, n), slot * WORDS)
    lengths[slot] = n
    values[slot] = value
  }

  /** Doubles the slots (makes the first ones), moving every key to its slot in the new table. */
  const grow = (): void => {
    const [oldWords, oldLengths, oldValues, oldCapacity] = [words, lengths, values, capacity]
    capacity = capacity === 0 ? initialSlots : capacity * 2
    mask = capacity - 1
    words = new Int32Array(capacity * WORDS)
    lengths = new Uint8Array(capacity)
    values = new Array<V | undefined>(capacity).fill(undefined)
    for (let old = 0; old < oldCapacity; old++) {
      const n = oldLengths[old]!
      if (n === 0) continue
      let slot = home(oldWords, old * WORDS, n)
      while (lengths[slot] !== 0) slot = (slot + 1) & mask
      words.set(oldWords.subarray(old * WORDS, old * WORDS + n), slot * WORDS)
      lengths[slot] = n
      values[slot] = oldValues[old]
    }
  }

  /**
   * Frees a slot, then moves back each key after it in its run that may take the freed slot (one
   * whose home is not between the freed slot and where it sits, cyclically), so every key stays
   * reachable from its home without crossing a free slot.
   */
  const free = (slot: number): void => {
    let hole = slot
    let next = (hole + 1) & mask
    while (lengths[next] !== 0) {
      const n = lengths[next]!
      const start = home(words, next * WORDS, n)
      // Stays when its home lies cyclically in (hole, next].
      const stays = hole <= next ? hole < start && start <= next : hole < start || start <= next
      if (!stays) {
        words.copyWithin(hole * WORDS, next * WORDS, next * WORDS + WORDS)
        lengths[hole] = n
        values[hole] = values[next]
        hole = next
      }
      next = (next + 1) & mask
    }
    lengths[hole] = 0
    values[hole] = undefined
    words.fill(0, hole * WORDS, hole * WORDS + WORDS)
  }

  return {
    get(text) {
      const n = readHex(text, key)
      if (n === 0) return null
      if (size === 0) return undefined
      const slot = find(n)
      return lengths[slot] === 0 ? undefined : values[slot]
    },
    set(text, value) {
      const n = readHex(text, key)
      if (n === 0) return false
      let slot = capacity === 0 ? -1 : find(n)
      if (slot !== -1 && lengths[slot] !== 0) {
        values[slot] = value
        return true
      }
      if ((size + 1) * LOAD_DIVISOR > capacity) {
        grow()
        slot = find(n)
      }
      place(slot, n, value)
      size++
      return true
    },
    delete(text) {
      const n = readHex(text, key)
      if (n === 0 || size === 0) return false
      const slot = find(n)
      if (lengths[slot] === 0) return false
      free(slot)
      size--
      return true
    },
    clear() {
      words.fill(0)
      lengths.fill(0)
      values.fill(undefined)
      size = 0
    },
    get size() {
      return size
    },
    get bytes() {
      return capacity * HASH_SLOT_BYTES
    },
  }
}
