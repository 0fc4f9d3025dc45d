/**
 * Pre-renders each visible project under its id and its slug: the detail, its dependencies, its
 * current files and the first page of its versions list.
 */
import type { CatalogMaps } from '../catalog.ts'
import type { Db } from '../db/sqlite.ts'
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

/** Writes every project's static files. */
export async function writeProjectFiles(db: Db, maps: CatalogMaps, writer: ReleaseSink): Promise<void> {
  type ProjectRow = { rowid: number; id: string; slug: string; summary_json: string; source_json: string }
  const batches = prefetchBatches(0, async (last: number) => {
    const projects = await db.all<ProjectRow>(
      `SELECT rowid, id, slug, summary_json, source_json FROM projects WHERE rowid > ? ORDER BY rowid LIMIT ${BATCH}`,
      [last],
    )
    if (projects.length === 0) return null
    const ids = JSON.stringify(projects.map((p) => p.id))
    // Queued together: SQLite's thread runs them back to back.
    const [members, firstPages, totals, deps] = await Promise.all([
      db.all<{ project_id: string; user_id: string; role: string }>(
        `SELECT project_id, user_id, role FROM project_members WHERE project_id IN (SELECT value FROM json_each(?)) ORDER BY project_id, position`,
        [ids],
      ),
      db.all<{ project_id: string; json: string }>(
        `SELECT project_id, json FROM versions WHERE project_id IN (SELECT value FROM json_each(?)) AND rank < ${DEFAULT_LIMIT} ORDER BY project_id, rank`,
        [ids],
      ),
      db.all<{ project_id: string; n: number }>(
        `SELECT project_id, count(*) AS n FROM versions WHERE project_id IN (SELECT value FROM json_each(?)) GROUP BY project_id`,
        [ids],
      ),
      listDependencies(db, ids),
    ])
    const batch = {
      projects,
      members: groupBy(members, (r) => r.project_id),
      firstPages: groupBy(firstPages, (r) => r.project_id),
      totals: new Map(totals.map((r) => [r.project_id, r.n])),
      deps,
    }
    return { batch, next: projects[projects.length - 1]!.rowid }
  })
  for await (const { projects, members, firstPages, totals, deps } of batches) {
    for (const p of projects) {
      const source = JSON.parse(p.source_json) as SourceProject
      const summary = JSON.parse(p.summary_json) as ProjectSummary
      const pageRows = firstPages.get(p.id) ?? []
      const current = pageRows[0] ? (JSON.parse(pageRows[0].json) as Version) : null
      const team: { role: string; user: Author }[] = (members.get(p.id) ?? []).map((m) => ({
        role: m.role,
        user: maps.authors.get(m.user_id)!,
      }))
      const names = (suffix: string): string[] => [apiFile(`/projects/${p.id}${suffix}`), apiFile(`/projects/${p.slug}${suffix}`)]
      writer.write(names(''), renderBodyBytes(renderProjectDetail(summary, source, team, current)))
      writer.write(names('/files'), renderBodyBytes(current?.files ?? []))
      const total = totals.get(p.id) ?? 0
      writer.write(
        names('/versions'),
        renderRawListBytes(pageRows.map((r) => r.json), renderPageMeta(1, DEFAULT_LIMIT, total)),
      )
      const d = deps.get(p.id) ?? { projects: [], versions: [] }
      writer.write(names('/dependencies'), Buffer.from(`{"data":{"projects":[${d.projects.join(',')}],"versions":[${d.versions.join(',')}]}}`))
    }
    await writer.drain()
  }
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
