/**
 * The offline snapshot of a release: one SQLite file holding the published catalog (a copy of the
 * release's catalog.sqlite, itself compacted by VACUUM INTO and never opened for writing again)
 * plus every pre-rendered body, so the shim can serve the whole API from this one file
 * (`SNAPSHOT=file npm run serve`). Made as temp file → quick_check → fsync → rename. Bodies
 * are read (from the build's body pack, body-pack.ts, or else the tree) and inserted in batches, one
 * pass over the body order (body-order.ts: by SHA-256, then name), so each body is read once and
 * static_bodies fills in key order; names go in from a list
 * sorted by name, so static_paths fills in key order too (in body order, 5 million names of the
 * large catalog landed at random places of its B-tree and the pages were re-read from disk again
 * and again).
 *
 * A rebuild copies from the previous release's snapshot every body it still has and every run of
 * names that kept their body, with `INSERT … SELECT` inside SQLite (no row passes through this
 * thread), and inserts only the rest: the rows go in in the same order either way, and SQLite lays
 * out a table filled in key order by what is inserted, not by where it came from, so the file is the
 * same bytes as one written from the bodies alone (test/snapshot-reuse.test.ts). At the large
 * catalog that is about 10 s instead of 60 (bench/results/BUILD-PROFILE.md, Session 29). The
 * previous file is used only when its size, format and SHA-256 are those its release gives (the hash
 * is taken beside the copy; on a mismatch the copy is thrown away and the snapshot written again
 * from the bodies).
 *
 * Reproducible: catalog.sqlite is itself deterministic, the copy is byte for byte, and the rows
 * added here go in in fixed orders in a fixed number of transactions, so
 * the same data gives the same bytes — header fields included (file change counter,
 * version-valid-for). Nothing in it names its release or a time: release.json does, with the
 * snapshot's SHA-256, and an unchanged rebuild keeps the previous snapshot's bytes.
 *
 * Schema, beside the catalog tables of build/db/schema.ts:
 *   static_paths(path TEXT PRIMARY KEY, sha256 TEXT)  release-relative file of an API URL
 *   static_bodies(sha256 TEXT PRIMARY KEY, body BLOB)  the exact bytes served (ETag = etag(body))
 *   snapshot_info(key TEXT PRIMARY KEY, value TEXT)    format ('1'), catalogSha256 (of the catalog it copies)
 */
import { copyFileSync, existsSync, renameSync, rmSync, statSync } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { openDb, type Db, type SqlValue } from '../db/sqlite.ts'
import { readBodyOrder } from './body-order.ts'
import { openBodyReader, type BodyPackFiles } from './body-pack.ts'
import { BUILD_CACHE_KIB } from '../db/schema.ts'
import { hashFile, type FileHash } from './hash-file.ts'
import { fsyncPath } from './publish.ts'

/** Schema of the tables a snapshot adds to the catalog. */
export const snapshotSchema = `
  CREATE TABLE static_paths (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE static_bodies (sha256 TEXT PRIMARY KEY, body BLOB NOT NULL);
  CREATE TABLE snapshot_info (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
`

/**
 * snapshot_info's `format`: what the rows of static_paths and static_bodies mean. A rebuild copies
 * rows only from a previous snapshot of this format; change it with snapshotSchema or the bodies' encoding.
 */
export const SNAPSHOT_FORMAT = '1'

const BODY_BATCH = 200
const PATH_BATCH = 4096
/** Keys of the previous snapshot read at once, walking its tables in key order. */
const KEY_PAGE = 8192

/** The previous release's snapshot, whose bodies and names a rebuild copies where they did not change. */
export interface PreviousSnapshot {
  /** The snapshot file. */
  snapshot: string
  /** SHA-256 and size its release's pointer gives for it. */
  expected: FileHash
}

/** What writeSnapshot wrote: the file's SHA-256 and size, and what it copied from the previous snapshot. */
export interface WrittenSnapshot extends FileHash {
  /** Distinct bodies in the snapshot, and of those copied from the previous snapshot. */
  bodies: number
  reusedBodies: number
  /** Names in the snapshot, and of those copied from the previous snapshot. */
  paths: number
  reusedPaths: number
  /** Why the previous snapshot was not used, when one was given and was not. */
  notReused?: string
  /** The build log's line on the above. */
  note: string
}

/**
 * The check of the finished file. quick_check reads every page and checks the B-trees, the free
 * list and every record's format (a torn or corrupt file fails it); unlike integrity_check it does
 * not look every row up again in each index, which would be a SQLite bug, not a fault of this
 * file, and took 21 s warm and 77 s beside the rest of the seal at the large catalog, against
 * 9.5 s. (Through a memory map it took 4.4 s, but the mapped pages count in the build's RSS: 2.8 GB.)
 */
async function checkSnapshot(db: Db): Promise<void> {
  const check = await db.all<{ quick_check: string }>(`PRAGMA quick_check`)
  if (check.length !== 1 || check[0]!.quick_check !== 'ok') throw new Error(`snapshot quick_check failed: ${JSON.stringify(check.slice(0, 5))}`)
}

/** The previous snapshot's bytes were not those its release gives: what was copied from it is thrown away. */
class PreviousSnapshotChanged extends Error {}

/**
 * Writes `target` from the release's catalog.sqlite (of SHA-256 `catalogSha256`), the body order
 * `orderFile` and the same names sorted by name, `pathOrderFile` (body-order.ts), reading the
 * bodies from `pack` (the build's body pack) or, when null, the release's tree, and copying what
 * `previous` already holds. Returns the written file's SHA-256 and size: hashed while quick_check
 * reads it (the file's bytes are final once the transaction commits; the check only reads), so the
 * hash of 6.3 GB at the large catalog runs beside the check, on the other core, instead of after it.
 */
export async function writeSnapshot(
  releaseDir: string,
  orderFile: string,
  pathOrderFile: string,
  target: string,
  catalogSha256: string,
  pack: BodyPackFiles | null = null,
  previous: PreviousSnapshot | null = null,
): Promise<WrittenSnapshot> {
  const unusable = previous ? checkPrevious(previous) : null
  if (!previous || unusable) return writeSnapshotFrom(releaseDir, orderFile, pathOrderFile, target, catalogSha256, pack, null, unusable ?? undefined)
  try {
    return await writeSnapshotFrom(releaseDir, orderFile, pathOrderFile, target, catalogSha256, pack, previous, undefined)
  } catch (err) {
    // A previous snapshot whose bytes changed, or that SQLite could not read: the copy is gone
    // (writeSnapshotFrom removes it) and the snapshot is written from the bodies alone. A fault of
    // its own (an order file missing, the disk full) fails that write too.
    const why = err instanceof PreviousSnapshotChanged ? err.message : `copying from ${previous.snapshot} failed (${(err as Error).message})`
    return writeSnapshotFrom(releaseDir, orderFile, pathOrderFile, target, catalogSha256, pack, null, why)
  }
}

async function writeSnapshotFrom(
  releaseDir: string,
  orderFile: string,
  pathOrderFile: string,
  target: string,
  catalogSha256: string,
  pack: BodyPackFiles | null,
  previous: PreviousSnapshot | null,
  notReused: string | undefined,
): Promise<WrittenSnapshot> {
  const tmp = `${target}.tmp`
  rmSync(tmp, { force: true })
  // copy_file_range: the kernel copies the pages; SQLite would read and write each one itself.
  copyFileSync(path.join(releaseDir, 'catalog.sqlite'), tmp)
  const db = await openDb(tmp, { uri: true })
  let written: WrittenSnapshot
  try {
    await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; ${snapshotSchema} BEGIN;`)
    await db.run(`INSERT INTO snapshot_info VALUES ('catalogSha256', ?), ('format', ?)`, [catalogSha256, SNAPSHOT_FORMAT])
    let old = false
    let verified: Promise<string | null> = Promise.resolve(null)
    if (previous) {
      // Read-only: the previous snapshot is a published file of the live release.
      await db.run(`ATTACH DATABASE ? AS previous`, [`${pathToFileURL(previous.snapshot).href}?mode=ro`])
      const format = await db.get<{ value: string }>(`SELECT value FROM previous.snapshot_info WHERE key = 'format'`).catch(() => undefined)
      if (format?.value === SNAPSHOT_FORMAT) {
        old = true
        // Hashed beside the copy; a mismatch throws the copy away (writeSnapshot writes it again from the bodies).
        verified = hashFile(previous.snapshot).then((h) =>
          h.sha256 === previous.expected.sha256 && h.size === previous.expected.size ? null : `${previous.snapshot} is not the file its release gives (SHA-256 ${h.sha256})`,
        )
        verified.catch(() => {})
      } else notReused = `${previous.snapshot} is not a snapshot of format ${SNAPSHOT_FORMAT}`
    }
    const bodies = await insertBodies(db, releaseDir, orderFile, pack, old)
    const paths = await insertPaths(db, pathOrderFile, old)
    const changed = await verified
    if (changed) throw new PreviousSnapshotChanged(changed)
    await db.exec(`COMMIT; PRAGMA journal_mode = DELETE;`)
    if (previous) await db.exec(`DETACH DATABASE previous`)
    const [hashed] = await Promise.all([hashFile(tmp), checkSnapshot(db)])
    written = { ...hashed, bodies: bodies.total, reusedBodies: bodies.reused, paths: paths.total, reusedPaths: paths.reused, notReused, note: '' }
    written.note = describeReuse(written, previous !== null || notReused !== undefined)
  } catch (err) {
    await db.close().catch(() => {})
    rmSync(tmp, { force: true })
    throw err
  }
  await db.close()
  fsyncPath(tmp)
  renameSync(tmp, target)
  return written
}

/** Why the previous snapshot cannot be used, seen before it is opened (gone, or not the size its release gives), or null. */
function checkPrevious(previous: PreviousSnapshot): string | null {
  if (!existsSync(previous.snapshot)) return `no snapshot at ${previous.snapshot}`
  if (statSync(previous.snapshot).size !== previous.expected.size) return `${previous.snapshot} is not the size its release gives`
  return null
}

/** One line for the build's log: how much of the previous snapshot a rebuild copied. */
function describeReuse(w: WrittenSnapshot, hadPrevious: boolean): string {
  if (w.notReused) return `the previous snapshot was not reused: ${w.notReused}`
  if (!hadPrevious) return `no previous snapshot: ${w.bodies} bodies and ${w.paths} names inserted`
  return `${w.reusedBodies} of ${w.bodies} bodies and ${w.reusedPaths} of ${w.paths} names copied from the previous snapshot`
}

/** The keys of a table of the previous snapshot in ascending order, a page at a time; `null` after the last. */
function walkKeys<T>(db: Db, sql: string, key: (row: T) => string): () => Promise<T | null> {
  let page: T[] = []
  let at = 0
  let after = ''
  let done = false
  return async () => {
    if (at === page.length) {
      if (done) return null
      page = await db.all<T>(sql, [after, KEY_PAGE])
      at = 0
      if (page.length < KEY_PAGE) done = true
      if (page.length === 0) return null
      after = key(page[page.length - 1]!)
    }
    return page[at++]!
  }
}

/**
 * Rows of a table appended in key order: runs of consecutive rows the previous snapshot holds as
 * they are, copied by key range (`copy`), and the others inserted in batches (`insert`), in one
 * order, so the table fills as if every row had been inserted.
 */
function createAppender<R>(copy: (first: string, last: string) => Promise<void>, insert: (rows: R[]) => Promise<void>, batch: number) {
  let run: [string, string] | null = null
  let rows: R[] = []
  const flushRun = async (): Promise<void> => {
    if (run) await copy(run[0], run[1])
    run = null
  }
  const flushRows = async (): Promise<void> => {
    if (rows.length > 0) await insert(rows)
    rows = []
  }
  return {
    /** Appends the previous snapshot's row of `key`, which must follow the last one copied (else call `gap` first). */
    async copied(key: string): Promise<void> {
      await flushRows()
      if (run) run[1] = key
      else run = [key, key]
    },
    /** A row of the previous snapshot left out: the run copied so far ends before it. */
    gap: flushRun,
    async inserted(row: R): Promise<void> {
      await flushRun()
      rows.push(row)
      if (rows.length >= batch) await flushRows()
    },
    async finish(): Promise<void> {
      await flushRun()
      await flushRows()
    },
  }
}

/**
 * Each distinct body once into static_bodies, in the body order (by SHA-256: its key): copied from
 * the previous snapshot where `old` and it has the body, else read from the pack or the tree.
 */
async function insertBodies(db: Db, releaseDir: string, orderFile: string, pack: BodyPackFiles | null, old: boolean): Promise<{ total: number; reused: number }> {
  const reader = openBodyReader(releaseDir, pack)
  const next = old ? walkKeys<{ sha256: string }>(db, `SELECT sha256 FROM previous.static_bodies WHERE sha256 > ? ORDER BY sha256 LIMIT ?`, (r) => r.sha256) : async () => null
  const out = createAppender<[string, Buffer]>(
    (first, last) => db.run(`INSERT INTO static_bodies (sha256, body) SELECT sha256, body FROM previous.static_bodies WHERE sha256 BETWEEN ? AND ? ORDER BY sha256`, [first, last]).then(() => {}),
    (rows) => db.run(`INSERT INTO static_bodies (sha256, body) VALUES ${rows.map(() => '(?, ?)').join(', ')}`, rows.flat()).then(() => {}),
    BODY_BATCH,
  )
  let total = 0
  let reused = 0
  let lastSha = ''
  let prev = await next()
  try {
    for await (const { name, sha256 } of readBodyOrder(orderFile)) {
      if (sha256 === lastSha) continue
      lastSha = sha256
      total++
      while (prev && prev.sha256 < sha256) {
        await out.gap()
        prev = await next()
      }
      if (prev && prev.sha256 === sha256) {
        await out.copied(sha256)
        reused++
        prev = await next()
      } else await out.inserted([sha256, await reader.read(name, sha256)])
    }
    await out.finish()
  } finally {
    reader.close()
  }
  return { total, reused }
}

/**
 * `a` sorts before `b` in UTF-8 byte order: SQLite's BINARY collation, and `sort` in the C locale
 * (body-order.ts). JavaScript's `<` compares UTF-16 code units, which agree with it below U+D800.
 */
export function precedes(a: string, b: string): boolean {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    return x < 0xd800 && y < 0xd800 ? x < y : Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0
  }
  return a.length < b.length
}

/** Every API name into static_paths, in name order (its key): runs of names with the same body as in the previous snapshot copied from it. */
async function insertPaths(db: Db, pathOrderFile: string, old: boolean): Promise<{ total: number; reused: number }> {
  const next = old ? walkKeys<{ path: string; sha256: string }>(db, `SELECT path, sha256 FROM previous.static_paths WHERE path > ? ORDER BY path LIMIT ?`, (r) => r.path) : async () => null
  const out = createAppender<[string, string]>(
    (first, last) => db.run(`INSERT INTO static_paths (path, sha256) SELECT path, sha256 FROM previous.static_paths WHERE path BETWEEN ? AND ? ORDER BY path`, [first, last]).then(() => {}),
    (rows) => db.run(`INSERT INTO static_paths (path, sha256) SELECT value ->> 0, value ->> 1 FROM json_each(?)`, [JSON.stringify(rows)]).then(() => {}),
    PATH_BATCH,
  )
  let total = 0
  let reused = 0
  let prev = await next()
  for await (const { name, sha256 } of readBodyOrder(pathOrderFile)) {
    total++
    while (prev && precedes(prev.path, name)) {
      await out.gap()
      prev = await next()
    }
    if (prev && prev.path === name) {
      const same = prev.sha256 === sha256
      prev = await next()
      if (same) {
        await out.copied(name)
        reused++
        continue
      }
      // The name's body changed: the old row is left out.
      await out.gap()
    }
    await out.inserted([name, sha256])
  }
  await out.finish()
  return { total, reused }
}
