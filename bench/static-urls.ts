/**
 * The static-read workload: project, version and hash-lookup URLs of the catalog drawn with a Zipf
 * skew (projects by download rank, versions newest first), written as the URL lists wrk cycles
 * through, with each server's own ETag for the If-None-Match runs, and the url→file map of the raw
 * server. Every URL is checked to exist as a pre-rendered file, so all three servers answer it.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { openDb } from '../build/db/sqlite.ts'
import { createBody } from '../build/render/body.ts'
import { API_PREFIX, apiFile } from '../build/static-paths.ts'
import { createRandom, createZipf, pick } from './zipf.ts'

/** Kinds of static URL in the mix. */
export const STATIC_KINDS = ['project', 'version', 'hash'] as const
export type StaticKind = (typeof STATIC_KINDS)[number]

/** Files and figures of the generated workload. */
export interface StaticWorkload {
  /** "path<TAB>etag" with the shim's (and raw server's) ETags. */
  nodeListFile: string
  /** "path<TAB>etag" with nginx's ETags (mtime-size). */
  nginxListFile: string
  /** "path<TAB>file" for the raw server. */
  mapFile: string
  requests: number
  kinds: Record<StaticKind, number>
  distinctUrls: number
  distinctBytes: number
  /** Share of requests going to the 1% most requested URLs. */
  top1PctShare: number
  probePath: string
}

interface VersionRow { id: string; project_id: string; rank: number; sha1: string | null; sha256: string }

/** Draws `requests` URLs (Zipf exponent s) from the release's catalog and writes the lists. */
export async function createStaticWorkload(releaseDir: string, workDir: string, requests: number, seed: number, s: number): Promise<StaticWorkload> {
  const db = await openDb(path.join(releaseDir, 'catalog.sqlite'), { readonly: true })
  const random = createRandom(seed)
  let drawn: { kind: StaticKind; rank: number; versionRank: number }[]
  let projects: { id: string; slug: string }[]
  const byProject = new Map<string, VersionRow[][]>()
  try {
    projects = await db.all<{ id: string; slug: string }>('SELECT id, slug FROM projects ORDER BY downloads DESC, id')
    const projectRank = createZipf(projects.length, s, random)
    const versionRank = createZipf(64, s, random)
    drawn = Array.from({ length: requests }, (_, i) => ({ kind: STATIC_KINDS[i % 3]!, rank: projectRank(), versionRank: versionRank() }))
    const needed = [...new Set(drawn.filter((d) => d.kind !== 'project').map((d) => projects[d.rank]!.id))]
    const rows = await db.all<VersionRow>(
      `SELECT v.id, v.project_id, v.rank, f.sha1, f.sha256 FROM versions v JOIN files f ON f.version_id = v.id
       WHERE v.project_id IN (SELECT value FROM json_each(?)) ORDER BY v.project_id, v.rank, f.position`,
      [JSON.stringify(needed)],
    )
    for (const row of rows) {
      const list = byProject.get(row.project_id) ?? []
      ;(list[row.rank] ??= []).push(row)
      byProject.set(row.project_id, list)
    }
  } finally {
    await db.close()
  }
  const kinds: Record<StaticKind, number> = { project: 0, version: 0, hash: 0 }
  const paths: string[] = []
  for (const d of drawn) {
    const project = projects[d.rank]!
    let apiPath = `/projects/${project.slug}`
    if (d.kind !== 'project') {
      const versions = (byProject.get(project.id) ?? []).filter(Boolean)
      if (versions.length === 0) continue
      const files = versions[Math.min(d.versionRank, versions.length - 1)]!
      const file = pick(files, random)
      apiPath = d.kind === 'version' ? `/versions/${file.id}` : `/version-files/${file.sha1 && random() < 0.7 ? file.sha1 : file.sha256}`
    }
    kinds[d.kind]++
    paths.push(apiPath)
  }
  return writeStaticLists(releaseDir, workDir, paths, kinds)
}

function writeStaticLists(releaseDir: string, workDir: string, paths: string[], kinds: Record<StaticKind, number>): StaticWorkload {
  const info = new Map<string, { file: string; nodeEtag: string; nginxEtag: string; size: number }>()
  const counts = new Map<string, number>()
  const missing = new Set<string>()
  for (const p of paths) {
    if (info.has(p) || missing.has(p)) continue
    const file = path.join(releaseDir, apiFile(p))
    const st = statSync(file, { throwIfNoEntry: false })
    if (!st) {
      missing.add(p)
      continue
    }
    // nginx's ETag: hex mtime (seconds) and hex length, from the same inode.
    const nginxEtag = `"${Math.floor(st.mtimeMs / 1000).toString(16)}-${st.size.toString(16)}"`
    info.set(p, { file, nodeEtag: createBody(readFileSync(file)).etag, nginxEtag, size: st.size })
  }
  if (missing.size > 0) throw new Error(`${missing.size} drawn URLs have no pre-rendered file, e.g. ${[...missing][0]}`)
  for (const p of paths) counts.set(p, (counts.get(p) ?? 0) + 1)
  const lines = (etag: (p: string) => string): string => paths.map((p) => `${API_PREFIX}${p}\t${etag(p)}`).join('\n') + '\n'
  const nodeListFile = path.join(workDir, 'static-node.tsv')
  const nginxListFile = path.join(workDir, 'static-nginx.tsv')
  const mapFile = path.join(workDir, 'static-map.tsv')
  writeFileSync(nodeListFile, lines((p) => info.get(p)!.nodeEtag))
  writeFileSync(nginxListFile, lines((p) => info.get(p)!.nginxEtag))
  writeFileSync(mapFile, [...info].map(([p, i]) => `${API_PREFIX}${p}\t${i.file}`).join('\n') + '\n')
  const sorted = [...counts.values()].sort((a, b) => b - a)
  const top = sorted.slice(0, Math.max(1, Math.ceil(sorted.length / 100))).reduce((a, b) => a + b, 0)
  return {
    nodeListFile,
    nginxListFile,
    mapFile,
    requests: paths.length,
    kinds,
    distinctUrls: info.size,
    distinctBytes: [...info.values()].reduce((a, i) => a + i.size, 0),
    top1PctShare: top / paths.length,
    probePath: `${API_PREFIX}${paths[0]}`,
  }
}
