/**
 * The catalog's index of known file hashes (table `hash_index`): for every file, its lowercase hex
 * SHA-256 and SHA-1, each with the rowid of the version that holds it, ordered by the hash's first
 * 32 bits. The shim keeps it in memory (about 14 MB at the large catalog's 2.2 million hashes, six
 * bytes a hash) and asks it first for every hash a client sends:
 * - a hash whose 32-bit prefix it does not hold is no file of the catalog: answered as unknown
 *   without a query. It replaces the Bloom filter `hash_filter` of catalogs built before it, and lets
 *   as few unknown hashes through (about 0.05% at the large catalog: n / 2^32);
 * - a known hash's version is then read by its rowid, with no descent of the files' hash indexes.
 *   At the large catalog, with the shim's cache off, a 100-hash lookup made about 3.4 page reads a
 *   hash through files_sha256 or files_sha1 and versions; by rowid, about one
 *   (bench/results/PROFILE.md, Session 24);
 * - update matching finds each candidate's project in the catalog's version targets
 *   (build/version-targets.ts) and reads only the versions of the hashes that have an update
 *   (Session 26).
 *
 * 32 bits name a hash, not prove it: two of the catalog's hashes share a prefix about n² / 2^33
 * times (about 600 pairs at the large catalog), and anyone can send a made-up hash with a real
 * file's prefix. So the index gives candidates, and a candidate counts only once its version's JSON
 * is seen to hold the hash as one of its files' `"sha256":"<hash>"` or `"sha1":"<hash>"` (hashHolder, holdsHash:
 * a quote inside a JSON string is escaped, so that text is only ever a file's hash). A file's hash
 * can be in several versions of its project; the candidates of a prefix are ordered by their
 * version's rank (0 = newest), so the first that holds the hash is the newest version containing
 * the file, the rule every hash lookup follows (DESIGN "Hashes").
 *
 * Stored as one row of three little-endian BLOBs:
 * - `buckets`: 65,537 32-bit offsets; the entries whose hash starts with the 16 bits b are those
 *   from buckets[b] to buckets[b + 1];
 * - `keys`: each entry's next 16 bits, as 16-bit numbers, ascending within a bucket;
 * - `rowids`: each entry's version rowid, as 32-bit numbers.
 */

import { fromLittleEndian, littleEndian } from './little-endian.ts'

/** Entries start where their first 16 bits say: 2^16 buckets, and one more offset for the end. */
const BUCKETS = 65_536

/** The index as the shim holds it. */
export interface HashIndex {
  buckets: Uint32Array
  keys: Uint16Array
  rowids: Uint32Array
}

/** `count` lowercase hex digits of `hash` from `at`, as a number (at most 8 digits: an unsigned 32-bit number). */
function hexDigits(hash: string, at: number, count: number): number {
  let value = 0
  for (let i = at; i < at + count; i++) {
    const c = hash.charCodeAt(i)
    value = value * 16 + (c <= 57 ? c - 48 : c - 87)
  }
  return value
}

/**
 * The first entry of each hash's prefix, in order, or -1 when the index holds none (the hash is no
 * file of the catalog). The buckets of all the hashes are read first,
 * in a loop of loads that do not wait on one another, so the processor fetches them from memory
 * together; the index is 14 MB at the large catalog, and each read of it is mostly a cache miss.
 */
function firstCandidates(index: HashIndex, hashes: readonly string[]): Int32Array {
  const { buckets, keys } = index
  const n = hashes.length
  const ranges = new Uint32Array(2 * n)
  const wanted = new Uint32Array(n)
  for (let i = 0; i < n; i++) {
    const hash = hashes[i]!
    const bucket = hexDigits(hash, 0, 4)
    ranges[2 * i] = buckets[bucket]!
    ranges[2 * i + 1] = buckets[bucket + 1]!
    wanted[i] = hexDigits(hash, 4, 4)
  }
  const out = new Int32Array(n)
  for (let i = 0; i < n; i++) {
    const key = wanted[i]!
    let lo = ranges[2 * i]!
    const end = ranges[2 * i + 1]!
    let hi = end
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (keys[mid]! < key) lo = mid + 1
      else hi = mid
    }
    out[i] = lo < end && keys[lo] === key ? lo : -1
  }
  return out
}

/** The version rowids of each hash's candidates, newest first, in order; none for a hash that is no file of the catalog. */
export function candidatesOfHashes(index: HashIndex, hashes: readonly string[]): number[][] {
  const { keys, rowids } = index
  const firsts = firstCandidates(index, hashes)
  const out = new Array<number[]>(hashes.length)
  for (let i = 0; i < hashes.length; i++) {
    const first = firsts[i]!
    const found: number[] = []
    if (first >= 0) {
      const end = index.buckets[hexDigits(hashes[i]!, 0, 4) + 1]!
      for (let at = first; at < end && keys[at] === keys[first]; at++) found.push(rowids[at]!)
    }
    out[i] = found
  }
  return out
}

/** The hashes whose prefix the index holds, in order: the others are no files of the catalog. */
export function possiblyKnownHashes(index: HashIndex, hashes: readonly string[]): string[] {
  const firsts = firstCandidates(index, hashes)
  return hashes.filter((_, i) => firsts[i]! >= 0)
}

/** The version rowids of `hash`'s candidates, newest first (candidatesOfHashes of one hash). */
export function candidateRowids(index: HashIndex, hash: string): number[] {
  return candidatesOfHashes(index, [hash])[0]!
}

/** Whether the index holds `hash`'s prefix: false only for a hash that is no file of the catalog. */
export function mayBeKnown(index: HashIndex, hash: string): boolean {
  return firstCandidates(index, [hash])[0]! >= 0
}

/**
 * The text a version's JSON holds for each of its files' hashes, `"sha256":"<hash>"` or
 * `"sha1":"<hash>"` as the renderer writes it (no space after the colon), by the hash's length (40
 * or 64 lowercase hex characters, as the query schema leaves it).
 */
export function hashHolder(hash: string): string {
  return `"${hash.length === 40 ? 'sha1' : 'sha256'}":"${hash}"`
}

const SHA1_KEY = Buffer.from('"sha1"')
const SHA256_KEY = Buffer.from('"sha256"')

/**
 * Whether `json`, from byte `from` on, holds `hash`'s holder text (hashHolder): the same answer as
 * `json.includes(hashHolder(hash), from, 'latin1')`, found faster. Node's search first looks for the
 * needle's first byte with memchr, and `"` comes every few bytes of a version's JSON; this looks for
 * `:"<hash>"` instead (a colon comes about a third as often) and then checks the key before it. A
 * raw `:"` is never inside a JSON string (its quote would be escaped), so each find is a member's
 * value. About 280 against 530 ns a check over the large catalog's versions (1 KB of JSON each;
 * bench/results/PROFILE.md, Session 26), 100 of them in a cache-off bulk lookup.
 */
export function holdsHash(json: Buffer, hash: string, from: number): boolean {
  const key = hash.length === 40 ? SHA1_KEY : SHA256_KEY
  const value = `:"${hash}"`
  for (let at = json.indexOf(value, from, 'latin1'); at >= 0; at = json.indexOf(value, at + 1, 'latin1')) {
    const start = at - key.length
    if (start < from) continue
    let i = 0
    while (i < key.length && json[start + i] === key[i]) i++
    if (i === key.length) return true
  }
  return false
}

/** An index for `count` hashes, filled by `add` in any order; `finish` sorts it. */
export function createHashIndex(count: number): { add(hash: string, versionRowid: number, rank: number): void; finish(): HashIndex } {
  const prefixes = new Uint32Array(count)
  const ranks = new Float64Array(count)
  const rowids = new Uint32Array(count)
  let n = 0
  return {
    add(hash, versionRowid, rank) {
      if (n === count) throw new Error(`the hash index was made for ${count} hashes, and more were added`)
      if (!Number.isInteger(versionRowid) || versionRowid < 0 || versionRowid > 0xffff_ffff) throw new Error(`version rowid ${versionRowid} does not fit the hash index (32 bits)`)
      prefixes[n] = hexDigits(hash, 0, 8)
      ranks[n] = rank
      rowids[n] = versionRowid
      n++
    },
    finish() {
      const order = new Uint32Array(n)
      for (let i = 0; i < n; i++) order[i] = i
      // By prefix, then the version's rank (newest first), then rowid, so the index is deterministic.
      order.sort((a, b) => prefixes[a]! - prefixes[b]! || ranks[a]! - ranks[b]! || rowids[a]! - rowids[b]!)
      const buckets = new Uint32Array(BUCKETS + 1)
      const keys = new Uint16Array(n)
      const sorted = new Uint32Array(n)
      let m = 0
      for (let i = 0; i < n; i++) {
        const at = order[i]!
        const prefix = prefixes[at]!
        // A version holding two hashes of one prefix (or one hash twice) is one candidate for both.
        if (m > 0 && prefixes[order[i - 1]!] === prefix && sorted[m - 1] === rowids[at]) continue
        buckets[(prefix >>> 16) + 1]!++
        keys[m] = prefix & 0xffff
        sorted[m] = rowids[at]!
        m++
      }
      for (let b = 1; b <= BUCKETS; b++) buckets[b]! += buckets[b - 1]!
      return { buckets, keys: keys.slice(0, m), rowids: sorted.slice(0, m) }
    },
  }
}

/** The row the catalog stores (`hash_index`): the three arrays as little-endian BLOBs, and the number of entries. */
export function hashIndexRow(index: HashIndex): { buckets: Buffer; keys: Buffer; rowids: Buffer; entries: number } {
  return { buckets: littleEndian(index.buckets), keys: littleEndian(index.keys), rowids: littleEndian(index.rowids), entries: index.keys.length }
}

/**
 * Reads the index back from the catalog's row, checked: a broken one would answer "unknown" for
 * files that are known, so it is refused rather than used. Every entry is checked (ascending keys
 * within each bucket): a few ms at the large catalog, once per release.
 */
export function readHashIndexRow(row: { buckets: unknown; keys: unknown; rowids: unknown; entries: unknown }, file: string): HashIndex {
  const refuse = (why: string): Error => new Error(`${file}: its hash_index row is malformed (${why})`)
  const { entries } = row
  if (typeof entries !== 'number' || !Number.isInteger(entries) || entries < 0) throw refuse('entries is not a count')
  for (const [name, bytes, size] of [['buckets', row.buckets, (BUCKETS + 1) * 4], ['keys', row.keys, entries * 2], ['rowids', row.rowids, entries * 4]] as const) {
    if (!(bytes instanceof Uint8Array) || bytes.length !== size) throw refuse(`${name} is not ${size} bytes`)
  }
  const index: HashIndex = {
    buckets: fromLittleEndian(row.buckets as Uint8Array, Uint32Array),
    keys: fromLittleEndian(row.keys as Uint8Array, Uint16Array),
    rowids: fromLittleEndian(row.rowids as Uint8Array, Uint32Array),
  }
  const { buckets, keys } = index
  if (buckets[0] !== 0 || buckets[BUCKETS] !== entries) throw refuse('its buckets do not span its entries')
  for (let b = 0; b < BUCKETS; b++) {
    const end = buckets[b + 1]!
    if (end < buckets[b]!) throw refuse(`bucket ${b} ends before it starts`)
    for (let i = buckets[b]! + 1; i < end; i++) if (keys[i]! < keys[i - 1]!) throw refuse(`its keys are not in order at entry ${i}`)
  }
  return index
}
