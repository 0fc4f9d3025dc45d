/**
 * The previous release's versions' JSON, reused by a rebuild. Rendering a million versions' JSON
 * (parse the source, resolve the dependencies, stringify, hash the body) took 33 s of one core at
 * the large catalog, whatever the change (bench/results/BUILD-PROFILE.md, Session 28). A version's
 * JSON depends only on:
 * - its source record (and so its files and its own dependency list),
 * - its downloads (source plus the download counters),
 * - for each dependency, the project it resolves to (id, slug, name, type, and whether it is
 *   visible) and whether the version it names is visible,
 * - the build's code and its base URLs.
 *
 * So a rebuild copies `json` and `body_etag` from the previous release's catalog for every version
 * whose inputs are the same, and renders the others as a full build does. "The same" is decided
 * without reading the million sources:
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
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
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

/** What copyVersionJson did. */
export interface MemoStats {
  /** Versions whose JSON was copied. */
  reused: number
  /** Versions left to render (no JSON yet). */
  render: number
}

/**
 * Copies `json` and `body_etag` from the catalog `previousFile` into every version of `db` (its
 * versions, dependencies and projects written, staging attached as `staging`) whose inputs are
 * unchanged (see the file's comment). Returns null, copying nothing, when a reference file was
 * touched.
 */
export async function copyVersionJson(db: Db, previousFile: string): Promise<MemoStats | null> {
  const reference = await db.get<{ n: number }>(`SELECT count(*) AS n FROM staging.s_touched WHERE kind NOT IN ('users', 'projects', 'versions')`)
  if (reference!.n > 0) return null
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
      UPDATE main.versions SET json = w.json, body_etag = w.body_etag, body_sha256 = w.body_sha256 FROM memo.versions w
        WHERE w.id = versions.id AND w.downloads = versions.downloads AND versions.id NOT IN memo_render;
    `)
    // changes(): the rows the UPDATE just wrote (nothing else runs on this connection meanwhile).
    const counts = await db.get<{ reused: number; total: number }>(`SELECT changes() AS reused, (SELECT count(*) FROM main.versions) AS total`)
    await db.exec(`DROP TABLE temp.memo_projects; DROP TABLE temp.memo_render;`)
    return { reused: counts!.reused, render: counts!.total - counts!.reused }
  } finally {
    await db.run(`DETACH DATABASE memo`)
  }
}
