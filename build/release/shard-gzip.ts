/**
 * A manifest shard's gzip file as a series of gzip members, each of a run of the shard's sorted
 * lines, so that a rebuild copies the compressed bytes of every run its change left alone from the
 * previous release's shard and compresses only the others. Concatenated gzip members are one gzip
 * stream to gunzip, Node's zlib and Python's gzip module (the change files and the archive are made
 * the same way), and the text inside is the shard's text.
 *
 * Where a run ends depends on the text alone: after each line whose body SHA-256 (its second field)
 * ends in 00, 01, 02 or 03, one line in 64 on average. A change moves only the ends of the runs it
 * touches, and the same text always gives the same members, so a shard compressed here, copied in
 * part from the previous release or rebuilt by a mirror from the change feed (build/mirror/sync.ts)
 * is the same bytes. Measured on the large catalog's shards (2.7 MB of text each): runs of 64 lines
 * make the gzip files 0.8% larger than one stream (1.18 MB against 1.17 a shard) and compress no
 * slower; a 1% change of the large catalog changes all 256 shards but about one run in six, where
 * gzipping every shard again cost 7.4 s of CPU per release (bench/results/BUILD-PROFILE.md,
 * Session 38).
 *
 * The member index (`manifest-text/<sha256>.members`, beside the shard's plain copy, not served): a
 * header line `format \t text SHA-256 \t gzip size \t members`, then one line per member `length \t
 * SHA-256 of its bytes`, in order. It is used only when its header names the shard and gzip file the
 * previous release's manifest index gives and its runs are those of the shard's text; a member is
 * copied only when its run's text is the same bytes and its own bytes still have their SHA-256 (one
 * the disk changed since is compressed again).
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { hashBytes, SHARD_GZIP, SHARD_TEXT_DIR } from './manifest.ts'
import { linkOrCopy } from './tree.ts'

/** First field of a member index: the rule that ends a run and the gzip settings. Another is not reused. */
export const SHARD_MEMBERS_FORMAT = `manifest-shard-members/1 runs=sha256-ends-00..03 gzip-level=${SHARD_GZIP.level}`

/** Release-relative member index of the shard whose text has SHA-256 `sha256`. */
export function shardMembersFile(sha256: string): string {
  return `${SHARD_TEXT_DIR}/${sha256}.members`
}

const TAB = 0x09
const NEWLINE = 0x0a
const ZERO = 0x30
const THREE = 0x33

/**
 * Where each run of a shard's text ends (exclusive byte offsets, the last one the text's length):
 * after every line whose body SHA-256 ends in 00–03, and at the end. None for an empty text.
 */
export function shardRuns(text: Uint8Array): number[] {
  const b = Buffer.from(text.buffer, text.byteOffset, text.byteLength)
  const ends: number[] = []
  for (let at = 0; at < b.length; ) {
    const nl = b.indexOf(NEWLINE, at)
    const end = nl < 0 ? b.length : nl + 1
    // The SHA-256 ends at the tab before the size, the line's last.
    const tab = b.lastIndexOf(TAB, end - 1)
    if (tab - 2 >= at && b[tab - 2] === ZERO && b[tab - 1]! >= ZERO && b[tab - 1]! <= THREE) ends.push(end)
    at = end
  }
  if (b.length > 0 && ends.at(-1) !== b.length) ends.push(b.length)
  return ends
}

/** The gzip file of a shard's text, every member compressed here (what gzipShardReusing gives too). */
export function gzipShard(text: Uint8Array): Buffer {
  return gzipShardReusing(Buffer.from(text.buffer, text.byteOffset, text.byteLength), null).gz
}

/** The previous release's shard the runs may be copied from: its text, its gzip file and member index, and what its manifest index gives for them. */
export interface PreviousShard {
  text: Buffer
  /** SHA-256 of `text`, and the size of the gzip file, as the previous release's manifest index gives them. */
  sha256: string
  size: number
  gzFile: string
  membersFile: string
}

/** A shard's gzip file and member index, and how many of its members were copied. */
export interface ShardGzip {
  gz: Buffer
  /** The member index to keep beside the release (shardMembersFile). */
  index: string
  members: number
  reused: number
  /** Members of the previous shard whose bytes no longer had their SHA-256 (compressed again). */
  damaged: number
}

/** A run of the previous shard: where its text and its member are, and the member's SHA-256. */
interface OldRun {
  start: number
  end: number
  offset: number
  length: number
  sha256: string
}

/**
 * The gzip file of `text` (a shard's sorted text, of SHA-256 `sha256` when the caller has it),
 * copying from `previous` the member of every run whose text it holds the same; the bytes are those
 * gzipShard gives either way.
 */
export function gzipShardReusing(text: Buffer, previous: PreviousShard | null, sha256 = hashBytes(text)): ShardGzip {
  const ends = shardRuns(text)
  // An empty shard is one member of nothing: a gzip file of no member is no gzip file.
  if (ends.length === 0) {
    const gz = gzipSync(text, SHARD_GZIP)
    return { gz, index: `${SHARD_MEMBERS_FORMAT}\t${sha256}\t${gz.length}\t1\n${gz.length}\t${hashBytes(gz)}\n`, members: 1, reused: 0, damaged: 0 }
  }
  const old = previous ? readPreviousRuns(previous) : null
  const members: Buffer[] = []
  const lines: string[] = []
  let size = 0
  let reused = 0
  let damaged = 0
  let start = 0
  for (const end of ends) {
    const run = old?.runs.get(firstLine(text, start, end))
    let member: Buffer | null = null
    let memberSha = ''
    if (run && run.end - run.start === end - start && text.compare(previous!.text, run.start, run.end, start, end) === 0) {
      const copied = old!.gz.subarray(run.offset, run.offset + run.length)
      // Copied only with the bytes its index recorded.
      if (hashBytes(copied) === run.sha256) {
        member = copied
        memberSha = run.sha256
        reused++
      } else damaged++
    }
    if (member === null) {
      member = gzipSync(text.subarray(start, end), SHARD_GZIP)
      memberSha = hashBytes(member)
    }
    members.push(member)
    lines.push(`${member.length}\t${memberSha}\n`)
    size += member.length
    start = end
  }
  const index = `${SHARD_MEMBERS_FORMAT}\t${sha256}\t${size}\t${members.length}\n${lines.join('')}`
  return { gz: Buffer.concat(members, size), index, members: members.length, reused, damaged }
}

/** The text of a run's first line: a run's key (a name is in one line of a shard). */
function firstLine(text: Buffer, start: number, end: number): string {
  const nl = text.indexOf(NEWLINE, start)
  return text.toString('latin1', start, nl < 0 || nl >= end ? end : nl)
}

/** The previous shard's runs by their first line, and its gzip file's bytes; null when its member index cannot be trusted to describe them. */
function readPreviousRuns(previous: PreviousShard): { runs: Map<string, OldRun>; gz: Buffer } | null {
  const runs = readMemberIndex(previous)
  return runs === null ? null : { runs, gz: readFileSync(previous.gzFile) }
}

/**
 * The runs of a shard's member index by their first line; null unless the index is of this format,
 * names the shard's text and gzip size (the gzip file has that size) and lists one member per run of
 * the text, whose lengths add up to it.
 */
function readMemberIndex(previous: PreviousShard): Map<string, OldRun> | null {
  if (!existsSync(previous.membersFile) || !existsSync(previous.gzFile)) return null
  if (statSync(previous.gzFile).size !== previous.size) return null
  const [header, ...lines] = readFileSync(previous.membersFile, 'latin1').split('\n')
  const [format, sha256, size, count] = header!.split('\t')
  if (format !== SHARD_MEMBERS_FORMAT || sha256 !== previous.sha256 || Number(size) !== previous.size) return null
  const ends = shardRuns(previous.text)
  if (Number(count) !== ends.length || lines.length !== ends.length + 1 || lines[ends.length] !== '') return null
  const runs = new Map<string, OldRun>()
  let offset = 0
  let start = 0
  for (const [k, end] of ends.entries()) {
    const [length, memberSha] = lines[k]!.split('\t')
    const n = Number(length)
    if (!Number.isSafeInteger(n) || n <= 0 || !/^[0-9a-f]{64}$/.test(memberSha ?? '')) return null
    runs.set(firstLine(previous.text, start, end), { start, end, offset, length: n, sha256: memberSha! })
    offset += n
    start = end
  }
  return offset === previous.size ? runs : null
}

/**
 * The member index of a shard the seal links whole from the previous release (its text unchanged),
 * written to `target`: the previous release's, linked, when it describes that shard and its gzip
 * file; else made again when the gzip file is the bytes gzipShard gives the text (a damaged or
 * missing index is not carried on); else none (a gzip file of an older build, one stream: the next
 * change of the shard compresses it whole). Returns whether `target` was written.
 */
export function carryShardMembers(previous: PreviousShard, target: string): boolean {
  if (readMemberIndex(previous) !== null) {
    linkOrCopy(previous.membersFile, target)
    return true
  }
  if (!existsSync(previous.gzFile)) return false
  const packed = gzipShardReusing(previous.text, null, previous.sha256)
  if (!packed.gz.equals(readFileSync(previous.gzFile))) return false
  writeFileSync(target, packed.index)
  return true
}
