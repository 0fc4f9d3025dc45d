/**
 * Dynamic-endpoint workloads: for each endpoint a list of distinct requests (no request repeats
 * within a cycle), drawn from the catalog with the same Zipf skew as the static reads — installed
 * mods are mostly popular ones. The lists are cycled, so after the warm-up pass every request has
 * been asked before: the shim's static cache answers bulk-update's requests whole and bulk-hashes'
 * hashes one by one, and both are measured again with that cache off; the other endpoints run
 * their SQL every time.
 */
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { API_PREFIX } from '../build/static-paths.ts'
import { createRandom, createZipf, pick } from './zipf.ts'

/** One endpoint's workload. */
export interface DynamicWorkload {
  name: string
  description: string
  listFile: string
  distinct: number
  /** Answered in part or whole from the shim's static cache (bulk-hashes, bulk-update): measured again with CACHE_BYTES=0. */
  usesStaticCache?: boolean
  /**
   * Measured with every request new (bench/lua/urls.lua, mix mode): this many values drawn afresh from the
   * list's pool per request. The list itself is the warm-up.
   */
  mix?: number
}

/** Writes the request lists of every dynamic endpoint (`perEndpoint` distinct requests each). */
export async function createDynamicWorkloads(releaseDir: string, workDir: string, perEndpoint: number, seed: number, s: number): Promise<DynamicWorkload[]> {
  const db = await openDb(path.join(releaseDir, 'catalog.sqlite'), { readonly: true })
  try {
    const random = createRandom(seed)
    const projects = await db.all<{ id: string; slug: string; name: string }>('SELECT id, slug, name FROM projects ORDER BY downloads DESC, id')
    const rank = createZipf(projects.length, s, random)
    const drawProjects = (n: number): { id: string; slug: string; name: string }[] => {
      const seen = new Set<number>()
      // Distinct projects per request (a modpack lists each mod once); bounded when the catalog is small.
      for (let tries = 0; seen.size < Math.min(n, projects.length) && tries < n * 50; tries++) seen.add(rank())
      return [...seen].map((r) => projects[r]!)
    }
    const hashesOf = await createHashPicker(db, random)
    const [gameVersion, platform] = await findCommonTarget(db)
    const categories = (await db.all<{ facet: string }>(`SELECT facet FROM project_facets WHERE facet LIKE 'c:%' GROUP BY facet ORDER BY count(*) DESC LIMIT 5`)).map((r) => r.facet.slice(2))
    const words = commonWords(projects.slice(0, 500).map((p) => p.name))
    const lists: Record<string, { description: string; lines: string[] }> = {
      'bulk-hashes': { description: 'GET /version-files?hashes= 100 SHA-1/SHA-256 hashes of files of Zipf-drawn projects', lines: [] },
      'bulk-update': { description: `GET /version-files/update?hashes= 100 hashes &gameVersion=${gameVersion}&platform=${platform}`, lines: [] },
      'bulk-ids': { description: 'GET /projects?ids= 50 ids and slugs of Zipf-drawn projects', lines: [] },
      'versions-filtered': { description: `GET /projects/{slug}/versions?gameVersion=${gameVersion}&platform=${platform} of Zipf-drawn projects`, lines: [] },
      'search-mix': { description: 'GET /search: common word, rare name, category by downloads, word + game version + platform, in turn', lines: [] },
    }
    for (let i = 0; i < perEndpoint; i++) {
      const hashes = await hashesOf(drawProjects(100))
      lists['bulk-hashes']!.lines.push(`/version-files?hashes=${hashes.join(',')}`)
      const updateHashes = await hashesOf(drawProjects(100))
      lists['bulk-update']!.lines.push(`/version-files/update?hashes=${updateHashes.join(',')}&gameVersion=${gameVersion}&platform=${platform}`)
      lists['bulk-ids']!.lines.push(`/projects?ids=${drawProjects(50).map((p) => (random() < 0.5 ? p.id : p.slug)).join(',')}`)
      const project = projects[rank()]!
      lists['versions-filtered']!.lines.push(`/projects/${project.slug}/versions?gameVersion=${gameVersion}&platform=${platform}`)
      const tail = projects[Math.floor(random() * projects.length)]!
      const search = [
        `q=${encodeURIComponent(pick(words, random))}`,
        `q=${encodeURIComponent(tail.name)}`,
        `category=${encodeURIComponent(pick(categories, random))}&sort=downloads&page=${1 + Math.floor(random() * 5)}`,
        `q=${encodeURIComponent(pick(words, random))}&gameVersion=${gameVersion}&platform=${platform}&sort=downloads`,
      ][i % 4]!
      lists['search-mix']!.lines.push(`/search?${search}`)
    }
    const workloads = Object.entries(lists).map(([name, { description, lines }]): DynamicWorkload => {
      const listFile = path.join(workDir, `dynamic-${name}.tsv`)
      writeFileSync(listFile, lines.map((l) => `${API_PREFIX}${l}`).join('\n') + '\n')
      return { name, description, listFile, distinct: new Set(lines).size, usesStaticCache: name === 'bulk-hashes' || name === 'bulk-update' }
    })
    // Mod lists nobody else sends: every request a new draw of 100 of bulk-hashes' hashes (their
    // Zipf skew kept), so no plan is ever reused and the cache holds only single lookups for it.
    const bulk = workloads.find((w) => w.name === 'bulk-hashes')!
    const unique: DynamicWorkload = {
      name: 'bulk-hashes-unique',
      description: 'GET /version-files?hashes= 100 hashes drawn for each request from the hashes of bulk-hashes\' list (every request new)',
      listFile: bulk.listFile,
      distinct: bulk.distinct,
      mix: 100,
    }
    // Mod folders hold files from elsewhere too (another platform, a local build): the same one-off
    // draws from a pool where one hash in ten is no file of the catalog (random hex of either
    // length, from a generator of its own so the other lists stay as they were).
    const foreignRandom = createRandom(seed + 1)
    const foreignHash = (length: number): string => Array.from({ length }, () => '0123456789abcdef'[Math.floor(foreignRandom() * 16)]).join('')
    const foreignFile = path.join(workDir, 'dynamic-bulk-hashes-foreign.tsv')
    const foreignLines = lists['bulk-hashes']!.lines.map((line) => {
      const [head, list] = line.split('hashes=') as [string, string]
      const hashes = list.split(',').map((h, i) => (i % 10 === 9 ? foreignHash(h.length) : h))
      return `${API_PREFIX}${head}hashes=${hashes.join(',')}`
    })
    writeFileSync(foreignFile, foreignLines.join('\n') + '\n')
    const foreign: DynamicWorkload = {
      name: 'bulk-hashes-foreign',
      description: 'GET /version-files?hashes= 100 hashes drawn for each request as bulk-hashes-unique\'s, from its pool with one hash in ten replaced by one of no file (every request new)',
      listFile: foreignFile,
      distinct: new Set(foreignLines).size,
      mix: 100,
    }
    return workloads.flatMap((w) => (w === bulk ? [w, unique, foreign] : [w]))
  } finally {
    await db.close()
  }
}

/** Returns a function giving one installed-file hash (newest-first Zipf over versions) per project. */
async function createHashPicker(db: Db, random: () => number): Promise<(projects: { id: string }[]) => Promise<string[]>> {
  const versionRank = createZipf(16, 1, random)
  return async (projects) => {
    const rows = await db.all<{ project_id: string; rank: number; sha1: string | null; sha256: string }>(
      `SELECT v.project_id, v.rank, f.sha1, f.sha256 FROM versions v JOIN files f ON f.version_id = v.id
       WHERE v.project_id IN (SELECT value FROM json_each(?)) AND v.rank < 16 ORDER BY v.project_id, v.rank, f.position`,
      [JSON.stringify(projects.map((p) => p.id))],
    )
    const byProject = new Map<string, typeof rows>()
    for (const r of rows) byProject.set(r.project_id, [...(byProject.get(r.project_id) ?? []), r])
    const hashes: string[] = []
    for (const p of projects) {
      const files = byProject.get(p.id)
      if (!files?.length) continue
      const wanted = versionRank()
      const inVersion = files.filter((f) => f.rank === Math.min(wanted, files[files.length - 1]!.rank))
      const file = pick(inVersion.length ? inVersion : files, random)
      hashes.push(file.sha1 && random() < 0.7 ? file.sha1 : file.sha256)
    }
    return hashes
  }
}

/** The most common game version and platform among newest versions (what a modpack targets). */
async function findCommonTarget(db: Db): Promise<[string, string]> {
  const top = async (column: 'game_versions' | 'platforms'): Promise<string> => {
    const row = await db.get<{ value: string }>(
      `SELECT j.value FROM (SELECT ${column} AS list FROM versions WHERE rank = 0 LIMIT 20000) v, json_each(v.list) j GROUP BY j.value ORDER BY count(*) DESC LIMIT 1`,
    )
    if (!row) throw new Error(`no ${column} in the catalog`)
    return row.value
  }
  return [await top('game_versions'), await top('platforms')]
}

/** The most frequent words (4+ letters) of the names: search terms that match many projects. */
function commonWords(names: readonly string[]): string[] {
  const counts = new Map<string, number>()
  for (const name of names) for (const w of name.toLowerCase().split(/[^a-z]+/)) if (w.length >= 4) counts.set(w, (counts.get(w) ?? 0) + 1)
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([w]) => w)
}
