/**
 * The previous release's versions' JSON (and its projects' rows: copyProjectRows), reused by a
 * rebuild. Rendering a million versions' JSON (parse the source, resolve the dependencies,
 * stringify, hash the body) took 33 s of one core at the large catalog, whatever the change
 * (bench/results/BUILD-PROFILE.md, Session 28). A version's
 * JSON depends only on:
 * - its source record (and so its files and its own dependency list),
 * - its downloads (source plus the download counters),
 * - for each dependency, the project it resolves to (id, slug, name, type, and whether it is
 *   visible) and whether the version it names is visible,
 * - the build's code and its base URLs.
 *
 * So a rebuild copies `json`, `body_etag` and `body_sha256` from the previous release's catalog for
 * every version whose inputs are the same (as it inserts the versions: catalog.ts writeVisibleRows;
 * settleVersionJson drops them again where another input changed), and renders the others as a full
 * build does. "The same" is decided without reading the million sources:
 * - The load records in staging (`s_touched`) the ids of every record of a file it read again or
 *   dropped, with the version's project before and after (load.ts).
 * - A version is rendered again when it was touched; when its downloads differ from the previous
 *   catalog's; when it is not in the previous catalog; or when one of its dependency rows, in
 *   either catalog, points at a project whose (slug, name, type) differ or which is visible in one
 *   catalog only, or at a project one of whose versions was touched (a dependency that names a
 *   version resolves through that version's project and visibility: both can change only by
 *   touching the version or its project).
 * - A touched reference file (catalog.json, categories, types, game versions) turns the reuse off.
 *
 * What keeps a stale JSON out:
 * - The staging rows must be the previous release's: a kept staging records, in the lineage file
 *   beside it (`<dist>/.cache/staging.lineage`), the SHA-256 of the catalog of the release built
 *   with it, and the key of the code and settings that rendered it. The lineage is written once that
 *   release is live and removed when the staging is taken, so a build that fails or dies leaves
 *   none; a roll-back, another build's code, another BASE_URL or FILES_BASE_URL give another catalog
 *   or key, and nothing is reused.
 * - The result is the same catalog, byte for byte, as a full build's (test/catalog-memo.test.ts).
 */
import { createHash, randomUUID } from 'node:crypto'
import { closeSync, existsSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import type { Db } from './db/sqlite.ts'
import { readReleaseInfo } from './release/publish.ts'
import { stagingCachePaths } from './staging-cache.ts'

/** What the lineage file says: the catalog built from the kept staging, and the key of the code and settings that built it. */
const lineageSchema = z.object({ catalogSha256: z.string().regex(/^[0-9a-f]{64}$/), key: z.string().regex(/^[0-9a-f]{64}$/) })
export type StagingLineage = z.infer<typeof lineageSchema>

/** Bumped when what a version's JSON depends on changes without the build's files changing. */
const FORMAT = '1'
const BUILD_DIR = path.dirname(fileURLToPath(import.meta.url))

/**
 * The key of the versions' JSON this build's code renders with these base URLs: SHA-256 of every
 * build source file (TypeScript or compiled) and the URLs. Without a source file to read, a key no
 * later build has: nothing is reused rather than JSON rendered by other code.
 */
export function memoKey(baseUrl: string, filesBaseUrl: string): string {
  const hash = createHash('sha256').update(`${FORMAT}\0${baseUrl}\0${filesBaseUrl}\0`)
  const files = readdirSync(BUILD_DIR, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.(ts|js|mjs)$/.test(f))
    .sort()
  if (files.length === 0) hash.update(randomUUID())
  for (const f of files) hash.update(f).update('\0').update(readFileSync(path.join(BUILD_DIR, f))).update('\0')
  return hash.digest('hex')
}

/** Reads and removes the lineage of the kept staging (call before the staging is taken); null when there is none or it is unreadable. */
export function takeStagingLineage(distDir: string): StagingLineage | null {
  const file = stagingCachePaths(distDir).lineage
  if (!existsSync(file)) return null
  let lineage: StagingLineage | null
  try {
    lineage = lineageSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
  } catch {
    lineage = null
  }
  rmSync(file, { force: true })
  return lineage
}

/** Records that the kept staging of `distDir` is the one the release with catalog `catalogSha256` was built from. */
export function keepStagingLineage(distDir: string, lineage: StagingLineage): void {
  const file = stagingCachePaths(distDir).lineage
  writeFileSync(`${file}.tmp`, JSON.stringify(lineageSchema.parse(lineage)) + '\n')
  renameSync(`${file}.tmp`, file)
}

/** Where a rebuild reuses versions' JSON from, or why it does not. */
export type MemoSource = { catalogFile: string; release: string } | { catalogFile: null; reason: string }

/**
 * The previous release's catalog when the kept staging was built into it with the same key;
 * otherwise the reason there is none. `kept`: staging was kept from the last build; `key`: this
 * build's memoKey, null when it keeps no staging.
 */
export function resolveMemoSource(kept: boolean, lineage: StagingLineage | null, previousDir: string | null, key: string | null): MemoSource {
  if (!kept || key === null) return { catalogFile: null, reason: 'no staging kept' }
  if (!lineage) return { catalogFile: null, reason: 'the kept staging names no release' }
  if (!previousDir) return { catalogFile: null, reason: 'no live release' }
  if (lineage.key !== key) return { catalogFile: null, reason: 'the code or the base URLs changed since' }
  const catalogFile = path.join(previousDir, 'catalog.sqlite')
  let sha256: string
  try {
    sha256 = readReleaseInfo(previousDir).catalog.sha256
  } catch {
    return { catalogFile: null, reason: 'the live release has no readable release.json' }
  }
  if (sha256 !== lineage.catalogSha256) return { catalogFile: null, reason: 'the live release is not the one the kept staging was built into' }
  if (!existsSync(catalogFile)) return { catalogFile: null, reason: 'the live release has no catalog.sqlite' }
  return { catalogFile, release: path.basename(previousDir) }
}

/**
 * The projects whose pre-rendered bodies (build/static/projects.ts: the detail, its current files,
 * the first page of its versions, its dependencies) may differ from the live release's, into
 * `temp.memo_project_render`; run once the reused versions' JSON is copied (a version still without
 * JSON is rendered again). Those bodies are made of the project's row (`summary_json`, which holds
 * its downloads and author, and `source_json`), its members and their author JSON, its versions
 * (JSON, rank, count) and, through its versions' dependency rows, the rows of the projects and the
 * JSON of the versions they name. So a project is rendered again when any of those differs between
 * the two catalogs, in either direction (a row only one catalog has counts); every other project's
 * bodies are the live release's (test/catalog-memo.test.ts requires a full build's bytes).
 *
 * The versions are compared through their JSON (rendered again, or new: still without JSON) and
 * their count per project: a version's rank changes only when a version of its project is added,
 * removed or re-dated, which one of those shows. Rows are compared by joining on their ids, not by
 * EXCEPT: the EXCEPT of the projects' 505 MB of rows at the large catalog took 18 s, the join 0.9.
 */
const projectRenderSql = `
  CREATE TEMP TABLE memo_changed_projects (id TEXT PRIMARY KEY) WITHOUT ROWID;
  INSERT OR IGNORE INTO memo_changed_projects
    SELECT m.id FROM main.projects m LEFT JOIN memo.projects o ON o.id = m.id
      WHERE o.id IS NULL OR o.slug IS NOT m.slug OR o.summary_json IS NOT m.summary_json OR o.source_json IS NOT m.source_json
    UNION ALL SELECT o.id FROM memo.projects o WHERE NOT EXISTS (SELECT 1 FROM main.projects m WHERE m.id = o.id);
  CREATE TEMP TABLE memo_changed_versions (id TEXT PRIMARY KEY, project_id TEXT) WITHOUT ROWID;
  INSERT OR IGNORE INTO memo_changed_versions SELECT id, project_id FROM main.versions WHERE json IS NULL;
  CREATE TEMP TABLE memo_project_render (id TEXT PRIMARY KEY) WITHOUT ROWID;
  INSERT OR IGNORE INTO memo_project_render
    SELECT id FROM memo_changed_projects
    UNION ALL SELECT project_id FROM memo_changed_versions
    UNION ALL SELECT project_id FROM (SELECT project_id, count(*) FROM main.versions GROUP BY project_id EXCEPT SELECT project_id, count(*) FROM memo.versions GROUP BY project_id)
    UNION ALL SELECT project_id FROM (SELECT project_id, count(*) FROM memo.versions GROUP BY project_id EXCEPT SELECT project_id, count(*) FROM main.versions GROUP BY project_id)
    UNION ALL SELECT project_id FROM (SELECT project_id, position, user_id, role FROM main.project_members EXCEPT SELECT project_id, position, user_id, role FROM memo.project_members)
    UNION ALL SELECT project_id FROM (SELECT project_id, position, user_id, role FROM memo.project_members EXCEPT SELECT project_id, position, user_id, role FROM main.project_members)
    UNION ALL SELECT m.project_id FROM main.project_members m WHERE m.user_id IN (
      SELECT u.id FROM main.users u LEFT JOIN memo.users o ON o.id = u.id WHERE o.id IS NULL OR o.author_json IS NOT u.author_json)
    UNION ALL SELECT v.project_id FROM main.dependencies d JOIN main.versions v ON v.id = d.version_id
      WHERE d.project_id IN memo_changed_projects OR d.dep_version_id IN (SELECT id FROM memo_changed_versions)
    UNION ALL SELECT v.project_id FROM memo.dependencies d JOIN memo.versions v ON v.id = d.version_id
      WHERE d.project_id IN memo_changed_projects OR d.dep_version_id IN (SELECT id FROM memo_changed_versions);
  DROP TABLE temp.memo_changed_projects;
  DROP TABLE temp.memo_changed_versions;
`

/** A pre-rendered body named by its SHA-256 and size. */
export interface BodyRef {
  sha256: string
  size: number
}

/** Release-relative file listing each project's pre-rendered bodies (not served; read by the next build). */
export const PROJECT_BODIES = 'project-bodies.tsv'
/** Bodies a project has, in the order they are written (build/static/projects.ts). */
export const BODIES_PER_PROJECT = 4
const projectBodiesHeader = (key: string): string => `project-bodies/1\t${key}\n`

/**
 * The project bodies of the release in `releaseDir`, by project id, when its file was written with
 * `key` (the memoKey of this build's code and URLs); null when there is no such file.
 */
export function readProjectBodies(releaseDir: string, key: string): Map<string, BodyRef[]> | null {
  let text: string
  try {
    text = readFileSync(path.join(releaseDir, PROJECT_BODIES), 'utf8')
  } catch {
    return null
  }
  const header = projectBodiesHeader(key)
  if (!text.startsWith(header)) return null
  const out = new Map<string, BodyRef[]>()
  for (const line of text.slice(header.length).split('\n')) {
    if (line === '') continue
    const f = line.split('\t')
    if (f.length !== 1 + 2 * BODIES_PER_PROJECT) return null
    const bodies: BodyRef[] = []
    for (let i = 1; i < f.length; i += 2) {
      const sha256 = f[i]!
      const size = Number(f[i + 1])
      if (!/^[0-9a-f]{64}$/.test(sha256) || !Number.isSafeInteger(size) || size < 0) return null
      bodies.push({ sha256, size })
    }
    out.set(f[0]!, bodies)
  }
  return out
}

/** Appends each project's bodies to the release's PROJECT_BODIES file. */
export interface ProjectBodiesWriter {
  add(id: string, bodies: readonly BodyRef[]): void
  /** Writes what is buffered and closes the file. */
  finish(): void
  /** Closes the file and removes it (the build failed). */
  close(): void
}

/** Starts the PROJECT_BODIES file of `releaseDir`, for builds with `key`. */
export function createProjectBodiesWriter(releaseDir: string, key: string): ProjectBodiesWriter {
  const file = path.join(releaseDir, PROJECT_BODIES)
  const fd = openSync(file, 'w')
  let lines: string[] = [projectBodiesHeader(key)]
  let open = true
  const flush = (): void => {
    writeSync(fd, lines.join(''))
    lines = []
  }
  return {
    add(id, bodies) {
      lines.push(`${id}\t${bodies.map((b) => `${b.sha256}\t${b.size}`).join('\t')}\n`)
      if (lines.length >= 4096) flush()
    },
    finish() {
      if (!open) return
      flush()
      closeSync(fd)
      open = false
    },
    close() {
      if (!open) return
      closeSync(fd)
      open = false
      rmSync(file, { force: true })
    },
  }
}

/**
 * Whether the last load touched a reference file (catalog.json, categories, types, game versions):
 * then nothing is reused, and a rebuild checks every record (validate.ts). `table`: s_touched as
 * `db` names it (attached as `staging` on the catalog's connection).
 */
export async function referenceTouched(db: Db, table = 'staging.s_touched'): Promise<boolean> {
  const reference = await db.get<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE kind NOT IN ('users', 'projects', 'versions')`)
  return reference!.n > 0
}

/**
 * The projects' rows of the previous release's catalog a rebuild copies. A project's row (its
 * columns, `summary_json` and `source_json`) depends only on:
 * - its source record (so its status, members, dates and counts),
 * - its author's user record,
 * - its visible versions: their count of downloads (source plus the download counters), game
 *   versions and platforms, and the game versions' release dates (a reference file),
 * - its place in id order among the visible projects (its rowid),
 * - the build's code and base URLs (the lineage's key, as for the versions' JSON).
 *
 * So a row is copied when the project is visible in both catalogs, neither it nor its author was
 * touched by the load, no version touched was or is one of its versions, and its downloads are
 * those of the previous row; it goes in at the rowid of its place now. The others are rendered as a
 * full build renders them (catalog.ts writeProjects). Rendering the 100,000 projects of the large
 * catalog took 10–18 s of the catalog phase whatever the change (bench/results/BUILD-PROFILE.md,
 * Session 32); test/catalog-memo.test.ts requires a full build's catalog, byte for byte.
 */
const projectRowsSql = `
  INSERT INTO main.projects (rowid, id, slug, type, name, author_id, author_username, downloads, favorites, followers, created_at, updated_at, published_at, summary_json, source_json)
    SELECT po.position, m.id, m.slug, m.type, m.name, m.author_id, m.author_username, m.downloads, m.favorites, m.followers, m.created_at, m.updated_at, m.published_at, m.summary_json, m.source_json
    FROM temp.project_order po JOIN memo.projects m ON m.id = po.id LEFT JOIN temp.project_agg a ON a.project_id = po.id
    WHERE m.downloads = coalesce(a.downloads, 0)
      AND po.id NOT IN (SELECT id FROM staging.s_touched WHERE kind = 'projects')
      AND po.id NOT IN (SELECT project_id FROM staging.s_touched WHERE kind = 'versions' AND project_id IS NOT NULL)
      AND m.author_id NOT IN (SELECT id FROM staging.s_touched WHERE kind = 'users')
    ORDER BY po.position;
`

/**
 * Copies into `db` (`temp.project_order` and `temp.project_agg` made by
 * writeProjects, staging attached as `staging`) the row of every project whose inputs are
 * unchanged since the catalog `previousFile` (projectRowsSql; the caller asks only when no
 * reference file was touched, referenceTouched). Returns how many it copied.
 */
export async function copyProjectRows(db: Db, previousFile: string): Promise<number> {
  await db.run(`ATTACH DATABASE ? AS memo`, [previousFile])
  try {
    await db.exec(projectRowsSql)
    // changes(): the rows the INSERT just wrote (nothing else runs on this connection meanwhile).
    return (await db.get<{ n: number }>(`SELECT changes() AS n`))!.n
  } finally {
    await db.run(`DETACH DATABASE memo`)
  }
}

/**
 * Settles the versions' JSON of `db` (its versions, dependencies and projects written, staging
 * attached as `staging`), into which writeVisibleRows copied the JSON, ETag and SHA-256 of every
 * version the catalog `previousFile` holds with the same downloads: drops them from every version
 * whose other inputs changed (see the file's comment), for writeVersionJson to render it again, and
 * lists the projects whose bodies may differ (projectRenderSql). Returns how many projects that is.
 */
export async function settleVersionJson(db: Db, previousFile: string): Promise<number> {
  await db.run(`ATTACH DATABASE ? AS memo`, [previousFile])
  try {
    await db.exec(`
      CREATE TEMP TABLE memo_projects (id TEXT PRIMARY KEY) WITHOUT ROWID;
      INSERT OR IGNORE INTO memo_projects
        SELECT id FROM (SELECT id, slug, name, type FROM main.projects EXCEPT SELECT id, slug, name, type FROM memo.projects)
        UNION ALL SELECT id FROM (SELECT id, slug, name, type FROM memo.projects EXCEPT SELECT id, slug, name, type FROM main.projects)
        UNION ALL SELECT project_id FROM staging.s_touched WHERE kind = 'versions' AND project_id IS NOT NULL;
      CREATE TEMP TABLE memo_render (id TEXT PRIMARY KEY) WITHOUT ROWID;
      INSERT OR IGNORE INTO memo_render
        SELECT id FROM staging.s_touched WHERE kind = 'versions'
        UNION ALL SELECT version_id FROM main.dependencies WHERE project_id IN memo_projects
        UNION ALL SELECT version_id FROM memo.dependencies WHERE project_id IN memo_projects;
      UPDATE main.versions SET json = NULL, body_etag = NULL, body_sha256 = NULL
        WHERE versions.id IN memo_render AND versions.json IS NOT NULL;
    `)
    await db.exec(`DROP TABLE temp.memo_projects; DROP TABLE temp.memo_render; ${projectRenderSql}`)
    const projects = await db.get<{ n: number }>(`SELECT count(*) AS n FROM temp.memo_project_render`)
    return projects!.n
  } finally {
    await db.run(`DETACH DATABASE memo`)
  }
}
