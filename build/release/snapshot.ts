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
 * thread), and inserts only the rest. The names go by the manifest's change list when the seal has
 * one (the names added, changed and removed since the previous release, sorted by name): the runs
 * between two changed names are copied whole, without walking the previous snapshot's five million
 * keys or sorting the release's names at all (the path order); else by a merge of the path order
 * with the previous snapshot's keys. Either way the rows go in in the same order, and SQLite lays
 * out a table filled in key order by what is inserted, not by where it came from, so the file is the
 * same bytes as one written from the bodies alone (test/snapshot-reuse.test.ts). At the large
 * catalog a rebuild's snapshot took 22–35 s alone instead of about 60 (bench/results/BUILD-PROFILE.md,
 * "The snapshot copied from the previous one"). The
 * previous file is used only when its size, format and SHA-256 are those its release gives (the hash
 * is the one the build took ahead, while the catalog was written, if stat says the file was not
 * written since, before or during the copy; else it is taken beside the copy; on a mismatch the copy
 * is thrown away and the snapshot written again from the bodies).
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
import { readOrderLines, WIDE, type BodyName } from './body-order.ts'
import { openBodyReader, type BodyPackFiles } from './body-pack.ts'
import { BUILD_CACHE_KIB } from '../db/schema.ts'
import { fileIdentity, hashFile, sameIdentity, type FileHash, type HashedAhead } from './hash-file.ts'
import { fsyncPath } from './publish.ts'

/** Schema of the tables a snapshot adds to the catalog. */
export const snapshotSchema = `
  CREATE TABLE static_paths (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE static_bodies (sha256 TEXT PRIMARY KEY, body BLOB NOT NULL);
  CREATE TABLE snapshot_info (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
`

/**
 * The record, in a release's folder, of its snapshot's SHA-256 and size with the file's identity once
 * sealed (hash-file.ts recordHash): the next build trusts that hash while stat gives the file the same
 * identity, instead of reading the 6.4 GB again to hash it (bench/results/BUILD-PROFILE.md, Session 56).
 */
export const SNAPSHOT_HASH_RECORD = 'snapshot-hash.json'

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
  /**
   * Its SHA-256 as the build that sealed it recorded it (recordedHash, `recorded`), or as this build
   * took it ahead, while the catalog was written (hashAhead): used while the file keeps the identity
   * it had then, instead of hashing its gigabytes again in the seal.
   */
  hashed?: HashedAhead | null
}

/** What writeSnapshot wrote: the file's SHA-256 and size, and what it copied from the previous snapshot. */
export interface WrittenSnapshot extends FileHash {
  /** Distinct bodies in the snapshot, and of those copied from the previous snapshot. */
  bodies: number
  reusedBodies: number
  /** Names in the snapshot, and of those copied from the previous snapshot. */
  paths: number
  reusedPaths: number
  /** The names were copied by the change list (runs between changed names), not by walking the previous snapshot's keys. */
  namesByChanges: boolean
  /** The previous snapshot's bytes were vouched for by the SHA-256 the build took ahead or found recorded (not hashed again). */
  hashedAhead: boolean
  /** That SHA-256 was the one recorded when the previous snapshot was sealed (recordHash): this build did not read the file to hash it. */
  hashRecorded: boolean
  /** Its catalog pages came from the copy the build made during the render (not copied in the seal). */
  catalogAhead: boolean
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

/** The names could not be had (the path order not sorted, the change list not written): the snapshot fails whatever it is written from. */
class NamesUnavailable extends Error {}

/** A file given now, when it is ready, or when asked for (a sort started only when it is needed). */
export type Later<T> = T | Promise<T> | (() => Promise<T>)

/** The file of a Later, once it is there. */
export function settle<T>(later: Later<T>): Promise<T> {
  return typeof later === 'function' ? (later as () => Promise<T>)() : Promise.resolve(later)
}

/** Awaits a file the names are read from; its failure is the snapshot's (NamesUnavailable), never a reason to write it again from scratch. */
async function namesFrom<T>(later: Later<T>): Promise<T> {
  try {
    return await settle(later)
  } catch (err) {
    throw new NamesUnavailable((err as Error).message)
  }
}

/**
 * Writes `target` from the release's catalog.sqlite (of SHA-256 `catalogSha256`; `sources.catalogCopy`, when
 * given, is a copy of it made ahead, taken instead of copying it again), the body order
 * `orderFile` and the same names sorted by name, `pathOrderFile` (body-order.ts; given as a promise
 * when it is still being sorted, or as a function that starts the sort: the bodies go in first, and
 * only the names wait for it, and only when they are not taken from `sources.nameChanges`), reading the
 * bodies from `sources.pack` (the build's body pack) or, when null, the release's tree, and copying
 * what `sources.previous` already holds. Returns the written file's SHA-256 and size: hashed while quick_check
 * reads it (the file's bytes are final once the transaction commits; the check only reads), so the
 * hash of 6.3 GB at the large catalog runs beside the check, on the other core, instead of after it.
 */
export async function writeSnapshot(
  releaseDir: string,
  orderFile: string,
  pathOrderFile: Later<string>,
  target: string,
  catalogSha256: string,
  { pack = null, previous = null, catalogCopy = null, nameChanges = null }: SnapshotSources = {},
): Promise<WrittenSnapshot> {
  // Files still coming are awaited once the bodies are in; a failure meanwhile is not an unhandled rejection.
  for (const later of [pathOrderFile, nameChanges]) if (later instanceof Promise) later.catch(() => {})
  const write = (from: PreviousSnapshot | null, notReused?: string): Promise<WrittenSnapshot> =>
    writeSnapshotFrom(releaseDir, orderFile, pathOrderFile, target, catalogSha256, { pack, previous: from, catalogCopy, nameChanges }, notReused)
  const unusable = previous ? checkPrevious(previous) : null
  if (!previous || unusable) return write(null, unusable ?? undefined)
  try {
    return await write(previous)
  } catch (err) {
    // Names that could not be had fail the snapshot whatever it is written from.
    if (err instanceof NamesUnavailable) throw err
    // A previous snapshot whose bytes changed, or that SQLite could not read: the copy is gone
    // (writeSnapshotFrom removes it) and the snapshot is written from the bodies alone. A fault of
    // its own (an order file missing, the disk full) fails that write too.
    return write(null, err instanceof PreviousSnapshotChanged ? err.message : `copying from ${previous.snapshot} failed (${(err as Error).message})`)
  }
}

/**
 * Where a snapshot's parts come from beyond the release folder (all optional; the snapshot worker
 * takes them as one JSON argument, snapshot-worker.ts): the build's body pack (else the tree), the
 * previous release's snapshot to copy from, the copy of catalog.sqlite made ahead, and the names
 * changed since the previous release (collectNameChanges, name-changes.ts; null: none known, or too
 * many to be worth it), taken only with the previous snapshot.
 */
export interface SnapshotSources {
  pack?: BodyPackFiles | null
  previous?: PreviousSnapshot | null
  catalogCopy?: string | null
  nameChanges?: Later<string | null>
}

async function writeSnapshotFrom(
  releaseDir: string,
  orderFile: string,
  pathOrderFile: Later<string>,
  target: string,
  catalogSha256: string,
  { pack = null, previous = null, catalogCopy = null, nameChanges = null }: SnapshotSources,
  notReused: string | undefined,
): Promise<WrittenSnapshot> {
  const tmp = `${target}.tmp`
  rmSync(tmp, { force: true })
  // The copy of catalog.sqlite the build made during the render is taken (once: a second attempt
  // finds it gone); else copied now, by copy_file_range: the kernel copies the pages, where SQLite
  // would read and write each one itself.
  const catalogAhead = catalogCopy !== null && existsSync(catalogCopy)
  if (catalogAhead) renameSync(catalogCopy, tmp)
  else copyFileSync(path.join(releaseDir, 'catalog.sqlite'), tmp)
  const db = await openDb(tmp, { uri: true })
  // A second, read-only connection walks the previous snapshot's keys while the first copies and
  // inserts: on one connection each page of keys waited behind the statements (4 of 11 s for the
  // names at the large catalog).
  let walker: Db | null = null
  let written: WrittenSnapshot
  try {
    await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; ${snapshotSchema} BEGIN;`)
    await db.run(`INSERT INTO snapshot_info VALUES ('catalogSha256', ?), ('format', ?)`, [catalogSha256, SNAPSHOT_FORMAT])
    let verified: Promise<string | null> = Promise.resolve(null)
    let hashedAhead = false
    if (previous) {
      walker = await openDb(previous.snapshot, { readonly: true })
      const format = await walker.get<{ value: string }>(`SELECT value FROM snapshot_info WHERE key = 'format'`).catch(() => undefined)
      if (format?.value === SNAPSHOT_FORMAT) {
        // Read-only: the previous snapshot is a published file of the live release.
        await db.run(`ATTACH DATABASE ? AS previous`, [`${pathToFileURL(previous.snapshot).href}?mode=ro`])
        // Hashed ahead or beside the copy; a mismatch throws the copy away (writeSnapshot writes it again from the bodies).
        const check = verifyPrevious(previous)
        hashedAhead = check.ahead
        verified = check.verdict
        verified.catch(() => {})
        // Known at once from the hash taken ahead: nothing is copied from a file that is not the one its release gives.
        const wrong = hashedAhead ? await verified : null
        if (wrong) throw new PreviousSnapshotChanged(wrong)
      } else {
        notReused = `${previous.snapshot} is not a snapshot of format ${SNAPSHOT_FORMAT}`
        await walker.close()
        walker = null
      }
    }
    const bodies = await insertBodies(db, walker, releaseDir, orderFile, pack)
    // Beside the previous snapshot, by the change list when the seal has one (asked for only now: the
    // manifest makes it); else by the path order, which may still be being sorted, or not yet started.
    const changes = walker ? await namesFrom(nameChanges) : null
    let paths: { total: number; reused: number }
    if (changes !== null) {
      paths = await insertPathsByChanges(db, changes)
      // The runs copied whole are the previous snapshot's: they and the changes must make every name of the release.
      if (paths.total !== bodies.names) {
        throw new PreviousSnapshotChanged(`${previous!.snapshot} and the change list give ${paths.total} names, the release ${bodies.names}`)
      }
    } else paths = await insertPaths(db, walker, await namesFrom(pathOrderFile))
    const changed = await verified
    if (changed) throw new PreviousSnapshotChanged(changed)
    // The hash taken ahead vouches for the bytes only if nothing wrote the file while it was copied.
    if (hashedAhead && !sameIdentity(previous!.hashed!.identity, fileIdentity(previous!.snapshot))) {
      throw new PreviousSnapshotChanged(`${previous!.snapshot} was written to while it was copied`)
    }
    await db.exec(`COMMIT; PRAGMA journal_mode = DELETE;`)
    if (walker) {
      await db.exec(`DETACH DATABASE previous`)
      await walker.close()
      walker = null
    }
    const [hashed] = await Promise.all([hashFile(tmp), checkSnapshot(db)])
    written = { ...hashed, bodies: bodies.total, reusedBodies: bodies.reused, paths: paths.total, reusedPaths: paths.reused, namesByChanges: changes !== null, hashedAhead, hashRecorded: hashedAhead && previous!.hashed?.recorded === true, catalogAhead, notReused, note: '' }
    written.note = describeReuse(written, previous !== null)
  } catch (err) {
    await walker?.close().catch(() => {})
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

/** One line for the build's log: how much of the previous snapshot a rebuild copied (`hadPrevious`: one was opened). */
function describeReuse(w: WrittenSnapshot, hadPrevious: boolean): string {
  const catalog = w.catalogAhead ? 'its catalog from the copy made during the render' : 'its catalog copied in the seal'
  if (w.notReused) return `${catalog}; the previous snapshot was not reused: ${w.notReused}`
  if (!hadPrevious) return `${catalog}; no previous snapshot: ${w.bodies} bodies and ${w.paths} names inserted`
  const checked = w.hashRecorded ? 'by the SHA-256 recorded when it was sealed' : w.hashedAhead ? 'by the SHA-256 the build took ahead' : 'by its SHA-256, taken beside the copy'
  const by = w.namesByChanges ? ', the names by the change list' : ''
  return `${catalog}; ${w.reusedBodies} of ${w.bodies} bodies and ${w.reusedPaths} of ${w.paths} names copied from the previous snapshot${by} (checked ${checked})`
}

/**
 * Whether the previous snapshot is the file its release gives (`verdict` null) or why not: from the
 * hash the build took ahead while the file has the identity it had then (`ahead`), else hashed now.
 */
export function verifyPrevious(previous: PreviousSnapshot): { ahead: boolean; verdict: Promise<string | null> } {
  const judge = (h: FileHash): string | null =>
    h.sha256 === previous.expected.sha256 && h.size === previous.expected.size ? null : `${previous.snapshot} is not the file its release gives (SHA-256 ${h.sha256})`
  const ahead = previous.hashed
  if (ahead && ahead.file === previous.snapshot && sameIdentity(ahead.identity, fileIdentity(previous.snapshot))) return { ahead: true, verdict: Promise.resolve(judge(ahead)) }
  return { ahead: false, verdict: hashFile(previous.snapshot).then(judge) }
}

/**
 * A table of the previous snapshot in key order, a page of rows at a time (one string a page, split
 * here into its rows: millions of row objects from the binding cost seconds). `sql` takes the last
 * key of the previous page and the page size, and gives `page` (the rows as text, joined by line
 * ends: keys and SHA-256s hold none) and `last`, the page's last key.
 */
function walkPages(db: Db, sql: string) {
  let rows: string[] = []
  let at = 0
  let after = ''
  let done = false
  let wide = false
  return {
    /** The current row, or null after the last; call `fill` first when `empty`. */
    get row(): string | null {
      return at < rows.length ? rows[at]! : null
    },
    get empty(): boolean {
      return at === rows.length && !done
    },
    /** The page holds a character where `<` and byte order may disagree. */
    get wide(): boolean {
      return wide
    },
    advance(): void {
      at++
    },
    async fill(): Promise<void> {
      const page = await db.get<{ page: string | null; last: string | null }>(sql, [after, KEY_PAGE])
      at = 0
      rows = page?.page ? page.page.split('\n') : []
      wide = page?.page ? WIDE.test(page.page) : false
      // group_concat joins the rows in the order the subquery gives them, which SQLite does not
      // promise; its own ORDER BY would sort every page again (2 of the 4 s of a walk over the
      // large catalog's names). Checked here instead: the merge needs key order.
      for (let i = 1; i < rows.length; i++) if (!(wide ? precedes(rows[i - 1]!, rows[i]!) : rows[i - 1]! < rows[i]!)) throw new Error(`previous snapshot: rows out of key order at ${rows[i]}`)
      if (rows.length < KEY_PAGE) done = true
      if (page?.last) after = page.last
    },
  }
}

/** No previous snapshot: a walk with no rows. */
const NO_PAGES = { row: null, empty: false, wide: false, advance: () => {}, fill: async () => {} }

/** A statement of the appender: SQL with its values bound, or SQL alone (its values written in it). */
interface Append {
  sql: string
  params?: SqlValue[]
}

/** A string as an SQL literal. */
function sqlText(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/**
 * Rows of a table appended in key order: runs of consecutive rows the previous snapshot holds as
 * they are, copied by key range (`copy`), and the others inserted in batches (`insert`). The
 * statements are queued in that order and run one after another by `drain`, so the table fills as
 * if every row had been inserted. The caller's loop over millions of names stays synchronous and
 * goes on to its next batch while SQLite runs the last one's statements on the binding's thread;
 * those without bound values go as one script (`exec`): a statement at a time, each waited for on
 * this thread, left SQLite idle while the loop ran, and the names took 10 s instead of 4 at the
 * large catalog.
 */
function createAppender<R>(db: Db, copy: (first: string, last: string) => string, insert: (rows: R[]) => Promise<Append>, batch: number) {
  let run: [string, string] | null = null
  let rows: R[] = []
  let queued: (() => Promise<Append>)[] = []
  let running: Promise<void> = Promise.resolve()
  const endRun = (): void => {
    if (!run) return
    const sql = copy(run[0], run[1])
    queued.push(async () => ({ sql }))
    run = null
  }
  const endRows = (): void => {
    if (rows.length === 0) return
    const batchRows = rows
    queued.push(() => insert(batchRows))
    rows = []
  }
  const runAll = async (statements: (() => Promise<Append>)[]): Promise<void> => {
    let script: string[] = []
    for (const statement of statements) {
      const { sql, params } = await statement()
      if (!params) {
        script.push(sql)
        continue
      }
      if (script.length > 0) await db.exec(script.join(';\n'))
      script = []
      await db.run(sql, params)
    }
    if (script.length > 0) await db.exec(script.join(';\n'))
  }
  return {
    /** Appends the previous snapshot's row of `key`, which must follow the last one copied (else call `gap` first). */
    copied(key: string): void {
      endRows()
      if (run) run[1] = key
      else run = [key, key]
    },
    /** A row of the previous snapshot left out: the run copied so far ends before it. */
    gap: endRun,
    inserted(row: R): void {
      endRun()
      rows.push(row)
      if (rows.length >= batch) endRows()
    },
    /**
     * Starts the statements queued so far, after those of the last call; resolves when the last
     * call's have run (at most two batches' statements in flight; a failure rejects a later call).
     */
    async drain(): Promise<void> {
      const statements = queued
      queued = []
      const before = running
      running = before.then(() => runAll(statements))
      // Rejections surface through the next drain or finish, not as unhandled meanwhile.
      running.catch(() => {})
      await before
    },
    async finish(): Promise<void> {
      endRun()
      endRows()
      await this.drain()
      await running
    },
  }
}

/**
 * Each distinct body once into static_bodies, in the body order (by SHA-256: its key): copied from
 * the previous snapshot where it has the body (`walker` reads that snapshot; null: none), else read
 * from the pack or the tree.
 */
async function insertBodies(db: Db, walker: Db | null, releaseDir: string, orderFile: string, pack: BodyPackFiles | null): Promise<{ total: number; reused: number; names: number }> {
  const reader = openBodyReader(releaseDir, pack)
  const prev = walker
    ? walkPages(walker, `SELECT group_concat(sha256, char(10)) AS page, max(sha256) AS last FROM (SELECT sha256 FROM static_bodies WHERE sha256 > ? ORDER BY sha256 LIMIT ?)`)
    : NO_PAGES
  const out = createAppender<BodyName>(
    db,
    (first, last) => `INSERT INTO static_bodies (sha256, body) SELECT sha256, body FROM previous.static_bodies WHERE sha256 BETWEEN ${sqlText(first)} AND ${sqlText(last)} ORDER BY sha256`,
    async (rows) => {
      // Read when the statement is made: the pack is read in SHA-256 order, as the statements are.
      const bodies: Buffer[] = []
      for (const { name, sha256 } of rows) bodies.push(await reader.read(name, sha256))
      const sql = `INSERT INTO static_bodies (sha256, body) VALUES `
      // Beside a previous snapshot the few new bodies go in scripts, as hex; without one, every body is bound.
      if (walker) return { sql: sql + rows.map((r, i) => `(${sqlText(r.sha256)}, X'${bodies[i]!.toString('hex')}')`).join(', ') }
      return { sql: sql + rows.map(() => '(?, ?)').join(', '), params: rows.flatMap((r, i) => [r.sha256, bodies[i]!]) }
    },
    BODY_BATCH,
  )
  let total = 0
  let reused = 0
  let names = 0
  let lastSha = ''
  try {
    for await (const { lines } of readOrderLines(orderFile)) {
      names += lines.length
      for (const line of lines) {
        // name \t sha256 \t size; the names of one body are adjacent.
        const tab = line.indexOf('\t')
        if (line.startsWith(lastSha, tab + 1) && lastSha !== '') continue
        const sha256 = line.slice(tab + 1, tab + 65)
        lastSha = sha256
        total++
        for (;;) {
          if (prev.empty) await prev.fill()
          const row = prev.row
          if (row === null || row >= sha256) break
          // A body the previous snapshot has and this one does not.
          out.gap()
          prev.advance()
        }
        if (prev.row === sha256) {
          out.copied(sha256)
          reused++
          prev.advance()
        } else out.inserted({ name: line.slice(0, tab), sha256 })
      }
      await out.drain()
    }
    await out.finish()
  } finally {
    await reader.close()
  }
  return { total, reused, names }
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

/** The name of a key `name \t sha256`. */
function nameOf(key: string): string {
  return key.slice(0, key.indexOf('\t'))
}

/** Every API name into static_paths, in name order (its key): runs of names with the same body as in the previous snapshot copied from it. */
async function insertPaths(db: Db, walker: Db | null, pathOrderFile: string): Promise<{ total: number; reused: number }> {
  const prev = walker
    ? walkPages(
        walker,
        `SELECT group_concat(path || char(9) || sha256, char(10)) AS page, max(path) AS last FROM (SELECT path, sha256 FROM static_paths WHERE path > ? ORDER BY path LIMIT ?)`,
      )
    : NO_PAGES
  const out = createAppender<[string, string]>(
    db,
    (first, last) => `INSERT INTO static_paths (path, sha256) SELECT path, sha256 FROM previous.static_paths WHERE path BETWEEN ${sqlText(nameOf(first))} AND ${sqlText(nameOf(last))} ORDER BY path`,
    async (rows) =>
      walker
        ? { sql: `INSERT INTO static_paths (path, sha256) VALUES ${rows.map(([name, sha256]) => `(${sqlText(name)}, ${sqlText(sha256)})`).join(', ')}` }
        : { sql: `INSERT INTO static_paths (path, sha256) SELECT value ->> 0, value ->> 1 FROM json_each(?)`, params: [JSON.stringify(rows)] },
    PATH_BATCH,
  )
  let total = 0
  let reused = 0
  for await (const { lines, wide } of readOrderLines(pathOrderFile)) {
    for (const line of lines) {
      // The row's key and value as the previous snapshot's page gives them: name \t sha256. Whole
      // keys compare as their names would (a tab sorts before any character of a name), and are
      // equal only when the name kept its body.
      const key = line.slice(0, line.lastIndexOf('\t'))
      total++
      for (;;) {
        if (prev.empty) await prev.fill()
        const row = prev.row
        if (row === null || !(wide || prev.wide ? precedes(row, key) : row < key)) break
        // A name the previous snapshot has and this one does not, or had with another body.
        out.gap()
        prev.advance()
      }
      if (prev.row === key) {
        out.copied(key)
        reused++
        prev.advance()
      } else {
        const tab = key.indexOf('\t')
        out.inserted([key.slice(0, tab), key.slice(tab + 1)])
      }
    }
    await out.drain()
  }
  await out.finish()
  return { total, reused }
}

/**
 * Every API name into static_paths, in name order, from the previous snapshot and the change list
 * `changesFile` (name-changes.ts: a line per name added, changed or removed since the previous
 * release, sorted by name; `name \t sha256`, or the name alone when it was removed): the run of the
 * previous snapshot's names between two changed names is copied whole, and each changed name goes in
 * with its new body. The rows go in in the order insertPaths gives them. Returns how many names went
 * in, counted by SQLite (the caller checks them against the release's), and of those copied.
 */
async function insertPathsByChanges(db: Db, changesFile: string): Promise<{ total: number; reused: number }> {
  const count = async (): Promise<number> => (await db.get<{ n: number }>(`SELECT total_changes() AS n`))!.n
  const before = await count()
  const copy = (after: string, until: string | null): string =>
    `INSERT INTO static_paths (path, sha256) SELECT path, sha256 FROM previous.static_paths WHERE path > ${sqlText(after)}${until === null ? '' : ` AND path < ${sqlText(until)}`} ORDER BY path`
  let after = ''
  let inserted = 0
  for await (const { lines } of readOrderLines(changesFile)) {
    const script: string[] = []
    for (const line of lines) {
      const tab = line.indexOf('\t')
      const name = tab < 0 ? line : line.slice(0, tab)
      script.push(copy(after, name))
      if (tab >= 0) {
        script.push(`INSERT INTO static_paths (path, sha256) VALUES (${sqlText(name)}, ${sqlText(line.slice(tab + 1))})`)
        inserted++
      }
      after = name
    }
    await db.exec(script.join(';\n'))
  }
  await db.exec(copy(after, null))
  const total = (await count()) - before
  return { total, reused: total - inserted }
}
