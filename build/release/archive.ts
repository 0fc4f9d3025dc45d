/**
 * The JSON tree of a release as one tar.gz (POSIX ustar + pax for long names), written in one pass
 * over the body order (body-order.ts): the names of one body are adjacent there, so the body is
 * stored once and its other names as hard-link entries, and the archive is about the size of the
 * distinct bodies. Reproducible: entries in that fixed order, every entry with its body's content
 * mtime (build/render/etag.ts: a tree extracted with `tar -xzf` gets nginx the API's ETags), uid/gid
 * 0, mode 0644 and no user names, and gzip's header without a time — the same data gives the same
 * bytes (the release's time is in release.json). Written by hand (60 lines) because node-tar 7.5's
 * pack stalled on this tree's hard links.
 *
 * The gzip is made of members, one per range of the body order: the entries whose body SHA-256
 * starts with the same hex digits (four at the large catalog, 65,536 ranges; fewer for a smaller
 * tree: rangeDigits), then one member for the end-of-archive blocks. A body's names are all in its
 * range, so a hard link always follows its target in the same member. Concatenated gzip members
 * are one gzip stream to gunzip, `tar -xzf`, Python's tarfile and Node's zlib, and the tar inside
 * is the same bytes as one stream's. Each member depends only on its range's names and bodies, so
 * a rebuild copies the compressed bytes of every range the change left alone from the previous
 * release's archive and compresses only the others: the result is the same bytes as an archive
 * written whole. A 1% change of the large catalog touches about one range in six.
 *
 * The member index (ARCHIVE_MEMBERS, beside the release): a header line `format \t archive SHA-256
 * \t size`, then one line per member `range \t digest of its lines (sha256 \t name) \t offset \t
 * length \t SHA-256 of its bytes`. It is used only when its header names the archive the previous
 * release's pointer names; a member is copied only when its range's digest is the same and its
 * bytes still have their SHA-256 (one the disk changed since is compressed again).
 */
import { createHash } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { gzip as gzipCallback, gzipSync } from 'node:zlib'
import { contentMtime } from '../render/etag.ts'
import { hashBytes } from './manifest.ts'
import { readBodyOrder } from './body-order.ts'
import { openBodyReader, readFully, writeAll, type BodyPackFiles } from './body-pack.ts'
import type { FileHash } from './hash-file.ts'

const gzip = promisify(gzipCallback)

/** Release-relative member index of the release's archive (not served; read by the next build). */
export const ARCHIVE_MEMBERS = 'archive-members.tsv'
/** First field of the index's header line: what a member is. Another scheme (or range width) is not reused. */
const membersFormat = (digits: number): string => `tar.gz-members/2 range-digits=${digits} gzip-level=1`
/** At most this many hex digits of the body SHA-256 name a range (65,536 ranges). */
const MAX_RANGE_DIGITS = 4
/**
 * Bodies a member holds on average, at least: fewer loses too much of what deflate finds between
 * neighbouring entries (a range of one or two bodies made the 10,000-project archive 29% larger).
 */
const MIN_BODIES_PER_MEMBER = 16

/**
 * Hex digits that name a range for a tree of `bodies` distinct bodies: the most, up to four, that
 * leave MIN_BODIES_PER_MEMBER bodies a member on average. Four at 1.4 M bodies (about 22 a member),
 * three at 144,000, one for the sample. It depends on the data alone, so the same data gives the
 * same archive; a change in the count that changes it copies nothing that once.
 */
export function rangeDigits(bodies: number): number {
  let digits = 0
  while (digits < MAX_RANGE_DIGITS && bodies / 16 ** (digits + 1) >= MIN_BODIES_PER_MEMBER) digits++
  return digits
}
/** Level 1: 2–3× faster than 6 on this tree (which is mostly tar headers) for an archive ≈ 25% larger. */
const GZIP = { level: 1 }
/** Members compressed on zlib's threads at once, ahead of the one being written. */
const IN_FLIGHT = 3
/** Output gathered before one writev. */
const WRITE_CHUNK = 1 << 20

/** The previous release's archive, whose unchanged members a rebuild copies. */
export interface PreviousArchive {
  /** The archive file. */
  archive: string
  /** Its member index (ARCHIVE_MEMBERS of its release). */
  members: string
  /** SHA-256 and size its release's pointer gives for it: the index must name the same. */
  expected: FileHash
}

/** What writeArchive wrote: the archive's SHA-256 and size, and how many members it copied. */
export interface WrittenArchive extends FileHash {
  /** Members (ranges) in the archive, the end-of-archive member not counted. */
  members: number
  /** Of those, copied from the previous archive. */
  reused: number
  /** Why the previous archive was not used, when one was given and was not. */
  notReused?: string
  /** Members of the previous archive whose bytes no longer had the SHA-256 its index gives (compressed again). */
  damaged: number
  /** The build log's line on the above (describeReuse). */
  note: string
}

/** A member of the previous archive: the digest of its range's list, where its bytes are, and their SHA-256. */
interface OldMember {
  digest: string
  offset: number
  length: number
  sha256: string
}

/**
 * Writes `target` holding `public/api` of the release, in the order of the list `orderFile`,
 * reading the bodies from `pack` (the build's body pack, body-pack.ts) or, when null, the tree, and
 * copying the members `previous` has for unchanged ranges. Writes the member index beside the
 * release (ARCHIVE_MEMBERS, after the archive). Returns the archive's SHA-256 and size, hashed as
 * its bytes go to the file (no second read), and the count of members copied.
 */
export async function writeArchive(
  releaseDir: string,
  orderFile: string,
  target: string,
  pack: BodyPackFiles | null = null,
  previous: PreviousArchive | null = null,
): Promise<WrittenArchive> {
  const tmp = `${target}.tmp`
  const indexFile = path.join(releaseDir, ARCHIVE_MEMBERS)
  // The range width depends on the count of bodies. A rebuild takes the previous archive's width
  // and counts the bodies as it writes, writing again in the rare case the count gives another
  // width; otherwise one pass counts them first (about 3 s at 5 M names, in the worker).
  const guessed = previous ? previousDigits(previous) : null
  let digits = guessed ?? rangeDigits(await countBodies(orderFile))
  let pass = await writeMembers(releaseDir, orderFile, tmp, digits, pack, previous)
  if (rangeDigits(pass.bodies) !== digits) {
    digits = rangeDigits(pass.bodies)
    pass = await writeMembers(releaseDir, orderFile, tmp, digits, pack, previous)
  }
  renameSync(tmp, target)
  // After the archive: an index is only ever next to the archive it describes (its header names it).
  writeFileSync(`${indexFile}.tmp`, `${membersFormat(digits)}\t${pass.written.sha256}\t${pass.written.size}\n${pass.index}`)
  renameSync(`${indexFile}.tmp`, indexFile)
  return { ...pass.written, note: describeReuse(pass.written) }
}

/** The range width the previous archive's member index names, when it is of this format; else null. */
function previousDigits(previous: PreviousArchive): number | null {
  let header: string
  try {
    const fd = openSync(previous.members, 'r')
    try {
      const head = Buffer.alloc(128)
      header = head.toString('latin1', 0, readSync(fd, head, 0, head.length, 0))
    } finally {
      closeSync(fd)
    }
  } catch {
    return null
  }
  for (let digits = 0; digits <= MAX_RANGE_DIGITS; digits++) if (header.startsWith(`${membersFormat(digits)}\t`)) return digits
  return null
}

/**
 * Writes the archive's members at range width `digits` to `tmp` (writeArchive's one pass): returns
 * what was written, its member index's lines, and the count of distinct bodies it saw.
 */
async function writeMembers(
  releaseDir: string,
  orderFile: string,
  tmp: string,
  digits: number,
  pack: BodyPackFiles | null,
  previous: PreviousArchive | null,
): Promise<{ written: Omit<WrittenArchive, 'note'>; index: string; bodies: number }> {
  const format = membersFormat(digits)
  const old = previous ? readPreviousMembers(previous, format) : null
  const oldMembers = old && 'members' in old ? old.members : null
  const oldFd = oldMembers ? openSync(previous!.archive, 'r') : null
  const fd = openSync(tmp, 'w')
  const hash = createHash('sha256')
  const index: string[] = []
  let size = 0
  let members = 0
  let reused = 0
  let out: Buffer[] = []
  let outBytes = 0
  const flush = (): void => {
    if (outBytes > 0) writeAll(fd, out, outBytes)
    out = []
    outBytes = 0
  }
  const emit = (prefix: string | null, digest: string, member: Buffer, memberSha256?: string): void => {
    hash.update(member)
    if (prefix !== null) index.push(`${prefix}\t${digest}\t${size}\t${member.length}\t${memberSha256 ?? hashBytes(member)}\n`)
    size += member.length
    out.push(member)
    outBytes += member.length
    if (outBytes >= WRITE_CHUNK) flush()
  }
  // Members in archive order; the compression of the next ones runs on zlib's threads meanwhile.
  const pending: { prefix: string; digest: string; member: Promise<Buffer>; sha256?: string }[] = []
  const drain = async (keep: number): Promise<void> => {
    while (pending.length > keep) {
      const next = pending.shift()!
      emit(next.prefix, next.digest, await next.member, next.sha256)
    }
  }
  let damaged = 0
  let bodies = 0
  let lastBody = ''
  const reader = openBodyReader(releaseDir, pack)
  let range: { prefix: string; entries: { name: string; sha256: string }[] } | null = null
  const endRange = async (): Promise<void> => {
    if (!range) return
    const { prefix, entries } = range
    range = null
    members++
    const digest = rangeDigest(entries)
    const kept = oldMembers?.get(prefix)
    const copied = kept && kept.digest === digest ? readFully(oldFd!, kept.length, kept.offset, () => `archive: ${previous!.archive} ends inside the member at ${kept.offset}`) : null
    // A member is copied only with the bytes its index recorded: one the disk changed since is compressed again.
    if (copied && hashBytes(copied) === kept!.sha256) {
      reused++
      pending.push({ prefix, digest, member: Promise.resolve(copied), sha256: kept!.sha256 })
    } else {
      if (copied) damaged++
      const member = gzip(await rangeTar(entries, reader), GZIP)
      // Handled here so a failure waits for drain() to throw it, not for Node to call it unhandled.
      member.catch(() => {})
      pending.push({ prefix, digest, member })
    }
    await drain(IN_FLIGHT)
  }
  try {
    for await (const batch of readBodyOrder(orderFile)) {
      for (const entry of batch) {
        if (entry.sha256 !== lastBody) bodies++
        lastBody = entry.sha256
        const prefix = entry.sha256.slice(0, digits)
        if (range && range.prefix !== prefix) await endRange()
        if (!range) range = { prefix, entries: [] }
        range.entries.push(entry)
      }
    }
    await endRange()
    await drain(0)
    emit(null, '', gzipSync(Buffer.alloc(1024), GZIP))
    flush()
  } catch (err) {
    closeSync(fd)
    rmSync(tmp, { force: true })
    throw err
  } finally {
    await reader.close()
    if (oldFd !== null) closeSync(oldFd)
  }
  closeSync(fd)
  const written: Omit<WrittenArchive, 'note'> = { sha256: hash.digest('hex'), size, members, reused, damaged }
  if (old && 'reason' in old) written.notReused = old.reason
  return { written, index: index.join(''), bodies }
}

/** One line for the build's log: how much of the previous archive a rebuild copied. */
export function describeReuse(written: Omit<WrittenArchive, 'note'>): string {
  if (written.notReused) return `the previous archive was not reused: ${written.notReused}`
  const damaged = written.damaged > 0 ? ` (${written.damaged} whose bytes no longer matched its index compressed again)` : ''
  return `${written.reused} of ${written.members} members copied from the previous archive${damaged}`
}

/** The previous archive's members by range, or why they cannot be used. */
function readPreviousMembers(previous: PreviousArchive, expectedFormat: string): { members: Map<string, OldMember> } | { reason: string } {
  if (!existsSync(previous.members)) return { reason: `no member index at ${previous.members}` }
  if (!existsSync(previous.archive)) return { reason: `no archive at ${previous.archive}` }
  const lines = readFileSync(previous.members, 'utf8').split('\n')
  const [format, sha256, size] = lines[0]!.split('\t')
  if (format !== expectedFormat) return { reason: `its member index is of another format or range width (${format})` }
  if (sha256 !== previous.expected.sha256 || Number(size) !== previous.expected.size) return { reason: `its member index describes another archive (${sha256})` }
  if (statSync(previous.archive).size !== previous.expected.size) return { reason: `${previous.archive} is not the size its release gives` }
  const members = new Map<string, OldMember>()
  for (const line of lines.slice(1)) {
    if (line === '') continue
    const [prefix, digest, offset, length, sha256] = line.split('\t')
    const member = { digest: digest!, offset: Number(offset), length: Number(length), sha256: sha256 ?? '' }
    if (!/^[0-9a-f]{64}$/.test(member.sha256) || !Number.isSafeInteger(member.offset) || !Number.isSafeInteger(member.length) || member.offset + member.length > previous.expected.size) {
      return { reason: `its member index has a bad line: ${line.slice(0, 80)}` }
    }
    members.set(prefix!, member)
  }
  return { members }
}

/** Distinct bodies of an ordered list (adjacent there: the list is by SHA-256). */
async function countBodies(orderFile: string): Promise<number> {
  let n = 0
  let last = ''
  for await (const batch of readBodyOrder(orderFile)) {
    for (const { sha256 } of batch) {
      if (sha256 !== last) n++
      last = sha256
    }
  }
  return n
}

/**
 * What a range's member depends on: its names and their bodies' SHA-256, in order (`sha256 \t
 * name \n` lines). The lines are hashed as one string: a hash update per line was 5.1 M calls into
 * the hash at the large catalog, for the same digest.
 */
function rangeDigest(entries: { name: string; sha256: string }[]): string {
  let text = ''
  for (const e of entries) text += `${e.sha256}\t${e.name}\n`
  return createHash('sha256').update(text).digest('hex')
}

/** The tar entries of one range: each body once, its other names as hard links to its first. */
async function rangeTar(entries: { name: string; sha256: string }[], reader: ReturnType<typeof openBodyReader>): Promise<Buffer> {
  const blocks: Buffer[] = []
  let last: { sha256: string; name: string } | null = null
  for (const { name, sha256 } of entries) {
    const mtime = contentMtime(sha256)
    if (last && last.sha256 === sha256) {
      blocks.push(...entry(name, '1', 0, mtime, last.name))
      continue
    }
    const body = await reader.read(name, sha256)
    blocks.push(...entry(name, '0', body.length, mtime, ''), body)
    if (body.length % 512 !== 0) blocks.push(Buffer.alloc(512 - (body.length % 512)))
    last = { sha256, name }
  }
  return Buffer.concat(blocks)
}

/** Header blocks of one entry: a pax header first when a name does not fit ustar's 100 bytes. */
function entry(name: string, type: '0' | '1', size: number, mtime: number, linkname: string): Buffer[] {
  const blocks: Buffer[] = []
  const long = Buffer.byteLength(name) > 100 || Buffer.byteLength(linkname) > 100
  if (long) {
    const records = Buffer.from(paxRecord('path', name) + (linkname ? paxRecord('linkpath', linkname) : ''))
    blocks.push(header('PaxHeader', 'x', records.length, mtime, ''), records, Buffer.alloc((512 - (records.length % 512)) % 512))
  }
  blocks.push(header(long ? name.slice(-100) : name, type, size, mtime, long ? linkname.slice(-100) : linkname))
  return blocks
}

/** The fields every header has the same: mode, uid, gid, the checksum's blanks while it is summed, the magic and version. */
const HEADER_TEMPLATE = (() => {
  const h = Buffer.alloc(512)
  h.write('0000644\0', 100)
  h.write('0000000\0', 108)
  h.write('0000000\0', 116)
  h.write('        ', 148)
  h.write('ustar\0' + '00', 257)
  return h
})()
const TEMPLATE_SUM = HEADER_TEMPLATE.reduce((sum, b) => sum + b, 0)

/**
 * A ustar header block. The checksum adds the template's bytes, summed once, to the bytes written
 * here: a sum over every block was most of the archive worker's time in its headers (850,000 at a
 * 1% rebuild of the large catalog; bench/results/BUILD-PROFILE.md, Session 50).
 */
function header(name: string, type: string, size: number, mtime: number, linkname: string): Buffer {
  const h = Buffer.allocUnsafe(512)
  HEADER_TEMPLATE.copy(h)
  let sum = TEMPLATE_SUM
  const add = (from: number, length: number): void => {
    for (let i = from; i < from + length; i++) sum += h[i]!
  }
  add(0, h.write(name, 0, 100))
  add(124, h.write(size.toString(8).padStart(11, '0') + '\0', 124))
  add(136, h.write(mtime.toString(8).padStart(11, '0') + '\0', 136))
  add(156, h.write(type, 156))
  add(157, h.write(linkname, 157, 100))
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return h
}

/** A pax record `<len> key=value\n`, where len counts its own digits. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`
  let len = Buffer.byteLength(body) + 1
  while (String(len).length + Buffer.byteLength(body) !== len) len = String(len).length + Buffer.byteLength(body)
  return `${len}${body}`
}
