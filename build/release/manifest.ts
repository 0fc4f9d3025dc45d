/**
 * The manifest format, shared by the build and the mirror command. Every file of the served tree
 * is one line `path\tsha256\tsize\n`; lines are spread over 256 shards by the first byte of the
 * SHA-256 of the path and sorted within a shard (JS string order), so a shard's text, and hence its
 * hash, depends only on its entries. Two releases are compared shard by shard (equal hashes: the
 * shard is unchanged) with O(shard) memory even at millions of files.
 */
import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import type { DiffCounts, ManifestEntry } from './formats.ts'

/** Number of manifest shards. */
export const SHARD_COUNT = 256

/** Release-relative folder of the mirror documents (served as /mirror). */
export const MIRROR_DIR = 'public/mirror'

/**
 * The two-hex-digit shard of a release-relative file name. One-shot `crypto.hash`: a `createHash`
 * object per name cost 2.5 times as much, for 5.1 M names a build at the large catalog.
 */
export function shardOf(name: string): string {
  return hash('sha256', name, 'hex').slice(0, 2)
}

/** All shard names, 00 … ff. */
export function listShards(): string[] {
  return Array.from({ length: SHARD_COUNT }, (_, i) => i.toString(16).padStart(2, '0'))
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

/** The lines of a shard's text, without their newlines. */
export function shardLines(text: string): string[] {
  if (text === '') return []
  return text.replace(/\n$/, '').split('\n')
}

/** The lines of a gzip shard file (shardLines of its text). */
export function readShardLines(file: string): string[] {
  return shardLines(readGzipText(readFileSync(file)))
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
  return mergeShard(before, after, same, (e) => e.path, (e) => e, emit)
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
  const pathOf = (line: string): string => {
    const tab = line.indexOf('\t')
    return tab < 0 ? line : line.slice(0, tab)
  }
  return mergeShard(before, after, (a, b) => a === b, pathOf, parseEntry, emit)
}

/**
 * The merge of two sorted lists of one shard's entries (or their lines): `same` items are unchanged;
 * otherwise the smaller name is added (only in `after`) or removed (only in `before`), and an equal
 * name changed. `entryOf` is called for the items of changes only.
 */
function mergeShard<T>(
  before: readonly T[],
  after: readonly T[],
  same: (a: T, b: T) => boolean,
  pathOf: (item: T) => string,
  entryOf: (item: T) => ManifestEntry,
  emit: (c: Change, was?: ManifestEntry) => void,
): DiffCounts {
  const counts: DiffCounts = { added: 0, changed: 0, removed: 0, unchanged: 0 }
  let i = 0
  let j = 0
  while (i < before.length || j < after.length) {
    const a = i < before.length ? before[i]! : undefined
    const b = j < after.length ? after[j]! : undefined
    if (a !== undefined && b !== undefined && same(a, b)) {
      counts.unchanged++
      i++
      j++
      continue
    }
    const pa = a === undefined ? undefined : pathOf(a)
    const pb = b === undefined ? undefined : pathOf(b)
    if (pb !== undefined && (pa === undefined || pb < pa)) {
      emit({ kind: 'A', entry: entryOf(b!) })
      counts.added++
      j++
    } else if (pa !== undefined && (pb === undefined || pa < pb)) {
      const was = entryOf(a!)
      emit({ kind: 'R', path: was.path }, was)
      counts.removed++
      i++
    } else {
      emit({ kind: 'C', entry: entryOf(b!) }, entryOf(a!))
      counts.changed++
      i++
      j++
    }
  }
  return counts
}

/** Adds counts into a total. */
export function addCounts(total: DiffCounts, more: DiffCounts): void {
  total.added += more.added
  total.changed += more.changed
  total.removed += more.removed
  total.unchanged += more.unchanged
}
