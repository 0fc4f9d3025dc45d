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
 * Compressed on both cores: the tar stream is cut into chunks of WRITE_CHUNK (cut where the entries
 * fall, so at the same places for the same data) and each chunk is deflated on zlib's thread pool
 * as its own gzip member, up to IN_FLIGHT at a time, written in order. A gzip file of several
 * members is one .gz (RFC 1952 §2.2): gunzip, `tar -xzf` and Node's gunzip read it as one stream.
 */
import { open } from 'node:fs/promises'
import { readFileSync, renameSync, rmSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { gzip as gzipCallback } from 'node:zlib'
import { contentMtime } from '../render/etag.ts'
import { readBodyOrder } from './body-order.ts'

const WRITE_CHUNK = 1 << 20
/**
 * Members deflating at once on libuv's pool of 4 threads: one is left for SQLite's queries, since
 * the snapshot is written at the same time (seal.ts).
 */
const IN_FLIGHT = 3
const gzip = promisify(gzipCallback)

/**
 * Writes `target` holding `public/api` of the release, in the order of the list `orderFile`;
 * `chunkBytes` of tar per gzip member (tests make it small to get many members).
 */
export async function writeArchive(releaseDir: string, orderFile: string, target: string, chunkBytes = WRITE_CHUNK): Promise<void> {
  const tmp = `${target}.tmp`
  const out = await open(tmp, 'w')
  // Members in tar order; the oldest is written as soon as IN_FLIGHT are deflating.
  const members: Promise<Buffer>[] = []
  const writeOldest = async (): Promise<void> => {
    const member = await members.shift()!
    await out.write(member)
  }
  // Entries are a few hundred bytes: gathered into WRITE_CHUNK before they are deflated.
  let queued: Buffer[] = []
  let queuedBytes = 0
  const flush = async (): Promise<void> => {
    if (queuedBytes === 0) return
    // Level 1: 2–3× faster than 6 on this tree (which is mostly tar headers) for an archive ≈ 25% larger.
    const member = gzip(Buffer.concat(queued, queuedBytes), { level: 1 })
    // Awaited in order by writeOldest; marked handled so that an earlier failure leaves no rejection.
    member.catch(() => {})
    members.push(member)
    queued = []
    queuedBytes = 0
    if (members.length >= IN_FLIGHT) await writeOldest()
  }
  const push = async (chunk: Buffer): Promise<void> => {
    queued.push(chunk)
    queuedBytes += chunk.length
    if (queuedBytes >= chunkBytes) await flush()
  }
  try {
    let last: { sha256: string; name: string } | null = null
    for await (const { name, sha256 } of readBodyOrder(orderFile)) {
      const mtime = contentMtime(sha256)
      if (last && last.sha256 === sha256) {
        for (const b of entry(name, '1', 0, mtime, last.name)) await push(b)
        continue
      }
      const body = readFileSync(path.join(releaseDir, name))
      for (const b of entry(name, '0', body.length, mtime, '')) await push(b)
      await push(body)
      if (body.length % 512 !== 0) await push(Buffer.alloc(512 - (body.length % 512)))
      last = { sha256, name }
    }
    // The end-of-archive marker goes into the last member.
    await push(Buffer.alloc(1024))
    await flush()
    while (members.length > 0) await writeOldest()
    await out.close()
  } catch (err) {
    await out.close().catch(() => {})
    rmSync(tmp, { force: true })
    throw err
  }
  renameSync(tmp, target)
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

function header(name: string, type: string, size: number, mtime: number, linkname: string): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100)
  h.write('0000644\0', 100)
  h.write('0000000\0', 108)
  h.write('0000000\0', 116)
  h.write(size.toString(8).padStart(11, '0') + '\0', 124)
  h.write(mtime.toString(8).padStart(11, '0') + '\0', 136)
  h.write(type, 156)
  h.write(linkname, 157, 100)
  h.write('ustar\0' + '00', 257)
  h.write('        ', 148)
  let sum = 0
  for (let i = 0; i < h.length; i++) sum += h[i]!
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
