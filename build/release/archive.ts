/**
 * The JSON tree of a release as one tar.gz (POSIX ustar + pax for long names), written in one pass
 * over the body order (body-order.ts): the names of one body are adjacent there, so the body is
 * stored once and its other names as hard-link entries, and the archive is about the size of the
 * distinct bodies. Reproducible: entries in that fixed order, every entry with its body's content
 * mtime (build/render/etag.ts: a tree extracted with `tar -xzf` gets nginx the API's ETags), uid/gid
 * 0, mode 0644 and no user names, and gzip's header without a time — the same data gives the same
 * bytes (the release's time is in release.json). Written by hand (60 lines) because node-tar 7.5's
 * pack stalled on this tree's hard links.
 */
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createWriteStream, renameSync, rmSync } from 'node:fs'
import { finished } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import { contentMtime } from '../render/etag.ts'
import { readBodyOrder } from './body-order.ts'
import { openBodyReader, type BodyPackFiles } from './body-pack.ts'
import type { FileHash } from './hash-file.ts'

const WRITE_CHUNK = 1 << 20

/**
 * Writes `target` holding `public/api` of the release, in the order of the list `orderFile`,
 * reading the bodies from `pack` (the build's body pack, body-pack.ts) or, when null, the tree.
 * Returns the archive's SHA-256 and size, hashed as its bytes go to the file (no second read).
 */
export async function writeArchive(releaseDir: string, orderFile: string, target: string, pack: BodyPackFiles | null = null): Promise<FileHash> {
  const tmp = `${target}.tmp`
  // Level 1: 2–3× faster than 6 on this tree (which is mostly tar headers) for an archive ≈ 25% larger.
  const gzip = createGzip({ level: 1 })
  const hash = createHash('sha256')
  let size = 0
  gzip.on('data', (chunk: Buffer) => {
    hash.update(chunk)
    size += chunk.length
  })
  const out = gzip.pipe(createWriteStream(tmp))
  // Entries are a few hundred bytes: handed to gzip 1 MB at a time, not one stream write (and one
  // zlib call) per 512-byte header. Same bytes out.
  let queued: Buffer[] = []
  let queuedBytes = 0
  const flush = async (): Promise<void> => {
    const chunk = Buffer.concat(queued, queuedBytes)
    queued = []
    queuedBytes = 0
    if (!gzip.write(chunk)) await once(gzip, 'drain')
  }
  const push = async (chunk: Buffer): Promise<void> => {
    queued.push(chunk)
    queuedBytes += chunk.length
    if (queuedBytes >= WRITE_CHUNK) await flush()
  }
  const reader = openBodyReader(releaseDir, pack)
  try {
    let last: { sha256: string; name: string } | null = null
    for await (const { name, sha256 } of readBodyOrder(orderFile)) {
      const mtime = contentMtime(sha256)
      if (last && last.sha256 === sha256) {
        for (const b of entry(name, '1', 0, mtime, last.name)) await push(b)
        continue
      }
      const body = await reader.read(name, sha256)
      for (const b of entry(name, '0', body.length, mtime, '')) await push(b)
      await push(body)
      if (body.length % 512 !== 0) await push(Buffer.alloc(512 - (body.length % 512)))
      last = { sha256, name }
    }
    await flush()
    gzip.end(Buffer.alloc(1024))
    await finished(out)
  } catch (err) {
    gzip.destroy()
    rmSync(tmp, { force: true })
    throw err
  } finally {
    reader.close()
  }
  renameSync(tmp, target)
  return { sha256: hash.digest('hex'), size }
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
