/**
 * The catalog's filter of known file hashes (table `hash_filter`): a Bloom filter over the lowercase
 * hex SHA-1 and SHA-256 of every file in the catalog. The shim asks it before SQLite whether a hash
 * a client sent can be a file of the catalog. "No" is certain, so a hash it rules out is answered as
 * unknown without a query; "maybe" is wrong for about 0.05% of unknown hashes (16 bits a hash, 11
 * probes), which then take the query they take without a filter and find nothing.
 *
 * Mod managers send the hashes of every file in a mods folder, and the files from elsewhere (another
 * platform, a local build, a config jar) are unknown here. Without the filter one such hash in a
 * 100-hash lookup whose known hashes are all kept in memory costs a SQLite query, about 100–200 µs of
 * CPU, and a round trip through SQLite's thread (bench/results/PROFILE.md, Session 17).
 *
 * File hashes are already uniform, so the probes are taken from the hash itself (double hashing
 * over its first two 32-bit words, Kirsch and Mitzenmacher): no hashing per probe.
 */

/**
 * Bits of the filter for each hash it holds. With 10 (about 0.8% false positives), a lookup of 100
 * hashes with 10 of no file took a query in about 8% of requests, and each such request waited for
 * SQLite's thread and then its turn on the event loop again: at 32 in flight that made the p99 of
 * those lookups half again that of lookups of known hashes alone (bench/results/PROFILE.md, Session
 * 21). 16 bits a hash, about 0.05%, make it 0.5% of requests, for 4.8 MB at the large catalog's 2.4
 * million hashes instead of 3 MB.
 */
export const HASH_FILTER_BITS_PER_HASH = 16

/** Bits set (and read) for each hash: the optimum for 16 bits a hash (16 ln 2), about 0.05% false positives. */
export const HASH_FILTER_PROBES = 11

/** The filter as stored: its bit array (bit i is bit `i % 8` of byte `i >> 3`) and its probes. */
export interface HashFilterData {
  bits: Uint8Array
  probes: number
}

/** Reads 8 lowercase hex characters from `at` as an unsigned 32-bit number. */
function hexWord(hash: string, at: number): number {
  let value = 0
  for (let i = at; i < at + 8; i++) {
    const c = hash.charCodeAt(i)
    value = value * 16 + (c <= 57 ? c - 48 : c - 87)
  }
  return value
}

/**
 * The probes' step of a lowercase hex hash in a filter of `size` bits: its second 8 hex digits, made
 * odd so the probes of a power-of-two size never repeat, modulo the size.
 */
function probeStep(hash: string, size: number): number {
  return ((hexWord(hash, 8) | 1) >>> 0) % size
}

/**
 * Calls `visit` with each bit position of a lowercase hex hash (40 or 64 characters) in a filter of
 * `size` bits: (a + k·b) mod size for k from 0 to probes − 1 (a, b: probeStep's words). Each is the
 * previous plus b mod size, reduced by one subtraction, so no probe takes a floating-point modulo
 * (a + k·b passes 2^32, and V8 then divides doubles). The build's `add` walks through it;
 * mayContainHash, asked for every hash of a bulk request that misses the static cache, walks the same
 * way written out.
 */
function probe(hash: string, size: number, probes: number, visit: (bit: number) => boolean): boolean {
  const step = probeStep(hash, size)
  let bit = hexWord(hash, 0) % size
  for (let i = 0; i < probes; i++) {
    if (!visit(bit)) return false
    bit += step
    if (bit >= size) bit -= size
  }
  return true
}

/** A filter for `count` hashes, filled by `add`; `data` is what the catalog stores. */
export function createHashFilter(count: number): { add(hash: string): void; data: HashFilterData } {
  // Whole bytes, and never empty: an empty catalog's filter rules out every hash.
  const bytes = Math.max(8, Math.ceil((count * HASH_FILTER_BITS_PER_HASH) / 8))
  const bits = new Uint8Array(bytes)
  const size = bytes * 8
  return {
    add(hash) {
      probe(hash, size, HASH_FILTER_PROBES, (bit) => {
        bits[bit >>> 3]! |= 1 << (bit & 7)
        return true
      })
    },
    data: { bits, probes: HASH_FILTER_PROBES },
  }
}

/**
 * Whether a lowercase hex hash (40 or 64 characters, as the query schema leaves it) may be in the
 * filter: false only for a hash that is not.
 */
export function mayContainHash(filter: HashFilterData, hash: string): boolean {
  // probe()'s walk written out: no closure a call.
  const { bits, probes } = filter
  const size = bits.length * 8
  const step = probeStep(hash, size)
  let bit = hexWord(hash, 0) % size
  for (let i = 0; i < probes; i++) {
    if ((bits[bit >>> 3]! & (1 << (bit & 7))) === 0) return false
    bit += step
    if (bit >= size) bit -= size
  }
  return true
}

/**
 * Checks a filter read back from a catalog: a broken one would answer "unknown" for files that are
 * known, so it is refused rather than used.
 */
export function checkHashFilter(row: { bits: unknown; probes: unknown }, file: string): HashFilterData {
  const { bits, probes } = row
  if (!(bits instanceof Uint8Array) || bits.length < 8 || typeof probes !== 'number' || !Number.isInteger(probes) || probes < 1 || probes > 32) {
    throw new Error(`${file}: its hash_filter row is malformed (a BLOB of at least 8 bytes and 1 to 32 probes expected)`)
  }
  return { bits, probes }
}
