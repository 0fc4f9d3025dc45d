/**
 * The SQL of the version endpoints: filtered, paged lists of a project's versions, bulk reads by id,
 * hash lookups and update matching. Every user value is a bound parameter (lists as one JSON array);
 * the SQL text is fixed. Versions are ordered by `rank` only (0 = newest by DESIGN's one ordering),
 * so the list, hash lookups and update matching cannot disagree on what "newest" means.
 */
import type { Db, SqlValue } from '../build/db/sqlite.ts'

/** Filters of a versions list or an update: each list matches any of its values; lists AND together. */
export interface VersionFilters {
  channel?: readonly string[] | undefined
  gameVersion?: readonly string[] | undefined
  platform?: readonly string[] | undefined
}

/** One page of a project's versions: stored Version JSON of its items, and the exact total. */
export interface VersionPage {
  items: string[]
  total: number
}

/** A requested hash and the stored JSON of the version it resolves to. */
export interface HashMatch {
  hash: string
  json: string
}

/**
 * Conditions on `v` (a versions row) for the filters; an absent filter binds NULL and matches all.
 * Shared by the versions list and update matching so both read a filter the same way.
 */
const FILTER_SQL = `($channel IS NULL OR v.channel IN (SELECT value FROM json_each($channel)))
  AND ($gameVersion IS NULL OR EXISTS (SELECT 1 FROM json_each(v.game_versions) g WHERE g.value IN (SELECT value FROM json_each($gameVersion))))
  AND ($platform IS NULL OR EXISTS (SELECT 1 FROM json_each(v.platforms) k WHERE k.value IN (SELECT value FROM json_each($platform))))`

function filterParams(filters: VersionFilters): Record<string, SqlValue> {
  const list = (values: readonly string[] | undefined): SqlValue => (values && values.length > 0 ? JSON.stringify(values) : null)
  return { $channel: list(filters.channel), $gameVersion: list(filters.gameVersion), $platform: list(filters.platform) }
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

/**
 * Finds, for each hash, the newest version containing that file (the same rule the build uses to
 * pre-render `/version-files/{hash}`); unknown hashes are left out, the request order is kept.
 */
export async function findVersionsByHashes(db: Db, hashes: readonly string[]): Promise<HashMatch[]> {
  const rows = await db.all<{ hash: string; json: string | null }>(
    `SELECT r.value AS hash, CASE length(r.value)
       WHEN 64 THEN (SELECT v.json FROM files f JOIN versions v ON v.id = f.version_id WHERE f.sha256 = r.value ORDER BY v.rank LIMIT 1)
       WHEN 40 THEN (SELECT v.json FROM files f JOIN versions v ON v.id = f.version_id WHERE f.sha1 = r.value ORDER BY v.rank LIMIT 1) END AS json
     FROM json_each($hashes) r ORDER BY r.key`,
    { $hashes: JSON.stringify(hashes) },
  )
  return presentMatches(rows)
}

/**
 * Update matching for each hash: the newest version of the file's own project that matches every
 * filter — the installed version itself when it is the newest; left out when nothing matches or
 * the hash is unknown. The single and the bulk endpoint both call this, so they always agree.
 */
export async function findUpdatesByHashes(db: Db, hashes: readonly string[], filters: VersionFilters): Promise<HashMatch[]> {
  const rows = await db.all<{ hash: string; json: string | null }>(
    `SELECT o.hash, (
       SELECT v.json FROM versions v WHERE v.project_id = o.project_id AND ${FILTER_SQL} ORDER BY v.rank LIMIT 1
     ) AS json
     FROM (SELECT r.key, r.value AS hash, ${OWNER_SQL} AS project_id FROM json_each($hashes) r) o
     WHERE o.project_id IS NOT NULL ORDER BY o.key`,
    { ...filterParams(filters), $hashes: JSON.stringify(hashes) },
  )
  return presentMatches(rows)
}

function presentMatches(rows: { hash: string; json: string | null }[]): HashMatch[] {
  const out: HashMatch[] = []
  for (const r of rows) if (r.json !== null) out.push({ hash: r.hash, json: r.json })
  return out
}
