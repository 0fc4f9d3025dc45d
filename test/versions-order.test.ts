/**
 * The visible versions' select (build/catalog.ts visibleVersionsSql): every published version of a
 * visible project once, ranked in its project newest first (published, then created time, then id),
 * in project and rank order (the versions' rowids, which update matching relies on), with the
 * counters' downloads folded in when asked; and one sort for it all, where the same select ordered
 * by `project_id, rank` sorted twice. On a staging database made with the build's own schema.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { visibleVersionsSql } from '../build/catalog.ts'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { stagingIndexes, stagingSchema } from '../build/db/schema.ts'

interface Row {
  id: string
  project_id: string
  rank: number
  downloads: number
}

type Version = [id: string, project: string, status: string, publishedAt: string | null, createdAt: string, downloads: number]

// Ties on purpose: b2 and b3 share both times (the id decides), c1 has no publication time (it sorts
// after those that have one, as SQLite orders NULL last when descending), and a version of a hidden
// project and a draft take no place.
const versions: Version[] = [
  ['a2', 'pa', 'published', '2024-03-01T00:00:00Z', '2024-02-01T00:00:00Z', 5],
  ['a1', 'pa', 'published', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', 7],
  ['a3', 'pa', 'draft', '2024-05-01T00:00:00Z', '2024-05-01T00:00:00Z', 1],
  ['b3', 'pb', 'published', '2024-02-01T00:00:00Z', '2024-02-01T00:00:00Z', 2],
  ['b1', 'pb', 'published', '2024-04-01T00:00:00Z', '2024-01-01T00:00:00Z', 3],
  ['b2', 'pb', 'published', '2024-02-01T00:00:00Z', '2024-02-01T00:00:00Z', 4],
  ['c1', 'pc', 'published', null, '2024-06-01T00:00:00Z', 9],
  ['c2', 'pc', 'published', '2024-01-02T00:00:00Z', '2024-01-02T00:00:00Z', 1],
  ['h1', 'ph', 'published', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', 6],
]

/** The same selection, ranking and order worked out here. */
function expected(counts: Map<string, number> = new Map()): Row[] {
  const visible = versions.filter(([, project, status]) => status === 'published' && project !== 'ph')
  const newestFirst = (x: Version, y: Version): number => {
    // DESC with NULL last, as SQLite orders them.
    const desc = (p: string | null, q: string | null): number => (p === q ? 0 : p === null ? 1 : q === null ? -1 : p < q ? 1 : -1)
    return desc(x[3], y[3]) || desc(x[4], y[4]) || (x[0] < y[0] ? -1 : 1)
  }
  const rows: Row[] = []
  for (const project of [...new Set(visible.map((v) => v[1]))].sort()) {
    visible
      .filter((v) => v[1] === project)
      .sort(newestFirst)
      .forEach((v, rank) => rows.push({ id: v[0], project_id: project, rank, downloads: v[5] + (counts.get(v[0]) ?? 0) }))
  }
  return rows
}

describe('the visible versions of staging, ranked', () => {
  let db: Db
  beforeAll(async () => {
    db = await openDb(':memory:')
    await db.exec(`${stagingSchema} ${stagingIndexes}`)
    for (const [id, project, status, publishedAt, createdAt, downloads] of versions) {
      await db.run(
        `INSERT INTO s_versions (id, project_id, version_number, status, folder, file, json, channel, published_at, created_at, game_versions, platforms, downloads)
         VALUES (?, ?, ?, ?, ?, ?, '{}', 'release', ?, ?, '["1.21.1"]', '["fabric"]', ?)`,
        [id, project, `1.0.${id}`, status, project, `${project}/${id}.json`, publishedAt, createdAt, downloads],
      )
    }
    for (const project of ['pa', 'pb', 'pc', 'ph']) {
      await db.run(`INSERT INTO s_projects (id, slug, type, status, folder, file, json) VALUES (?, ?, 'mod', ?, ?, ?, '{}')`, [project, project, project === 'ph' ? 'private' : 'published', project, `${project}/project.json`])
    }
    // What selectVisible makes (build/catalog.ts).
    await db.exec(`
      CREATE TEMP TABLE visible_projects AS SELECT id FROM s_projects WHERE status = 'published';
      CREATE UNIQUE INDEX temp.visible_projects_id ON visible_projects(id);
      CREATE TEMP TABLE version_counters (version_id TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
      INSERT INTO version_counters VALUES ('a1', 100), ('c1', 20), ('h1', 1000);
    `)
  })
  afterAll(() => db.close())

  it('gives each published version of a visible project once, in project and rank order', async () => {
    const rows = await db.all<Row>(`SELECT id, project_id, rank, downloads FROM (${visibleVersionsSql(false)})`)
    expect(rows).toEqual(expected())
    expect(rows.map((r) => r.id)).toEqual(['a2', 'a1', 'b1', 'b2', 'b3', 'c2', 'c1'])
  })

  it('folds in the counters when asked, in the same order', async () => {
    const rows = await db.all<Row>(`SELECT id, project_id, rank, downloads FROM (${visibleVersionsSql(true)})`)
    expect(rows).toEqual(expected(new Map([['a1', 100], ['c1', 20]])))
  })

  it('sorts once, where ordering by the rank sorted twice', async () => {
    const sorts = async (sql: string): Promise<number> =>
      (await db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)).filter((r) => r.detail.includes('USE TEMP B-TREE FOR ORDER BY')).length
    for (const counted of [false, true]) {
      const sql = visibleVersionsSql(counted)
      expect(await sorts(sql)).toBe(1)
      // The control: the same select with the order written as the rank.
      const byRank = sql.replace(/ORDER BY v\.project_id, v\.published_at DESC, v\.created_at DESC, v\.id\s*$/, 'ORDER BY v.project_id, rank')
      expect(byRank).not.toBe(sql)
      expect(await sorts(byRank)).toBe(2)
      expect(await db.all(byRank)).toEqual(await db.all(sql))
    }
  })
})
