/**
 * The manifest format, shared by the build and the mirror command. Every file of the served tree
 * is one line `path\tsha256\tsize\n`; lines are spread over 256 shards by the first byte of the
 * SHA-256 of the path and sorted within a shard (JS string order), so a shard's text, and hence its
 * hash, depends only on its entries. Two releases are compared shard by shard (equal hashes: the
 * shard is unchanged) with O(shard) memory even at millions of files.
 */
import { isAscii } from 'node:buffer'
import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import type { DiffCounts, ManifestEntry } from './formats.ts'

/** Number of manifest shards. */
export const SHARD_COUNT = 256

/** Release-relative folder of the mirror documents (served as /mirror). */
export const MIRROR_DIR = 'public/mirror'

/**
 * The two-hex-digit shard of a release-relative file name: the first byte of the SHA-256 of its
 * UTF-8 bytes (shardIndexOf), by name.
 */
export function shardOf(name: string): string {
  return SHARD_NAMES[shardIndexOf(name)]!
}

/**
 * The shard of a name as a number (0–255): the digest's first byte, read from the digest as a
 * 'binary' (latin1) string, one character a byte, rather than hex-encoded and parsed. One-shot
 * `crypto.hash`: a `createHash` object per name cost 2.5 times as much. The manifest recorder takes
 * the shard of every name a build writes (5.1 M at the large catalog); per million names here,
 * 'binary' took 0.23–0.26 s, hex 0.32–0.47 s, and a Buffer digest 0.78–0.83 s (a Buffer allocated
 * a name). The manifest recorder's thread (writer.ts, RECORDER_THREAD) applies the same rule to the
 * name's UTF-8 bytes, in plain JavaScript of its own: a change here must be made there too
 * (test/manifest-recorder.test.ts compares its shards with shardOf).
 */
export function shardIndexOf(name: string): number {
  return hash('sha256', name, 'binary').charCodeAt(0)
}

/**
 * The gzip settings of a manifest shard file. Level 1: the shards are mostly hex digests, which
 * deflate codes as well at level 1 as at the default 6 (2% more bytes on 87 MB of the large
 * catalog's shards: 37.4 MB against 36.6) in 0.69 of the time (0.99 s against 1.44). A 1% rebuild
 * changes all 256 shards: 3.6 s of CPU fewer in a seal bound by the CPU of its parts
 * (bench/results/BUILD-PROFILE.md, Session 35). Each shard is gzipped as members, one per run of
 * lines, so that a rebuild compresses only the runs its change reached (shard-gzip.ts). The shard's
 * identity is its text's SHA-256 (ShardRef), not its gzip bytes.
 */
export const SHARD_GZIP = { level: 1 }

/** The shard names by number, 00 … ff. */
const SHARD_NAMES: readonly string[] = Array.from({ length: SHARD_COUNT }, (_, i) => i.toString(16).padStart(2, '0'))

/** All shard names, 00 … ff. */
export function listShards(): string[] {
  return [...SHARD_NAMES]
}

/** SHA-256 (hex) of bytes or text. */
export function hashBytes(bytes: Buffer | string): string {
  return hash('sha256', bytes, 'hex')
}

/** The manifest line of an entry. */
export function formatEntry(e: ManifestEntry): string {
  return `${e.path}\t${e.sha256}\t${e.size}\n`
}

/** Parses one manifest line (without its newline); throws on a malformed line. */
export function parseEntry(line: string): ManifestEntry {
  const [p, sha256, size, extra] = line.split('\t')
  if (!p || !sha256 || !/^[0-9a-f]{64}$/.test(sha256) || !size || !/^\d+$/.test(size) || extra !== undefined || !isSafeName(p)) {
    throw new Error(`malformed manifest line: ${JSON.stringify(line.slice(0, 200))}`)
  }
  return { path: p, sha256, size: Number(size) }
}

/**
 * Security: names come from a remote origin in the mirror; only plain relative names under
 * `public/` are accepted, so no entry can write outside the release folder.
 */
export function isSafeName(name: string): boolean {
  if (!name.startsWith('public/') || name.startsWith(`${MIRROR_DIR}/`)) return false
  // eslint-disable-next-line no-control-regex
  return name.split('/').every((s) => s !== '' && s !== '.' && s !== '..' && s.length <= 255 && !/[\\\x00-\x1f\x7f]/.test(s))
}

/** Sorted text of a shard from its lines (each ending in \n). */
export function joinShard(lines: string[]): string {
  return lines.sort().join('')
}

/**
 * A shard's sorted text as bytes, and its count of lines, from the bytes of its lines in any order
 * (each ending in \n; a last piece without one is not a line): the bytes of joinShard's text. A
 * shard of ASCII (every name the build writes) is split into one string a line, copied out of the
 * bytes, rather than matched in the decoded text: those lines were views into the 2.7 MB text,
 * and sorting views took twice as long as sorting copies (the seal sorts 256 shards, 5.1 M lines at
 * the large catalog, on the thread the snapshot's names wait for: bench/results/BUILD-PROFILE.md,
 * Session 50). Other text goes through joinShard as decoded.
 */
export function sortShardBytes(raw: Buffer): { bytes: Buffer; lines: number } {
  if (!isAscii(raw)) {
    const lines = raw.toString('utf8').match(/[^\n]*\n/g) ?? []
    return { bytes: Buffer.from(joinShard(lines)), lines: lines.length }
  }
  const lines: string[] = []
  for (let at = 0; ; ) {
    const nl = raw.indexOf(0x0a, at)
    if (nl < 0) break
    lines.push(raw.toString('latin1', at, nl + 1))
    at = nl + 1
  }
  return { bytes: Buffer.from(joinShard(lines), 'latin1'), lines: lines.length }
}

/** The lines of a shard's text, without their newlines. */
export function shardLines(text: string): string[] {
  if (text === '') return []
  return text.replace(/\n$/, '').split('\n')
}

/**
 * Release-relative folder of the plain copies of a release's manifest shards, `<sha256>.tsv` (not
 * served): the next build compares its shards with them instead of unzipping the published ones.
 */
export const SHARD_TEXT_DIR = 'manifest-text'

/**
 * The text (as bytes) of the shard whose text has SHA-256 `sha256`: read from its plain copy
 * `textFile` when that still holds those bytes (a missing, cut or changed copy is not trusted), else
 * unzipped from its gzip file `gzFile`. Unzipping the previous release's and a recycled tree's 256
 * shards took 7 s of the seal's thread at the large catalog; reading and hashing their 700 MB of
 * text takes a fraction of it (bench/results/BUILD-PROFILE.md, Session 32).
 */
export function readShardBytes(textFile: string, sha256: string, gzFile: string): Buffer {
  let plain: Buffer | null = null
  try {
    plain = readFileSync(textFile)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  if (plain !== null && hashBytes(plain) === sha256) return plain
  return gunzipSync(readFileSync(gzFile))
}

/** Entries of a shard's text. */
export function parseShard(text: string): ManifestEntry[] {
  return shardLines(text).map(parseEntry)
}

/** Entries of a gzip shard (or change) file's bytes. */
export function readGzipText(bytes: Buffer): string {
  return gunzipSync(bytes).toString('utf8')
}

/** Release-relative file of a shard. */
export function shardFile(sha256: string): string {
  return `${MIRROR_DIR}/manifest/shards/${sha256}.tsv.gz`
}

/** Release-relative file of a manifest index. */
export function indexFile(id: string): string {
  return `${MIRROR_DIR}/manifest/${id}.json`
}

/** Release-relative file of the change file of a serial. */
export function changeFile(serial: number): string {
  return `${MIRROR_DIR}/changes/${serial}.tsv.gz`
}

/** URL path of a release-relative file under `public/mirror` (e.g. `/mirror/pointer.json`). */
export function mirrorUrl(name: string): string {
  return name.slice('public'.length)
}

/**
 * URL path a manifest file is served at: `public/api/v1/<p>.json` is the API path `/api/v1/<p>`
 * (the static file of that URL), anything else under public/ is served as it is named.
 */
export function fileUrl(name: string): string {
  let rest = name.slice('public/'.length)
  if (rest.startsWith('api/v1/') && rest.endsWith('.json')) rest = rest.slice(0, -'.json'.length)
  return '/' + rest.split('/').map(encodeURIComponent).join('/')
}

/** A change between two manifests: added/changed carry the new entry, removed only the name. */
export type Change = { kind: 'A' | 'C'; entry: ManifestEntry } | { kind: 'R'; path: string }

/** The change-file line of a change. */
export function formatChange(c: Change): string {
  return c.kind === 'R' ? `R\t${c.path}\n` : `${c.kind}\t${formatEntry(c.entry)}`
}

/** Parses a change file's text. */
export function parseChanges(text: string): Change[] {
  if (text === '') return []
  return text.replace(/\n$/, '').split('\n').map((line) => {
    const kind = line[0]
    const rest = line.slice(2)
    if (line[1] === '\t' && kind === 'R' && isSafeName(rest)) return { kind, path: rest }
    if (line[1] === '\t' && (kind === 'A' || kind === 'C')) return { kind, entry: parseEntry(rest) }
    throw new Error(`malformed change line: ${JSON.stringify(line.slice(0, 200))}`)
  })
}

/**
 * Compares two sorted entry lists of one shard; calls `emit` per change (with the entry it replaces
 * or removes, for a change or a removal) and returns the counts.
 */
export function diffShard(before: readonly ManifestEntry[], after: readonly ManifestEntry[], emit: (c: Change, was?: ManifestEntry) => void): DiffCounts {
  const same = (a: ManifestEntry, b: ManifestEntry): boolean => a.path === b.path && a.sha256 === b.sha256 && a.size === b.size
  const side = (list: readonly ManifestEntry[]): ShardSide => ({ n: list.length, path: (k) => list[k]!.path, entry: (k) => list[k]! })
  return mergeShard(side(before), side(after), (i, j) => same(before[i]!, after[j]!), emit)
}

/**
 * diffShard over the sorted lines of two shards (shardLines): an equal line is an unchanged entry
 * and is not parsed, so only the lines of changes are (parseEntry, which checks them). Parsing
 * every entry of a release's shards cost about 2.5 µs a line, 13 s for the 5.1 M names of the large
 * catalog, once for the new shards, once for the previous release's and once for a recycled tree's
 * (bench/results/BUILD-PROFILE.md). Lines sort as their names do: the tab after a name sorts
 * before any character a name may hold.
 */
export function diffShardLines(before: readonly string[], after: readonly string[], emit: (c: Change, was?: ManifestEntry) => void): DiffCounts {
  return mergeShard(lineSide(before.length, (k) => before[k]!), lineSide(after.length, (k) => after[k]!), (i, j) => before[i] === after[j], emit)
}

/**
 * diffShardLines over two shards' texts as bytes (UTF-8, each line ending in a newline): equal lines
 * are compared as bytes and never decoded, so only the lines of changes become strings (and are
 * compared in JavaScript's order, the shards' own). Decoding the previous release's and a recycled
 * tree's 256 shards into strings took 10 s of the seal's thread at the large catalog, and splitting
 * them into lines 2 s more (bench/results/BUILD-PROFILE.md, Session 32).
 */
export function diffShardBytes(before: Uint8Array, after: Uint8Array, emit: (c: Change, was?: ManifestEntry) => void): DiffCounts {
  const b = Buffer.from(before.buffer, before.byteOffset, before.byteLength)
  const a = Buffer.from(after.buffer, after.byteOffset, after.byteLength)
  // Every line added or removed (a first release): decoded whole, not a line at a time.
  if (b.length === 0 || a.length === 0) return diffShardLines(shardLines(b.toString('utf8')), shardLines(a.toString('utf8')), emit)
  const bs = lineStarts(b)
  const as = lineStarts(a)
  const line = (buf: Buffer, starts: number[], k: number): string => buf.toString('utf8', starts[k]!, starts[k + 1]! - 1)
  return mergeShard(lineSide(bs.length - 1, (k) => line(b, bs, k)), lineSide(as.length - 1, (k) => line(a, as, k)), (i, j) => {
    const bi = bs[i]!
    const ai = as[j]!
    // The lengths without the newlines (a last line may lack one).
    const n = bs[i + 1]! - 1 - bi
    return as[j + 1]! - 1 - ai === n && b.compare(a, ai, ai + n, bi, bi + n) === 0
  }, emit)
}

/**
 * Where each line of a shard's bytes starts, then where a line after the last would (one past its
 * newline, or the length plus one for a last line without one): line k is [starts[k], starts[k + 1] - 1).
 */
function lineStarts(bytes: Buffer): number[] {
  const starts = [0]
  for (let at = 0; at < bytes.length; ) {
    const nl = bytes.indexOf(10, at)
    at = nl < 0 ? bytes.length + 1 : nl + 1
    starts.push(at)
  }
  return starts
}

/** One side of mergeShard: its length, and the name and entry of its k-th item (asked for items of changes only). */
interface ShardSide {
  n: number
  path(k: number): string
  entry(k: number): ManifestEntry
}

/** A side of mergeShard over lines (their text by index), each parsed (parseEntry, which checks it) only when asked. */
function lineSide(n: number, line: (k: number) => string): ShardSide {
  return { n, path: (k) => pathOfLine(line(k)), entry: (k) => parseEntry(line(k)) }
}

/**
 * The merge of two sorted lists of one shard's entries (or their lines): `same` items are unchanged;
 * otherwise the smaller name is added (only after) or removed (only before), and an equal name
 * changed. A side's names and entries are asked for the items of changes only.
 */
function mergeShard(before: ShardSide, after: ShardSide, same: (i: number, j: number) => boolean, emit: (c: Change, was?: ManifestEntry) => void): DiffCounts {
  const counts: DiffCounts = { added: 0, changed: 0, removed: 0, unchanged: 0 }
  let i = 0
  let j = 0
  while (i < before.n || j < after.n) {
    if (i < before.n && j < after.n && same(i, j)) {
      counts.unchanged++
      i++
      j++
      continue
    }
    const pa = i < before.n ? before.path(i) : undefined
    const pb = j < after.n ? after.path(j) : undefined
    if (pb !== undefined && (pa === undefined || pb < pa)) {
      emit({ kind: 'A', entry: after.entry(j) })
      counts.added++
      j++
    } else if (pa !== undefined && (pb === undefined || pa < pb)) {
      const was = before.entry(i)
      emit({ kind: 'R', path: was.path }, was)
      counts.removed++
      i++
    } else {
      emit({ kind: 'C', entry: after.entry(j) }, before.entry(i))
      counts.changed++
      i++
      j++
    }
  }
  return counts
}

/** The name of a manifest line (before its first tab). */
function pathOfLine(line: string): string {
  const tab = line.indexOf('\t')
  return tab < 0 ? line : line.slice(0, tab)
}

/** Adds counts into a total. */
export function addCounts(total: DiffCounts, more: DiffCounts): void {
  total.added += more.added
  total.changed += more.changed
  total.removed += more.removed
  total.unchanged += more.unchanged
}
