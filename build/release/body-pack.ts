/**
 * The body pack: every body of a release appended to one temp file while it is written, so the
 * snapshot and the archive read their 1.4 million bodies from one file already in the page cache
 * instead of opening each one in the tree. At the large catalog each of them spent 130–170 s
 * opening, reading and closing the tree's small files (most of it waiting on the disk, with the
 * other one doing the same), against about 3 s of reads from the pack
 * (bench/results/BUILD-PROFILE.md, "The body pack").
 *
 * Files, all temp and release-relative (removed by removeBodyPack before the release goes live):
 *   .bodies.pack        the bodies, end to end, in write order (a body recorded twice is there twice)
 *   .bodies.idx         `sha256 \t offset \t size` per body, in write order
 *   .bodies.sorted.idx  the same lines by SHA-256, one per body (sortBodyPack)
 *
 * The pack only moves where the bytes are read from: the snapshot and the archive are the same
 * bytes with or without it (test/offline.test.ts writes both again from the tree and compares).
 *
 * A rebuild leaves out of the pack the bodies it names without reading them: the live release's
 * versions whose JSON it reused (build/static/versions.ts). A reader finds those elsewhere
 * (`elsewhere`): in the previous release's snapshot, a range of its `static_bodies` at a time, or
 * else in the content store, each checked against its SHA-256 before it is used.
 */
import { hash } from 'node:crypto'
import { closeSync, existsSync, openSync, readFileSync, readSync, rmSync, writevSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import { openDb, type Db } from '../db/sqlite.ts'
import { readLines, sortFile } from './body-order.ts'
import { storeFile } from './tree.ts'

const PACK = '.bodies.pack'
const INDEX = '.bodies.idx'
const SORTED = '.bodies.sorted.idx'
/** Bytes gathered before one writev: few system calls, bounded memory. */
const FLUSH_BYTES = 4 << 20

/**
 * The pack of a release and its index sorted by SHA-256 (sortBodyPack), and where the bodies left
 * out of it are: the previous release's snapshot and the content store (either may be null).
 */
export const bodyPackFilesSchema = z.object({
  pack: z.string().min(1),
  sortedIndex: z.string().min(1),
  elsewhere: z.object({ snapshot: z.string().min(1).nullable(), store: z.string().min(1).nullable() }).optional(),
})
export type BodyPackFiles = z.infer<typeof bodyPackFilesSchema>

/** Appends bodies to the pack of a release. */
export interface BodyPackWriter {
  append(sha256: string, bytes: Uint8Array): void
  /** Writes what is buffered and closes the files. */
  finish(): void
  /** Closes the files without flushing (the build failed; the release folder is removed). */
  close(): void
}

/** Starts the pack of `releaseDir` (truncating any left by an earlier attempt). */
export function createBodyPackWriter(releaseDir: string): BodyPackWriter {
  const pack = openSync(path.join(releaseDir, PACK), 'w')
  const index = openSync(path.join(releaseDir, INDEX), 'w')
  let offset = 0
  let chunks: Uint8Array[] = []
  let buffered = 0
  let lines: string[] = []
  let open = true
  const flush = (): void => {
    if (chunks.length > 0) writeAll(pack, chunks, buffered)
    if (lines.length > 0) writeAll(index, [Buffer.from(lines.join(''))])
    chunks = []
    buffered = 0
    lines = []
  }
  return {
    append(sha256, bytes) {
      lines.push(`${sha256}\t${offset}\t${bytes.length}\n`)
      chunks.push(bytes)
      buffered += bytes.length
      offset += bytes.length
      if (buffered >= FLUSH_BYTES || chunks.length >= 1024) flush()
    },
    finish() {
      if (!open) return
      flush()
      closeSync(pack)
      closeSync(index)
      open = false
    },
    close() {
      if (!open) return
      closeSync(pack)
      closeSync(index)
      open = false
    },
  }
}

/** writev until every byte is written (a short write resumes where it stopped). */
export function writeAll(fd: number, chunks: Uint8Array[], total = chunks.reduce((n, c) => n + c.length, 0)): void {
  let left = total
  let parts = chunks
  while (left > 0) {
    let n = writevSync(fd, parts)
    left -= n
    if (left === 0) break
    // Skip what was written, keep the rest of a partly written chunk.
    let i = 0
    while (n >= parts[i]!.length) n -= parts[i++]!.length
    parts = [parts[i]!.subarray(n), ...parts.slice(i + 1)]
  }
}

/** `length` bytes of `fd` from `position` (a short read resumes); `ended` says what was cut off when the file ends first. */
export function readFully(fd: number, length: number, position: number, ended: () => string): Buffer {
  const bytes = Buffer.allocUnsafe(length)
  let done = 0
  while (done < length) {
    const n = readSync(fd, bytes, done, length - done, position + done)
    if (n === 0) throw new Error(ended())
    done += n
  }
  return bytes
}

/** Whether the build wrote a pack for `releaseDir` (a re-sealed old release has none: the tree is read). */
export function hasBodyPack(releaseDir: string): boolean {
  return existsSync(path.join(releaseDir, INDEX))
}

/** Sorts the pack's index by SHA-256, one line per body; returns the files the readers take. */
export async function sortBodyPack(releaseDir: string): Promise<BodyPackFiles> {
  const sortedIndex = path.join(releaseDir, SORTED)
  // -u with the key alone: the first line of each SHA-256 (a body recorded twice has the same bytes).
  await sortFile(releaseDir, path.join(releaseDir, INDEX), sortedIndex, ['-u', '-k1,1'])
  return { pack: path.join(releaseDir, PACK), sortedIndex }
}

/** Removes the pack files of `releaseDir`. */
export function removeBodyPack(releaseDir: string): void {
  for (const name of [PACK, INDEX, SORTED]) rmSync(path.join(releaseDir, name), { force: true })
}

/** Reads bodies by name and SHA-256, in ascending SHA-256 order (the body order of body-order.ts). */
export interface BodyReader {
  read(name: string, sha256: string): Promise<Buffer>
  close(): Promise<void>
}

/**
 * A reader of the bodies of `releaseDir`: from the pack when `pack` is given (the calls must come
 * in ascending SHA-256 order, as the body order gives them: the sorted index is walked once, beside
 * it), else from the release's tree by name. A body the pack does not hold is read from
 * `pack.elsewhere` (readElsewhere).
 */
export function openBodyReader(releaseDir: string, pack: BodyPackFiles | null): BodyReader {
  if (!pack) return { read: async (name) => readFileSync(path.join(releaseDir, name)), close: async () => {} }
  const fd = openSync(pack.pack, 'r')
  const index = readLines(pack.sortedIndex)[Symbol.asyncIterator]()
  const elsewhere = readElsewhere(pack.elsewhere ?? { snapshot: null, store: null })
  let current: { sha256: string; offset: number; size: number } | null = null
  let exhausted = false
  const advance = async (): Promise<void> => {
    const next = await index.next()
    if (next.done) {
      exhausted = true
      current = null
      return
    }
    const [sha256, offset, size] = next.value.split('\t') as [string, string, string]
    current = { sha256, offset: Number(offset), size: Number(size) }
  }
  return {
    async read(name, sha256) {
      if (!current && !exhausted) await advance()
      while (current && current.sha256 < sha256) await advance()
      if (current?.sha256 === sha256) {
        return readFully(fd, current.size, current.offset, () => `body pack: ${pack.pack} ends inside body ${sha256} (for ${name})`)
      }
      return elsewhere.read(name, sha256)
    },
    async close() {
      closeSync(fd)
      void index.return?.()
      await elsewhere.close()
    },
  }
}

/** Bodies of the previous release's snapshot with the same first hex digits as the one asked, read at once. */
const WINDOW_DIGITS = 4

/**
 * Reads bodies left out of the pack, in ascending SHA-256 order: from the previous release's
 * snapshot (`static_bodies`, opened read-only on first use; each miss reads the bodies whose
 * SHA-256 shares its first WINDOW_DIGITS hex digits, the range of an archive member, since its
 * neighbours are usually asked next), else from the content store. Each body is used only if its
 * bytes have the SHA-256 asked: a snapshot or store entry that the disk changed is passed over.
 */
function readElsewhere(where: { snapshot: string | null; store: string | null }): BodyReader {
  // Opened on the first miss; null when there is none or SQLite cannot open it (the store is read instead).
  let db: Promise<Db | null> | null = null
  let window: { sha256: string; body: Buffer }[] = []
  let at = 0
  let windowStart = 'g'
  let windowEnd = ''
  const fromSnapshot = async (sha256: string): Promise<Buffer | null> => {
    if (!where.snapshot) return null
    db ??= openDb(where.snapshot, { readonly: true }).catch(() => null)
    const snapshot = await db
    if (!snapshot) return null
    if (sha256 < windowStart || sha256 >= windowEnd) {
      windowStart = sha256
      windowEnd = `${sha256.slice(0, WINDOW_DIGITS)}g`
      try {
        window = await snapshot.all<{ sha256: string; body: Buffer }>(
          `SELECT sha256, body FROM static_bodies WHERE sha256 >= ? AND sha256 < ? ORDER BY sha256`,
          [windowStart, windowEnd],
        )
      } catch {
        window = []
      }
      at = 0
    }
    while (at < window.length && window[at]!.sha256 < sha256) at++
    const row = window[at]
    return row?.sha256 === sha256 && Buffer.isBuffer(row.body) && hash('sha256', row.body, 'hex') === sha256 ? row.body : null
  }
  const fromStore = (sha256: string): Buffer | null => {
    if (!where.store) return null
    let bytes: Buffer
    try {
      bytes = readFileSync(storeFile(where.store, sha256))
    } catch {
      return null
    }
    return hash('sha256', bytes, 'hex') === sha256 ? bytes : null
  }
  return {
    async read(name, sha256) {
      const bytes = (await fromSnapshot(sha256)) ?? fromStore(sha256)
      if (bytes) return bytes
      throw new Error(
        `body pack: no body ${sha256} (for ${name}) in the pack, the previous snapshot (${where.snapshot ?? 'none'}) or the content store (${where.store ?? 'none'}), ` +
          `or the bodies were not asked in SHA-256 order`,
      )
    },
    async close() {
      await (await db)?.close()
    },
  }
}
