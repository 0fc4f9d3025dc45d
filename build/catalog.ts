/**
 * Builds the catalog database (visible data only) from staging: versions ordered by the one
 * "newest" ordering, download counts folded in, dependencies resolved against what is visible, and
 * every project, version and user rendered once and stored as JSON for the shim.
 */
import { hash } from 'node:crypto'
import { existsSync } from 'node:fs'
import path from 'node:path'
import type { BuildContext } from './context.ts'
import { createBatcher } from './load.ts'
import { BUILD_CACHE_KIB, catalogIndexes, catalogSchema, fileIndexes, versionIndexes } from './db/schema.ts'
import type { Db, SqlValue } from './db/sqlite.ts'
import {
  renderAuthor,
  renderProjectSummary,
  renderUserProfile,
  renderVersion,
  type ProjectRef,
  type NormalisedVersion,
  type RenderSettings,
  type ResolvedDependency,
} from './render/resources.ts'
import type { Author } from './schema/api.ts'
import type { SourceProject, SourceUser } from './schema/source.ts'
import { createHashIndex, hashIndexRow } from './hash-index.ts'
import { createVersionTargets } from './version-targets.ts'
import { renderRawBytes } from './render/body.ts'
import { contentEtag } from './render/etag.ts'
import { startSearchIndex, type SearchIndexBeside } from './search-index.ts'
import { copyProjectRows, referenceTouched, settleVersionJson, type MemoSource } from './catalog-memo.ts'

/** In-memory lookups the renderers of the static tree need (small: one entry per user/project). */
export interface CatalogMaps {
  authors: Map<string, Author>
  projects: Map<string, ProjectRef>
  /** The hashes each version answers for under /version-files (writeHashIndex). */
  hashOwners: HashOwners
  /**
   * Whether a version's body (by its rowid) is the live release's: its JSON was reused from it
   * (catalog-memo.ts), so the content store has the body. Always false without reuse.
   */
  storedVersion: (rowid: number) => boolean
  /**
   * Whether the catalog connection lists in `temp.memo_project_render` the projects whose bodies may
   * differ from the live release's (catalog-memo.ts); false: every project is rendered.
   */
  projectMemo: boolean
}

/** A written catalog: the renderers' lookups, and its search index still being built beside (the caller finishes or closes it). */
export interface WrittenCatalog {
  maps: CatalogMaps
  search: SearchIndexBeside
}

const PAGE = 2000

/**
 * Fills the catalog database (staging stays attached for the blob list) but for its search index,
 * which goes on being built on a connection of its own: returned with the lookups used by the static
 * renderers, for the caller to copy in once the tree is rendered (index.ts) or to close. `step` is
 * told when each part is done (progress lines).
 */
export async function writeCatalog(
  ctx: BuildContext,
  db: Db,
  settings: RenderSettings,
  step: (done: string) => void = () => {},
  memo: MemoSource = { catalogFile: null, reason: 'not asked' },
): Promise<WrittenCatalog> {
  await db.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; ${catalogSchema}`)
  await db.run(`ATTACH DATABASE ? AS staging`, [ctx.staging.file])
  await db.exec(`PRAGMA staging.cache_size = -${BUILD_CACHE_KIB}`)
  await writeReference(db)
  // The live release's catalog the versions' JSON and the projects' rows are taken from: none when a
  // reference file was touched.
  const reuse = memo.catalogFile !== null && !(await referenceTouched(db)) ? memo.catalogFile : null
  // Whether download counters are folded in: decided once, for the versions and their files alike.
  const counters = ctx.options.countersFile !== null && existsSync(ctx.options.countersFile) ? ctx.options.countersFile : null
  await selectVisible(db, counters)
  // The projects and users first, their versions' counts taken from staging: the search index needs
  // only them, and is built on a connection of its own (in its worker process, BUILD_SEARCH_WORKER)
  // on the other core while this one copies the versions, files and dependencies and renders the
  // versions, and the build the tree. Started before the versions were copied, it runs on the core
  // the catalog phase leaves idle instead of beside the render (bench/results/BUILD-PROFILE.md,
  // Session 41); before the files, instead of after (Session 36).
  const authors = await writeAuthors(db)
  const { refs: projects, copied } = await writeProjects(db, authors, reuse, counters !== null)
  await writeUserProfiles(db)
  step(`rendered the projects and the users${copied === null ? '' : ` (${copied} of ${projects.size} projects' rows copied from release ${memo.catalogFile !== null ? memo.release : ''})`}`)
  const search = await startSearchIndex(db, path.join(ctx.releaseDir, '.search.sqlite'), { worker: ctx.options.searchWorker })
  let storedVersion: CatalogMaps['storedVersion'] = () => false
  let projectMemo = false
  let hashOwners: HashOwners
  try {
    await writeVisibleVersions(db, reuse, counters)
    step('copied the visible versions')
    await writeVisibleFiles(db, counters)
    step('copied the visible files and dependencies')
    // After the search index is started: it is the longer path once the versions are copied (a
    // rebuild's seal waited for it, bench/results/BUILD-PROFILE.md, Session 34), and these two read
    // only the versions' and files' rows.
    const ranks = await writeVersionTargets(db)
    hashOwners = await writeHashIndex(db, ranks)
    step('indexed the hashes and the versions\' targets')
    // The projects whose bodies may differ from the live release's; null: every project is rendered.
    const memoProjects = reuse !== null ? await settleVersionJson(db, reuse) : null
    const rendered = await writeVersionJson(db, settings, projects)
    if (memo.catalogFile !== null) {
      const render = rendered.reduce((n, r) => n + r, 0)
      step(
        memoProjects !== null
          ? `reused ${rendered.length - 1 - render} versions' JSON from release ${memo.release} (${render} to render; ${memoProjects} projects' bodies to render again)`
          : `reused no versions' JSON from release ${memo.release}: a reference file changed`,
      )
    }
    storedVersion = memoProjects !== null ? (rowid) => rendered[rowid] !== 1 : () => false
    projectMemo = memoProjects !== null
    step('rendered the versions')
    await db.exec(catalogIndexes)
    step('indexed the catalog')
  } catch (err) {
    await search.close()
    throw err
  }
  return { maps: { authors, projects, hashOwners, storedVersion, projectMemo }, search }
}

async function writeReference(db: Db): Promise<void> {
  const catalog = await db.get<{ json: string }>(`SELECT json FROM s_catalog LIMIT 1`)
  const settings = JSON.parse(catalog!.json) as { name: string; game: string }
  await db.run(`INSERT INTO meta VALUES ('name', ?), ('game', ?)`, [settings.name, settings.game])
  await db.exec(`
    INSERT INTO reference SELECT 'category', row_number() OVER (ORDER BY project_type = 'skin', project_type = 'map', project_type, json->>'group', json->>'name', slug), project_type, json FROM s_categories;
    INSERT INTO reference SELECT 'type', row_number() OVER (ORDER BY slug = 'skin', slug = 'map', slug), NULL, json FROM s_types WHERE json->>'enabled';
    INSERT INTO reference SELECT 'game-version', row_number() OVER (ORDER BY json->>'releasedAt' DESC, version DESC), json->>'type', json FROM s_game_versions;
  `)
}

/**
 * The visible projects (`temp.visible_projects`) and, with download counters (`counters`: their
 * file), each version's count of downloads there (`temp.version_counters`): what writeProjects and
 * writeVisibleVersions read.
 */
async function selectVisible(db: Db, counters: string | null): Promise<void> {
  await db.exec(`
    CREATE TEMP TABLE visible_projects AS SELECT id FROM s_projects WHERE status = 'published';
    CREATE UNIQUE INDEX temp.visible_projects_id ON visible_projects(id);
  `)
  if (counters !== null) {
    await db.run(`ATTACH DATABASE ? AS counters`, [counters])
    await db.exec(`
      CREATE TEMP TABLE version_counters (version_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO version_counters SELECT f.version_id, sum(c.n) FROM counters.file_downloads c JOIN s_files f ON f.id = c.file_id GROUP BY f.version_id;
    `)
    await db.run(`DETACH DATABASE counters`)
  }
}

/**
 * A staging version's (`v`) downloads in SQL, with its count in the counters' file folded in when
 * `counted` (selectVisible's `temp.version_counters`, joined by `join`): the versions' rows and
 * their projects' sums (writeProjects) read the same.
 */
function versionDownloads(counted: boolean): { downloads: string; join: string } {
  return counted
    ? { downloads: 'v.downloads + coalesce(c.n, 0)', join: ' LEFT JOIN temp.version_counters c ON c.version_id = v.id' }
    : { downloads: 'v.downloads', join: '' }
}

/**
 * The visible versions of staging (selectVisible's `temp.visible_projects`), each with its rank in
 * its project (0 the newest: by published, then created time, then id) and its downloads (folded with
 * the counters' when `counted`: versionDownloads), in project and rank order: the rowids' order, on
 * which update matching relies (createVersionTargets refuses any other). The ORDER BY is the window's
 * own order (the rank counts along it, the id breaks ties), so SQLite sorts once: written as
 * `ORDER BY v.project_id, rank` it sorted the rows a second time, 3.2–3.8 s for the select against
 * 2.1–2.3 at the large catalog (bench/results/BUILD-PROFILE.md, Session 56). In a rebuild's join with
 * the live release's JSON (writeVisibleVersions) SQLite drops a subquery's ORDER BY either way, and
 * the rows come in the window's order.
 */
export function visibleVersionsSql(counted: boolean): string {
  const c = versionDownloads(counted)
  const order = 'v.published_at DESC, v.created_at DESC, v.id'
  return `
    SELECT v.id, v.project_id, v.version_number, v.channel,
      row_number() OVER (PARTITION BY v.project_id ORDER BY ${order}) - 1 AS rank,
      v.game_versions, v.platforms, ${c.downloads} AS downloads, v.created_at, v.published_at
    FROM s_versions v NOT INDEXED${c.join}
    WHERE v.status = 'published' AND v.project_id IN visible_projects
    ORDER BY v.project_id, ${order}`
}

/**
 * Copies the visible versions (selectVisible), with ranks and folded download counts, and indexes
 * them. The versions are read by a scan (NOT INDEXED), not by project through s_versions_project:
 * that walk reads the rows out of order, and beside the checks it took 12.9 s at the large catalog
 * against 3.5 s for the scan and the sort (bench/results/BUILD-PROFILE.md, Session 31).
 *
 * A rebuild that may reuse the live release's versions' JSON (`reuse`: catalog-memo.ts) takes it in
 * the same insert, for every version the live catalog holds with the same downloads; settleVersionJson
 * then drops it from the few whose other inputs changed. Added afterwards by an UPDATE, the JSON
 * (about 1 KB a version) wrote every row a second time: 7.8–10.3 s of the large catalog's rebuild,
 * against 3.1–3.7 s more for the insert (bench/results/BUILD-PROFILE.md, Session 34). So the
 * download counters are folded in by version before the insert, for it to compare.
 */
async function writeVisibleVersions(db: Db, reuse: string | null, counters: string | null): Promise<void> {
  if (reuse !== null) await db.run(`ATTACH DATABASE ? AS memo`, [reuse])
  const visible = visibleVersionsSql(counters !== null)
  // With the live release's JSON: the versions stay the outer loop of the LEFT JOIN, in their order.
  // An ORDER BY over the join would sort the JSON too (about 1 GB at the large catalog, 2–3 s).
  const columns = 'id, project_id, version_number, channel, rank, game_versions, platforms, downloads, created_at, published_at'
  await db.exec(
    reuse === null
      ? `INSERT INTO versions (${columns}) ${visible};`
      : `INSERT INTO versions (${columns}, json, body_etag, body_sha256)
           SELECT n.*, w.json, w.body_etag, w.body_sha256 FROM (${visible}) n LEFT JOIN memo.versions w ON w.id = n.id AND w.downloads = n.downloads;`,
  )
  if (reuse !== null) await db.run(`DETACH DATABASE memo`)
  if (counters !== null) await db.exec(`DROP TABLE temp.version_counters`)
  await db.exec(versionIndexes)
}

/**
 * Copies the visible versions' files (with their folded download counts) and dependencies, once
 * writeVisibleVersions has copied the versions, and indexes the files.
 */
async function writeVisibleFiles(db: Db, counters: string | null): Promise<void> {
  await db.exec(`
    INSERT INTO files (id, version_id, version_rowid, project_id, position, filename, size, sha256, sha1)
      SELECT f.id, f.version_id, v.rowid, f.project_id, f.idx, f.filename, f.size, f.sha256, f.sha1
      FROM s_files f JOIN versions v ON v.id = f.version_id
      ORDER BY f.project_id, f.version_id, f.idx, f.id;
    ${fileIndexes}
  `)
  if (counters !== null) {
    await db.run(`ATTACH DATABASE ? AS counters`, [counters])
    await db.exec(`UPDATE files SET downloads = c.n FROM counters.file_downloads c WHERE c.file_id = files.id`)
    await db.run(`DETACH DATABASE counters`)
  }
  await db.exec(`
    INSERT INTO dependencies (version_id, position, type, project_id, dep_version_id)
      SELECT v.id, d.position, d.type, p.id, w.id
      FROM versions v JOIN s_dependencies d ON d.version_id = v.id
      LEFT JOIN s_versions sw ON sw.id = d.dep_version_id
      JOIN visible_projects p ON p.id = coalesce(d.project_id, sw.project_id)
      LEFT JOIN versions w ON w.id = d.dep_version_id
      WHERE NOT d.external;
  `)
}

/** Rows read at a time for the hash index and the version targets (bounded memory at 1.2 M files). */
const INDEX_PAGE = 50_000

/** Separators of a page read as text (forEachRowAsText): control characters that no hash, id, number, channel or JSON text holds unescaped. */
const FIELD = '\x1f'
const ROW = '\x1e'

/**
 * Calls `each` with the fields of every row of a paged query, in its order: `pageSql(after, limit)`
 * gives the SQL and values of the `limit` rows (INDEX_PAGE unless given) after the row whose fields
 * are `after` (null: the first page), as one row of two columns, `page` (each row's `width` fields joined by char(31), the rows
 * by char(30), in key order: `group_concat` over an ordered subquery) and `n`, its count. A page
 * is one string rather than a row object a row: at the large catalog the binding's objects made
 * both passes 2–3× as long (bench/results/BUILD-PROFILE.md, Session 52). The next page is asked
 * for before this one is walked, so SQLite reads it on its thread while this one works. A page
 * whose rows do not split into `width` fields each, or fewer rows than `n` (a NULL in a joined
 * column drops the row from `group_concat`), is refused.
 */
export async function forEachRowAsText(
  db: Db,
  width: number,
  pageSql: (after: string[] | null, limit: number) => [string, SqlValue[]],
  each: (fields: string[]) => void,
  limit = INDEX_PAGE,
): Promise<void> {
  const ask = (after: string[] | null): Promise<{ page: string | null; n: number } | undefined> => {
    const [sql, params] = pageSql(after, limit)
    return db.get<{ page: string | null; n: number }>(sql, params)
  }
  let next = ask(null)
  for (;;) {
    const result = await next
    const rows = result?.page ? result.page.split(ROW) : []
    if (rows.length !== (result?.n ?? 0)) throw new Error(`a page of ${result?.n} rows was read as ${rows.length}: a column held NULL or a separator`)
    const last = rows.length > 0 ? rows[rows.length - 1]!.split(FIELD) : null
    if (rows.length === limit) next = ask(last)
    for (const row of rows) {
      const fields = row.split(FIELD)
      if (fields.length !== width) throw new Error(`a row read as ${fields.length} fields, not ${width}: ${JSON.stringify(row.slice(0, 200))}`)
      each(fields)
    }
    if (rows.length < limit) return
  }
}

/**
 * Which file rows carry the hashes their version answers for under `/version-files/{hash}`:
 * OWNS_SHA256 and OWNS_SHA1 bits, indexed by the file's rowid. A hash resolves to the newest
 * version (lowest rank) holding it; a hash is never in two projects (validate.ts), so that is
 * decided project by project. 1.2 MB at the large catalog, where the same ranking in SQL (a sort of
 * 2.4 million hashes) cost 33 s of CPU on the render's second core.
 */
export type HashOwners = Uint8Array
/** The HashOwners bit of a file row whose SHA-256 its version answers for. */
export const OWNS_SHA256 = 1
/** The HashOwners bit of a file row whose SHA-1 its version answers for. */
export const OWNS_SHA1 = 2

/**
 * Stores the index of every file's hashes (build/hash-index.ts), read from the files table in pages:
 * each hash with its version's rowid and rank (`ranks`, by the version's rowid: writeVersionTargets);
 * and returns the hashes' owners (HashOwners), ranked on the way. About 2 s at the large catalog's
 * 2.2 million hashes. The ranks come from the targets' pass rather than from a join on versions,
 * whose rows hold the versions' JSON: the join read the 1.2 GB table again.
 */
async function writeHashIndex(db: Db, ranks: Int32Array): Promise<HashOwners> {
  const { n, last } = (await db.get<{ n: number; last: number | null }>(`SELECT count(sha256) + count(sha1) AS n, max(rowid) AS last FROM files`))!
  const index = createHashIndex(n)
  const owners: HashOwners = new Uint8Array((last ?? 0) + 1)
  // The files go in by project (writeVisibleRows): each project's hashes are ranked when the next project starts.
  let project = ''
  const newest = new Map<string, { file: number; bit: number; rank: number }>()
  const settle = (): void => {
    for (const o of newest.values()) owners[o.file]! |= o.bit
    newest.clear()
  }
  const offer = (hash: string, file: number, bit: number, rank: number): void => {
    const seen = newest.get(hash)
    if (!seen || rank < seen.rank) newest.set(hash, { file, bit, rank })
  }
  // Keyset pages by rowid; the rowids are checked to rise, since the ranking above needs the files in that order.
  let previous = 0
  await forEachRowAsText(
    db,
    5,
    (after, limit) => [
      `SELECT group_concat(rowid || char(31) || sha256 || char(31) || coalesce(sha1, '') || char(31) || version_rowid || char(31) || project_id, char(30)) AS page, count(*) AS n
       FROM (SELECT rowid, sha256, sha1, version_rowid, project_id FROM files WHERE rowid > ? ORDER BY rowid LIMIT ${limit})`,
      [after === null ? 0 : Number(after[0])],
    ],
    ([rowidText, sha256, sha1, versionText, projectId]) => {
      const rowid = Number(rowidText)
      const versionRowid = Number(versionText)
      if (!(rowid > previous)) throw new Error(`files: rowid ${rowidText} read after ${previous}`)
      previous = rowid
      if (projectId !== project) {
        settle()
        project = projectId!
      }
      const rank = ranks[versionRowid]!
      index.add(sha256!, versionRowid, rank)
      offer(sha256!, rowid, OWNS_SHA256, rank)
      if (sha1 !== '') {
        index.add(sha1!, versionRowid, rank)
        offer(sha1!, rowid, OWNS_SHA1, rank)
      }
    },
  )
  settle()
  const row = hashIndexRow(index.finish())
  await db.run(`INSERT INTO hash_index VALUES (?, ?, ?, ?)`, [row.buckets, row.keys, row.rowids, row.entries])
  return owners
}

/**
 * Stores what each version targets (build/version-targets.ts); createVersionTargets checks the order
 * update matching relies on. Read in pages from the covering index versions_project_rank, in its
 * order (project, rank), which is the versions' rowid order: the table's rows hold the versions'
 * JSON, 1.2 GB at the large catalog, that a scan of it read for these few columns. Returns each
 * version's rank by rowid (-1 where no version is), for writeHashIndex.
 */
async function writeVersionTargets(db: Db): Promise<Int32Array> {
  const { last } = (await db.get<{ last: number | null }>(`SELECT max(rowid) AS last FROM versions`))!
  const ranks = new Int32Array((last ?? 0) + 1).fill(-1)
  const targets = createVersionTargets()
  // Keyset pages over (project_id, rank): ranks are unique per project (writeVisibleRows).
  const select = `SELECT rowid, project_id, rank, channel, game_versions, platforms FROM versions INDEXED BY versions_project_rank`
  await forEachRowAsText(
    db,
    6,
    (after, limit) => [
      `SELECT group_concat(rowid || char(31) || project_id || char(31) || rank || char(31) || channel || char(31) || game_versions || char(31) || platforms, char(30)) AS page, count(*) AS n
       FROM (${select}${after === null ? '' : ' WHERE (project_id, rank) > (?, ?)'} ORDER BY project_id, rank LIMIT ${limit})`,
      after === null ? [] : [after[1]!, Number(after[2])],
    ],
    ([rowidText, projectId, rankText, channel, gameVersions, platforms]) => {
      const rowid = Number(rowidText)
      const rank = Number(rankText)
      ranks[rowid] = rank
      targets.add({ rowid, projectId: projectId!, rank, channel: channel!, gameVersions: gameVersions!, platforms: platforms! })
    },
  )
  const row = targets.finish()
  await db.run(`INSERT INTO version_targets VALUES (?, ?, ?, ?, ?, ?, ?)`, [row.starts, row.targets, row.targetWidth, row.targetStarts, row.targetValues, row.valueWidth, row.valueNames])
  return ranks
}

async function writeAuthors(db: Db): Promise<Map<string, Author>> {
  const authors = new Map<string, Author>()
  for (const row of await db.all<{ json: string }>(`SELECT json FROM s_users ORDER BY id`)) {
    const user = JSON.parse(row.json) as SourceUser
    authors.set(user.id, renderAuthor(user))
  }
  return authors
}

/**
 * Renders and stores every visible project's summary, each at the rowid of its place in id order;
 * a rebuild first copies the rows of the projects whose inputs are unchanged from the live release
 * (`reuse`, as for the versions: copyProjectRows; `copied` counts them, null when nothing is reused).
 * Returns the refs used by dependencies.
 */
async function writeProjects(db: Db, authors: Map<string, Author>, reuse: string | null, counted: boolean): Promise<{ refs: Map<string, ProjectRef>; copied: number | null }> {
  // Each project's visible versions from staging, as writeVisibleVersions copies them (before it
  // does): published, of a visible project, their downloads with the counters' (`counted`). The
  // lists below walk s_versions_project for each project rendered: 1% of them in a rebuild; in the
  // full build of the large catalog, staging indexed to the files copied took 43.7 s against 57.2
  // with the lists read from the copied versions (bench/results/BUILD-PROFILE.md, Session 41).
  const sum = versionDownloads(counted)
  await db.exec(`
    CREATE TEMP TABLE gv_order AS SELECT version, json->>'releasedAt' AS released FROM s_game_versions;
    CREATE TEMP TABLE project_agg AS
      SELECT v.project_id, sum(${sum.downloads}) AS downloads
      FROM s_versions v NOT INDEXED${sum.join}
      WHERE v.status = 'published' AND v.project_id IN visible_projects GROUP BY v.project_id;
    CREATE UNIQUE INDEX temp.project_agg_id ON project_agg(project_id);
    CREATE TEMP TABLE project_order AS SELECT id, row_number() OVER (ORDER BY id) AS position FROM s_projects WHERE status = 'published';
    CREATE INDEX temp.project_order_id ON project_order(id);
  `)
  const copied = reuse !== null ? await copyProjectRows(db, reuse) : null
  const batch = createBatcher(db, 'projects (rowid, id, slug, type, name, author_id, author_username, downloads, favorites, followers, created_at, updated_at, published_at, summary_json, source_json)')
  let last = ''
  for (;;) {
    // The projects not copied (all of them in a full build), a page at a time in id order.
    const rows = await db.all<{ id: string; position: number; json: string; downloads: number | null; gv: string; platforms: string }>(
      `SELECT p.id, po.position, p.json, a.downloads,
        (SELECT json_group_array(version) FROM (SELECT DISTINCT g.value AS version, o.released FROM s_versions v, json_each(v.game_versions) g JOIN gv_order o ON o.version = g.value WHERE v.project_id = p.id AND v.status = 'published' ORDER BY o.released, g.value)) AS gv,
        (SELECT json_group_array(value) FROM (SELECT DISTINCT k.value FROM s_versions v, json_each(v.platforms) k WHERE v.project_id = p.id AND v.status = 'published' ORDER BY k.value)) AS platforms
       FROM s_projects p JOIN project_order po ON po.id = p.id LEFT JOIN project_agg a ON a.project_id = p.id
       WHERE p.status = 'published' AND p.id > ? AND p.id NOT IN (SELECT id FROM main.projects) ORDER BY p.id LIMIT ${PAGE}`,
      [last],
    )
    if (rows.length === 0) break
    for (const row of rows) {
      const project = JSON.parse(row.json) as SourceProject
      const author = authors.get(project.authorId)!
      const summary = renderProjectSummary(project, {
        author,
        downloads: row.downloads ?? 0,
        gameVersions: JSON.parse(row.gv) as string[],
        platforms: JSON.parse(row.platforms) as string[],
      })
      await batch.add([
        row.position, project.id, project.slug, project.type, project.name, author.id, author.username, summary.downloads,
        project.favorites, project.followers, project.createdAt, project.updatedAt, project.publishedAt,
        JSON.stringify(summary), row.json,
      ])
      last = row.id
    }
  }
  await batch.flush()
  const refs = new Map<string, ProjectRef>()
  for (const p of await db.all<ProjectRef>(`SELECT id, slug, name, type FROM projects ORDER BY rowid`)) refs.set(p.id, { id: p.id, slug: p.slug, name: p.name, type: p.type })
  await db.exec(`
    INSERT INTO project_members (project_id, position, user_id, role) SELECT p.id, 0, p.author_id, 'owner' FROM projects p;
    INSERT INTO project_members (project_id, position, user_id, role) SELECT p.id, m.key + 1, m.value->>'userId', m.value->>'role' FROM projects p, json_each(p.source_json, '$.members') m;
    INSERT OR IGNORE INTO project_facets SELECT 'c:' || c.value, p.rowid FROM projects p, json_each(p.source_json, '$.categories') c;
    INSERT OR IGNORE INTO project_facets SELECT 't:' || t.value, p.rowid FROM projects p, json_each(p.source_json, '$.tags') t;
    INSERT OR IGNORE INTO project_facets SELECT 'g:' || g.value, p.rowid FROM projects p, json_each(p.summary_json, '$.gameVersions') g;
    INSERT OR IGNORE INTO project_facets SELECT 'p:' || k.value, p.rowid FROM projects p, json_each(p.summary_json, '$.platforms') k;
  `)
  return { refs, copied }
}

/**
 * Renders every visible version without JSON yet (all of them, unless the live release's was reused:
 * writeVisibleRows, settleVersionJson);
 * the JSON is what the shim returns for it. Returns the rowids it rendered, marked 1.
 */
async function writeVersionJson(db: Db, settings: RenderSettings, projects: Map<string, ProjectRef>): Promise<Uint8Array> {
  const { top } = (await db.get<{ top: number | null }>(`SELECT max(rowid) AS top FROM versions`))!
  const rendered = new Uint8Array((top ?? 0) + 1)
  let last = 0
  for (;;) {
    const rows = await db.all<{ rowid: number; id: string; source_json: string; downloads: number }>(
      `SELECT v.rowid, v.id, s.json AS source_json, v.downloads FROM versions v JOIN s_versions s ON s.id = v.id
       WHERE v.rowid > ? AND v.json IS NULL ORDER BY v.rowid LIMIT ${PAGE}`,
      [last],
    )
    if (rows.length === 0) break
    last = rows[rows.length - 1]!.rowid
    const depRows = await db.all<{ version_id: string; position: number; project_id: string; dep_version_id: string | null }>(
      `SELECT version_id, position, project_id, dep_version_id FROM dependencies WHERE version_id IN (SELECT value FROM json_each(?))`,
      [JSON.stringify(rows.map((r) => r.id))],
    )
    const resolved = new Map(depRows.map((d) => [`${d.version_id}/${d.position}`, d]))
    const out: [string, string, string, string][] = []
    for (const row of rows) {
      rendered[row.rowid] = 1
      const version = JSON.parse(row.source_json) as NormalisedVersion
      const deps: ResolvedDependency[] = version.dependencies.map((source, i) => {
        const r = resolved.get(`${version.id}/${i}`)
        return { source, project: r ? (projects.get(r.project_id) ?? null) : null, versionId: r?.dep_version_id ?? null }
      })
      const json = JSON.stringify(renderVersion(settings, version, row.downloads, deps))
      const body = renderRawBytes(json)
      const sha256 = hash('sha256', body, 'hex')
      out.push([row.id, json, contentEtag(sha256, body.length), sha256])
    }
    await db.run(
      `UPDATE versions SET json = j.value->>1, body_etag = j.value->>2, body_sha256 = j.value->>3 FROM json_each(?) j WHERE versions.id = j.value->>0`,
      [JSON.stringify(out)],
    )
  }
  return rendered
}

async function writeUserProfiles(db: Db): Promise<void> {
  const rows = await db.all<{ json: string; projects: number; downloads: number; followers: number; favorites: number }>(`
    SELECT u.json, count(p.id) AS projects, coalesce(sum(p.downloads), 0) AS downloads,
      coalesce(sum(p.followers), 0) AS followers, coalesce(sum(p.favorites), 0) AS favorites
    FROM s_users u
    LEFT JOIN (SELECT DISTINCT project_id, user_id FROM project_members) m ON m.user_id = u.id
    LEFT JOIN projects p ON p.id = m.project_id
    GROUP BY u.id ORDER BY u.id`)
  const batch = createBatcher(db, 'users (id, username, author_json, profile_json)')
  for (const row of rows) {
    const user = JSON.parse(row.json) as SourceUser
    const profile = renderUserProfile(user, {
      projects: row.projects,
      downloads: row.downloads,
      followers: row.followers,
      favorites: row.favorites,
    })
    await batch.add([user.id, user.username, JSON.stringify(renderAuthor(user)), JSON.stringify(profile)])
  }
  await batch.flush()
}
