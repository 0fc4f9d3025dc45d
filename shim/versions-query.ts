/**
 * The SQL of the version endpoints: filtered, paged lists of a project's versions, bulk reads by id,
 * hash lookups and update matching. Every user value is a bound parameter (lists as one JSON array);
 * the SQL text is fixed. Versions are ordered by `rank` only (0 = newest by DESIGN's one ordering),
 * so the list, hash lookups and update matching cannot disagree on what "newest" means.
 */
import type { Db, SqlValue } from '../build/db/sqlite.ts'
import type { TargetFilters } from '../build/version-targets.ts'

/**
 * Filters of a versions list or an update: each list matches any of its values; lists AND together.
 * The type the catalog's version targets answer too (build/version-targets.ts), so update matching
 * reads the same filters in SQL and in memory.
 */
export type VersionFilters = TargetFilters

/** One page of a project's versions: stored Version JSON of its items, and the exact total. */
export interface VersionPage {
  items: string[]
  total: number
}

/**
 * Conditions on `v` (a versions row) for the filters; an absent filter binds NULL and matches all.
 * Shared by the versions list and update matching so both read a filter the same way.
 *
 * A game version or platform list of one value (as mod managers send them) first looks for the
 * value's JSON text, `"1.21.4"`, in the row's JSON array with `instr`, and only a row that has it is
 * read element by element (json_each), which decides. A version whose array holds the value holds
 * its text: the arrays are JSON.stringify's (build/load-records.ts), which writes a string with no
 * quote, backslash, control character or lone surrogate as `"` + itself + `"`, so only such values
 * are looked for this way (filterText). Update matching reads each project's versions newest first
 * until one matches, and json_each over each was most of its CPU: with the text first, about 20%
 * less CPU a 100-hash update check at the large catalog (bench/results/PROFILE.md, Session 24).
 */
const FILTER_SQL = `($channel IS NULL OR v.channel IN (SELECT value FROM json_each($channel)))
  AND ($gameVersion IS NULL OR (($gameVersionText IS NULL OR instr(v.game_versions, $gameVersionText) > 0)
    AND EXISTS (SELECT 1 FROM json_each(v.game_versions) g WHERE g.value IN (SELECT value FROM json_each($gameVersion)))))
  AND ($platform IS NULL OR (($platformText IS NULL OR instr(v.platforms, $platformText) > 0)
    AND EXISTS (SELECT 1 FROM json_each(v.platforms) k WHERE k.value IN (SELECT value FROM json_each($platform)))))`

/** What JSON.stringify writes as `"` + the string + `"`: no quote, backslash, control character or lone surrogate. */
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/

/** The JSON text of a filter list's one value, looked for first (FILTER_SQL); NULL for any other list. */
function filterText(values: readonly string[] | undefined): SqlValue {
  return values?.length === 1 && PLAIN_JSON_STRING.test(values[0]!) ? `"${values[0]}"` : null
}

function filterParams(filters: VersionFilters): Record<string, SqlValue> {
  const list = (values: readonly string[] | undefined): SqlValue => (values && values.length > 0 ? JSON.stringify(values) : null)
  return {
    $channel: list(filters.channel),
    $gameVersion: list(filters.gameVersion),
    $gameVersionText: filterText(filters.gameVersion),
    $platform: list(filters.platform),
    $platformText: filterText(filters.platform),
  }
}

/** Lists one page of a project's versions matching the filters, newest first, with the total. */
export async function listVersionPage(db: Db, projectId: string, filters: VersionFilters, page: number, limit: number): Promise<VersionPage> {
  const params = { ...filterParams(filters), $project: projectId }
  // The window count is computed before LIMIT, so one query gives the page and the exact total.
  const rows = await db.all<{ json: string; total: number }>(
    `SELECT v.json, count(*) OVER () AS total FROM versions v
     WHERE v.project_id = $project AND ${FILTER_SQL}
     ORDER BY v.rank LIMIT $limit OFFSET $offset`,
    { ...params, $limit: limit, $offset: (page - 1) * limit },
  )
  if (rows.length > 0) return { items: rows.map((r) => r.json), total: rows[0]!.total }
  if (page === 1) return { items: [], total: 0 }
  // A page past the end has no row to carry the window count.
  const count = await db.get<{ n: number }>(`SELECT count(*) AS n FROM versions v WHERE v.project_id = $project AND ${FILTER_SQL}`, params)
  return { items: [], total: count?.n ?? 0 }
}

/** Lists the stored JSON of visible versions by id, in the order asked; unknown ids are left out. */
export async function listVersionsByIds(db: Db, ids: readonly string[]): Promise<string[]> {
  const rows = await db.all<{ json: string }>(
    `SELECT v.json FROM json_each(?) j JOIN versions v ON v.id = j.value ORDER BY j.key`,
    [JSON.stringify(ids)],
  )
  return rows.map((r) => r.json)
}

/**
 * The project that owns each hash (lowercase SHA-1 or SHA-256). The build rejects a file shared by
 * two projects, so a hash names at most one project. The hash's length picks the one index that can
 * hold it (stored hashes are validated: sha256 64 and sha1 40 lowercase hex), so a SHA-1 never pays
 * a futile descent of files_sha256 first: about a seventh of the bulk update's CPU at the large
 * catalog (bench/results/PROFILE.md).
 */
const OWNER_SQL = `CASE length(r.value)
    WHEN 64 THEN (SELECT f.project_id FROM files f WHERE f.sha256 = r.value LIMIT 1)
    WHEN 40 THEN (SELECT f.project_id FROM files f WHERE f.sha1 = r.value LIMIT 1) END`

/** A requested hash and the JSON bytes found for it (a single lookup's `{"data":<Version>}`, or an update's `<Version>`). */
export interface HashLookup {
  hash: string
  body: Buffer
}

/**
 * Finds, for each hash, the newest version containing that file (the same rule the build uses to
 * pre-render `/version-files/{hash}`), as the bytes of that single lookup, `{"data":<Version>}`;
 * unknown hashes are left out, and the order is SQLite's (the caller maps the answers by hash: an
 * `ORDER BY` in the aggregate sorted the 100 KB of records first). SQLite makes the whole answer on its own
 * thread as one BLOB: each found hash followed by its single lookup (an unknown hash's record is
 * NULL, which group_concat leaves out, separator and all), the records apart by a NUL
 * byte, which no JSON text holds (RFC 8259 allows no raw control character in a string, and only
 * tab, line feed and carriage return between tokens). The bodies are views of that one Buffer.
 * Returned as a row per hash, each 1 KB version was decoded from UTF-8 into a string on the event
 * loop, wrapped and encoded back, and each row was an object node-sqlite3 built property by
 * property: at the large catalog about a third of a cache-off lookup's CPU on the event loop
 * (bench/results/PROFILE.md, Session 21). Through `all`, whose statements the shim's connections
 * keep prepared (`get` prepares its text on every call).
 *
 * The version's row is read by the rowid the hash index carries (files.version_rowid): at the large
 * catalog, with the cache off, about 18% less CPU a 100-hash lookup than through versions' id index
 * (bench/results/PROFILE.md, Session 22). A catalog built before it had that column
 * (`filesVersionRowid` false: shim/release.ts reads it at open) is joined by id, as it was built.
 */
export async function findSingleLookupsByHashes(db: Db, hashes: readonly string[], filesVersionRowid: boolean): Promise<HashLookup[]> {
  const [row] = await db.all<{ records: Buffer | null }>(filesVersionRowid ? SINGLE_LOOKUPS_SQL : SINGLE_LOOKUPS_BY_ID_SQL, { $hashes: JSON.stringify(hashes) })
  return splitHashRecords(row?.records ?? null)
}

/** findSingleLookupsByHashes' query, joining the version as `join` says. */
function singleLookupsSql(join: string): string {
  return `SELECT CAST(group_concat(hash || body, char(0)) AS BLOB) AS records FROM (
       SELECT r.value AS hash, '{"data":' || CASE length(r.value)
         WHEN 64 THEN (SELECT v.json FROM files f JOIN versions v ON ${join} WHERE f.sha256 = r.value ORDER BY v.rank LIMIT 1)
         WHEN 40 THEN (SELECT v.json FROM files f JOIN versions v ON ${join} WHERE f.sha1 = r.value ORDER BY v.rank LIMIT 1) END || '}' AS body
       FROM json_each($hashes) r
     )`
}

const SINGLE_LOOKUPS_SQL = singleLookupsSql('v.rowid = f.version_rowid')
const SINGLE_LOOKUPS_BY_ID_SQL = singleLookupsSql('v.id = f.version_id')

const OPEN_BRACE = 0x7b

/** A single lookup's bytes as SQL found them, and their ETag when the catalog stored it (versions.body_etag). */
export interface RowidLookup {
  body: Buffer
  etag: string | undefined
}

/**
 * The single lookups `{"data":<Version>}` of the versions of these rowids (the candidates the
 * catalog's hash index gave: build/hash-index.ts), by rowid; a rowid of no version is left out.
 * Made as findSingleLookupsByHashes' answer is, one BLOB on SQLite's thread, each record
 * `<rowid><ETag>{"data":<Version>}` (the ETag the build stored, `"<hex>-<hex>"`; none when
 * `bodyEtag` is false: a catalog built before versions.body_etag), apart by NUL bytes; each body a
 * view of it. The rows are read in rowid order (SQLite sorts the `IN` list), each once however many
 * of the hashes it holds. At the large catalog, with the cache off, the query alone took a little
 * over half the CPU of finding the versions through the files' hash indexes; with the stored ETag
 * no body is hashed on the event loop (bench/results/PROFILE.md, Session 24).
 */
export async function findSingleLookupsByRowids(db: Db, rowids: readonly number[], bodyEtag: boolean): Promise<Map<number, RowidLookup>> {
  const [row] = await db.all<{ records: Buffer | null }>(bodyEtag ? LOOKUPS_BY_ROWID_SQL : LOOKUPS_BY_ROWID_NO_ETAG_SQL, { $rowids: JSON.stringify(rowids) })
  return splitRowidRecords(row?.records ?? null)
}

/** findSingleLookupsByRowids' query, each record starting with the rowid and then `etag`. */
function lookupsByRowidSql(etag: string): string {
  return `SELECT CAST(group_concat(v.rowid || ${etag} || '{"data":' || v.json || '}', char(0)) AS BLOB) AS records
    FROM versions v WHERE v.rowid IN (SELECT value FROM json_each($rowids))`
}

const LOOKUPS_BY_ROWID_SQL = lookupsByRowidSql(`coalesce(v.body_etag, '')`)
const LOOKUPS_BY_ROWID_NO_ETAG_SQL = lookupsByRowidSql(`''`)

const QUOTE = 0x22

/**
 * The records of a BLOB made by group_concat(rowid || etag || json, char(0)), by rowid, the etag
 * (`"..."`) there or not; each body a view of the BLOB.
 */
export function splitRowidRecords(records: Buffer | null): Map<number, RowidLookup> {
  const out = new Map<number, RowidLookup>()
  if (records === null) return out
  for (let at = 0; at < records.length; ) {
    const next = records.indexOf(0, at)
    const end = next < 0 ? records.length : next
    let rowid = 0
    let i = at
    for (let c = records[i]!; c >= 0x30 && c <= 0x39; c = records[++i]!) rowid = rowid * 10 + (c - 0x30)
    const digits = i - at
    let etag: string | undefined
    if (records[i] === QUOTE) {
      const close = records.indexOf(QUOTE, i + 1)
      if (close < 0 || close >= end) throw new Error(`a rowid lookup's record at byte ${at} has an unclosed ETag`)
      etag = records.toString('latin1', i, close + 1)
      i = close + 1
    }
    if (digits === 0 || records[i] !== OPEN_BRACE || records[end - 1] !== 0x7d) throw new Error(`a rowid lookup's record at byte ${at} is not a rowid, an ETag and a JSON object`)
    out.set(rowid, { body: records.subarray(i, end), etag })
    at = end + 1
  }
  return out
}

/**
 * The records of a BLOB made by group_concat(hash || json, char(0)): `<hash><JSON object>`, apart by
 * NUL bytes; each object a view of the BLOB.
 */
export function splitHashRecords(records: Buffer | null): HashLookup[] {
  const out: HashLookup[] = []
  if (records === null) return out
  for (let at = 0; at < records.length; ) {
    const next = records.indexOf(0, at)
    const end = next < 0 ? records.length : next
    // The hash is 40 or 64 hex characters, so the body's `{` follows at one of those two places.
    const length = records[at + 40] === OPEN_BRACE ? 40 : 64
    if (records[at + length] !== OPEN_BRACE || records[end - 1] !== 0x7d) throw new Error(`a hash lookup's record at byte ${at} is not a hash and a JSON object`)
    out.push({ hash: records.toString('latin1', at, at + length), body: records.subarray(at + length, end) })
    at = end + 1
  }
  return out
}

/**
 * Update matching for each hash: the newest version of the file's own project that matches every
 * filter — the installed version itself when it is the newest; left out when nothing matches or
 * the hash is unknown; the request order is kept. The single and the bulk endpoint both call this,
 * so they always agree. Made as one BLOB, as findSingleLookupsByHashes' (each record
 * `<hash><Version>`), in the request's order.
 */
export async function findUpdatesByHashes(db: Db, hashes: readonly string[], filters: VersionFilters): Promise<HashLookup[]> {
  const [row] = await db.all<{ records: Buffer | null }>(
    `SELECT CAST(group_concat(hash || json, char(0) ORDER BY key) AS BLOB) AS records FROM (
       SELECT o.key, o.hash, (
         SELECT v.json FROM versions v WHERE v.project_id = o.project_id AND ${FILTER_SQL} ORDER BY v.rank LIMIT 1
       ) AS json
       FROM (SELECT r.key, r.value AS hash, ${OWNER_SQL} AS project_id FROM json_each($hashes) r) o
     )`,
    { ...filterParams(filters), $hashes: JSON.stringify(hashes) },
  )
  return splitHashRecords(row?.records ?? null)
}

/**
 * The stored Version JSON of the versions of these rowids, by rowid; a rowid of no version is left
 * out. One BLOB, as findSingleLookupsByRowids' (each record `<rowid><Version>`).
 */
export async function findVersionsByRowids(db: Db, rowids: readonly number[]): Promise<Map<number, Buffer>> {
  const [row] = await db.all<{ records: Buffer | null }>(
    `SELECT CAST(group_concat(v.rowid || v.json, char(0)) AS BLOB) AS records
     FROM versions v WHERE v.rowid IN (SELECT value FROM json_each($rowids))`,
    { $rowids: JSON.stringify(rowids) },
  )
  const out = new Map<number, Buffer>()
  for (const [rowid, found] of splitRowidRecords(row?.records ?? null)) out.set(rowid, found.body)
  return out
}
