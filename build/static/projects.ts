/**
 * Pre-renders each visible project under its id and its slug: the detail, its dependencies, its
 * current files and the first page of its versions list.
 */
import type { CatalogMaps } from '../catalog.ts'
import { BODIES_PER_PROJECT, type BodyRef, type ProjectBodiesWriter } from '../catalog-memo.ts'
import { keepingStatements, type Db } from '../db/sqlite.ts'
import { renderBodyBytes, renderPageMeta, renderRawListBytes } from '../render/body.ts'
import { renderProjectDetail } from '../render/resources.ts'
import type { Author, ProjectSummary, Version } from '../schema/api.ts'
import type { SourceProject } from '../schema/source.ts'
import { apiFile } from '../static-paths.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { prefetchBatches } from './prefetch.ts'

const BATCH = 500
/** Default page size of paginated lists (SPEC §4). */
export const DEFAULT_LIMIT = 20

/**
 * What writeProjectFiles may reuse: the live release's bodies of each project (readProjectBodies),
 * named without rendering for every project the catalog connection does not list in
 * `temp.memo_project_render` (catalog-memo.ts); null: every project is rendered.
 */
export type ProjectReuse = Map<string, BodyRef[]> | null

/**
 * Writes every project's static files; records each project's bodies in `out` (for the next build),
 * and names a project's bodies from `reuse` without rendering them when its inputs are unchanged.
 * Returns how many projects were named so.
 */
export async function writeProjectFiles(
  catalog: Db,
  maps: CatalogMaps,
  writer: ReleaseSink,
  reuse: ProjectReuse = null,
  out: ProjectBodiesWriter | null = null,
): Promise<{ reused: number }> {
  // Its seven queries kept prepared, so the page asked for ahead runs while this thread renders the last (db/sqlite.ts).
  const db = keepingStatements(catalog, 7)
  try {
    return await writeProjectPages(db, maps, writer, reuse, out)
  } finally {
    await db.release()
  }
}

/** writeProjectFiles' work, its pages read through `db`'s kept statements. */
async function writeProjectPages(db: Db, maps: CatalogMaps, writer: ReleaseSink, reuse: ProjectReuse, out: ProjectBodiesWriter | null): Promise<{ reused: number }> {
  type ProjectRow = { rowid: number; id: string; slug: string; changed: number }
  const batches = prefetchBatches(0, async (last: number) => {
    const projects = await db.all<ProjectRow>(
      `SELECT rowid, id, slug, ${reuse ? 'id IN temp.memo_project_render' : '1'} AS changed FROM projects WHERE rowid > ? ORDER BY rowid LIMIT ${BATCH}`,
      [last],
    )
    if (projects.length === 0) return null
    const known = new Map<string, BodyRef[]>()
    for (const p of projects) {
      const bodies = p.changed ? undefined : reuse?.get(p.id)
      if (bodies?.length === BODIES_PER_PROJECT) known.set(p.id, bodies)
    }
    const ids = JSON.stringify(projects.filter((p) => !known.has(p.id)).map((p) => p.id))
    // Queued together: SQLite's thread runs them back to back (none when every project of the batch is named from `reuse`).
    const none = ids === '[]'
    const all = <T>(sql: string, params: string[]): Promise<T[]> => (none ? Promise.resolve([]) : db.all<T>(sql, params))
    const [rows, members, firstPages, totals, deps] = await Promise.all([
      all<{ id: string; summary_json: string; source_json: string }>(
        `SELECT id, summary_json, source_json FROM projects WHERE id IN (SELECT value FROM json_each(?))`,
        [ids],
      ),
      all<{ project_id: string; user_id: string; role: string }>(
        `SELECT project_id, user_id, role FROM project_members WHERE project_id IN (SELECT value FROM json_each(?)) ORDER BY project_id, position`,
        [ids],
      ),
      all<{ project_id: string; json: string }>(
        `SELECT project_id, json FROM versions WHERE project_id IN (SELECT value FROM json_each(?)) AND rank < ${DEFAULT_LIMIT} ORDER BY project_id, rank`,
        [ids],
      ),
      all<{ project_id: string; n: number }>(
        `SELECT project_id, count(*) AS n FROM versions WHERE project_id IN (SELECT value FROM json_each(?)) GROUP BY project_id`,
        [ids],
      ),
      none ? new Map<string, { projects: string[]; versions: string[] }>() : listDependencies(db, ids),
    ])
    const batch = {
      projects,
      known,
      rows: new Map(rows.map((r) => [r.id, r])),
      members: groupBy(members, (r) => r.project_id),
      firstPages: groupBy(firstPages, (r) => r.project_id),
      totals: new Map(totals.map((r) => [r.project_id, r.n])),
      deps,
    }
    return { batch, next: projects[projects.length - 1]!.rowid }
  })
  let reused = 0
  for await (const { projects, known, rows, members, firstPages, totals, deps } of batches) {
    for (const p of projects) {
      const names = (suffix: string): string[] => [apiFile(`/projects/${p.id}${suffix}`), apiFile(`/projects/${p.slug}${suffix}`)]
      const suffixes = ['', '/files', '/versions', '/dependencies']
      const stored = known.get(p.id)
      if (stored) {
        for (const [i, suffix] of suffixes.entries()) writer.writeStored(names(suffix), stored[i]!.sha256, stored[i]!.size)
        out?.add(p.id, stored)
        reused++
        continue
      }
      const row = rows.get(p.id)!
      const source = JSON.parse(row.source_json) as SourceProject
      const summary = JSON.parse(row.summary_json) as ProjectSummary
      const pageRows = firstPages.get(p.id) ?? []
      const current = pageRows[0] ? (JSON.parse(pageRows[0].json) as Version) : null
      const team: { role: string; user: Author }[] = (members.get(p.id) ?? []).map((m) => ({
        role: m.role,
        user: maps.authors.get(m.user_id)!,
      }))
      const total = totals.get(p.id) ?? 0
      const d = deps.get(p.id) ?? { projects: [], versions: [] }
      // In the order of `suffixes`.
      const bodies = [
        renderBodyBytes(renderProjectDetail(summary, source, team, current)),
        renderBodyBytes(current?.files ?? []),
        renderRawListBytes(
          pageRows.map((r) => r.json),
          renderPageMeta(1, DEFAULT_LIMIT, total),
        ),
        Buffer.from(`{"data":{"projects":[${d.projects.join(',')}],"versions":[${d.versions.join(',')}]}}`),
      ]
      const refs = bodies.map((bytes, i) => ({ sha256: writer.write(names(suffixes[i]!), bytes), size: bytes.length }))
      out?.add(p.id, refs)
    }
    await writer.drain()
  }
  return { reused }
}

/**
 * Dependencies payload of each project: the visible projects and versions its published versions
 * depend on through required, optional and embedded dependencies (incompatible ones are not needs).
 */
export async function listDependencies(db: Db, projectIds: string): Promise<Map<string, { projects: string[]; versions: string[] }>> {
  const out = new Map<string, { projects: string[]; versions: string[] }>()
  const [projectRows, versionRows] = await Promise.all([
    db.all<{ owner: string; json: string }>(
      `SELECT DISTINCT v.project_id AS owner, p.summary_json AS json, p.downloads, p.id
     FROM dependencies d JOIN versions v ON v.id = d.version_id JOIN projects p ON p.id = d.project_id
     WHERE v.project_id IN (SELECT value FROM json_each(?)) AND d.type IN ('required', 'optional', 'embedded')
     ORDER BY owner, p.downloads DESC, p.id`,
      [projectIds],
    ),
    db.all<{ owner: string; json: string }>(
      `SELECT DISTINCT v.project_id AS owner, w.json, w.published_at, w.created_at, w.id
     FROM dependencies d JOIN versions v ON v.id = d.version_id JOIN versions w ON w.id = d.dep_version_id
     WHERE v.project_id IN (SELECT value FROM json_each(?)) AND d.type IN ('required', 'optional', 'embedded')
     ORDER BY owner, w.published_at DESC, w.created_at DESC, w.id`,
      [projectIds],
    ),
  ])
  const entry = (owner: string): { projects: string[]; versions: string[] } => {
    let e = out.get(owner)
    if (!e) out.set(owner, (e = { projects: [], versions: [] }))
    return e
  }
  for (const r of projectRows) entry(r.owner).projects.push(r.json)
  for (const r of versionRows) entry(r.owner).versions.push(r.json)
  return out
}

/** Groups rows by a key, keeping their order. */
export function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const row of rows) {
    const k = key(row)
    const list = out.get(k)
    if (list) list.push(row)
    else out.set(k, [row])
  }
  return out
}
