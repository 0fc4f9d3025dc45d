/** SHA-256 and size of a file, streamed (snapshots and catalogs are gigabytes at the large size). */
import { createHash } from 'node:crypto'
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { z } from 'zod'

/** SHA-256 (hex) and size in bytes of a file. */
export interface FileHash {
  sha256: string
  size: number
}

/** A FileHash as JSON (records, and what the seal's workers send and take). */
export const fileHashSchema = z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().nonnegative() })

/**
 * Hashes a file without holding it in memory: read in 4 MB pieces into one buffer. A read stream
 * made a new 1 MB buffer a piece, and hashing the 6.4 GB snapshot that way spent a quarter of its
 * thread's time in the collector (bench/results/BUILD-PROFILE.md, Session 50).
 */
export async function hashFile(file: string): Promise<FileHash> {
  const hash = createHash('sha256')
  const handle = await open(file, 'r')
  let size = 0
  try {
    // No larger than the file needs (the mirror hashes small files one by one); a file that grows is read on all the same.
    const buffer = Buffer.allocUnsafe(Math.min(4 << 20, Math.max((await handle.stat()).size, 1 << 16)))
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null)
      if (bytesRead === 0) break
      hash.update(buffer.subarray(0, bytesRead))
      size += bytesRead
    }
  } finally {
    await handle.close()
  }
  return { sha256: hash.digest('hex'), size }
}

/**
 * The worker thread of hashFileOffThread (plain JavaScript, evaluated): reads the file in 8 MB
 * pieces with blocking reads and posts its FileHash.
 */
const HASH_WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
const { createHash } = require('node:crypto')
const { closeSync, openSync, readSync } = require('node:fs')
const hash = createHash('sha256')
const buffer = Buffer.allocUnsafe(8 << 20)
const fd = openSync(workerData, 'r')
let size = 0
try {
  for (;;) {
    const n = readSync(fd, buffer, 0, buffer.length, null)
    if (n === 0) break
    hash.update(buffer.subarray(0, n))
    size += n
  }
} finally {
  closeSync(fd)
}
parentPort.postMessage({ sha256: hash.digest('hex'), size })
`

/**
 * hashFile on a worker thread of its own: no step of it waits for this thread's event loop. The
 * build hashes the compacted catalog (2.7 GB at the large catalog) while the seal's thread sorts
 * and compares the manifest a shard at a time; streamed here, each 1 MB piece waited for a turn
 * between shards, and the 2.7 GB took 10–12 s, the snapshot waiting for it (bench/results/
 * BUILD-PROFILE.md, Session 35). A file that cannot be read rejects with the reading error.
 */
export function hashFileOffThread(file: string): Promise<FileHash> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(HASH_WORKER, { eval: true, workerData: file })
    let result: FileHash | null = null
    worker.once('message', (message: FileHash) => (result = message))
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (result) resolve(result)
      else reject(new Error(`hashing ${file}: its worker thread exited (code ${code}) without a result`))
    })
  })
}

/**
 * What stat says of a file that changes with any write to it: its device and inode, size,
 * modification and status-change times (ns, as text for JSON). The status-change time cannot be set
 * back by a writer, so the same identity before and after a read means nothing wrote the file in
 * between.
 */
export interface FileIdentity {
  dev: string
  ino: string
  size: string
  mtimeNs: string
  ctimeNs: string
}

/** The file's identity now (statSync: a file that is gone throws). */
export function fileIdentity(file: string): FileIdentity {
  const s = statSync(file, { bigint: true })
  return { dev: String(s.dev), ino: String(s.ino), size: String(s.size), mtimeNs: String(s.mtimeNs), ctimeNs: String(s.ctimeNs) }
}

/** Whether two identities are of the same file, unwritten between them. */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/**
 * A file's SHA-256 and size taken earlier, with the identity it had throughout the read; `recorded`:
 * taken by the build that wrote the file, once it was final (recordHash), not read by this build.
 */
export interface HashedAhead extends FileHash {
  file: string
  identity: FileIdentity
  recorded?: boolean
}

/** A FileIdentity as JSON (records, and the snapshot worker's argument). */
export const identitySchema = z.object({ dev: z.string(), ino: z.string(), size: z.string(), mtimeNs: z.string(), ctimeNs: z.string() })
/** The record recordHash writes: the file (relative to the record's folder), its SHA-256 and size, and its identity then. */
const hashRecordSchema = fileHashSchema.extend({ format: z.literal(1), file: z.string().min(1), identity: identitySchema })

/**
 * Records beside a file the build has just finished (at `record`, in a folder above it) the SHA-256
 * and size it took of its bytes and the identity the file has now, so that a later build can trust
 * that hash (recordedHash) while stat gives the file the same identity, instead of reading it again.
 */
export function recordHash(record: string, file: string, hash: FileHash): void {
  const doc: z.infer<typeof hashRecordSchema> = { format: 1, file: path.relative(path.dirname(record), file), sha256: hash.sha256, size: hash.size, identity: fileIdentity(file) }
  writeFileSync(`${record}.tmp`, JSON.stringify(doc) + '\n')
  renameSync(`${record}.tmp`, record)
}

/**
 * The hash recordHash left for `file` at `record`, as a HashedAhead, when it is `expected` (what the
 * file's release gives) and stat gives the file the identity it had when the hash was recorded:
 * nothing has written it since (hashAhead's test, over the time between two builds). Null when
 * there is no record, it is unreadable or of another file or hash, or the identity changed: the
 * caller then hashes the file.
 */
export function recordedHash(record: string, file: string, expected: FileHash): HashedAhead | null {
  try {
    const doc = hashRecordSchema.parse(JSON.parse(readFileSync(record, 'utf8')))
    if (path.resolve(path.dirname(record), doc.file) !== path.resolve(file)) return null
    if (doc.sha256 !== expected.sha256 || doc.size !== expected.size) return null
    if (!sameIdentity(doc.identity, fileIdentity(file))) return null
    return { sha256: doc.sha256, size: doc.size, file, identity: doc.identity, recorded: true }
  } catch {
    return null
  }
}

/**
 * Hashes `file` ahead of its use, on a thread of its own (hashFileOffThread). Whoever uses the
 * result checks that the file still has the identity it had (sameIdentity), and hashes it again
 * otherwise. Resolves to null when the file changed during the read or could not be read: the user
 * then hashes it itself.
 */
export async function hashAhead(file: string): Promise<HashedAhead | null> {
  try {
    const before = fileIdentity(file)
    const hashed = await hashFileOffThread(file)
    return sameIdentity(before, fileIdentity(file)) ? { ...hashed, file, identity: before } : null
  } catch {
    return null
  }
}
