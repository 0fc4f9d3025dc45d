/**
 * The catalog's index passes read their rows a page at a time as one string (build/catalog.ts
 * forEachRowAsText). The sample catalog fits in one page of 50,000 rows, so the paging, the next
 * page asked for ahead and the refusals are tested here on a table of their own, with small pages.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { forEachRowAsText } from '../build/catalog.ts'
import { openDb, type Db } from '../build/db/sqlite.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'text-pages-'))
let db: Db

/** A page of rows (id, rank, a nullable hash, JSON text) after `after`, keyed on (project, rank) as the version targets are. */
const pageSql = (after: string[] | null, limit: number): [string, (string | number)[]] => [
  `SELECT group_concat(project || char(31) || rank || char(31) || coalesce(sha1, '') || char(31) || tags, char(30)) AS page, count(*) AS n
   FROM (SELECT project, rank, sha1, tags FROM t${after === null ? '' : ' WHERE (project, rank) > (?, ?)'} ORDER BY project, rank LIMIT ${limit})`,
  after === null ? [] : [after[0]!, Number(after[1])],
]

beforeAll(async () => {
  db = await openDb(path.join(dir, 'pages.sqlite'))
  await db.exec(`CREATE TABLE t (project TEXT NOT NULL, rank INTEGER NOT NULL, sha1 TEXT, tags TEXT NOT NULL, PRIMARY KEY (project, rank))`)
  // 1,234 rows over 37 projects, every third without a hash, the tags JSON with a newline escaped in it.
  const rows: string[] = []
  for (let i = 0; i < 1234; i++) {
    const project = `p${String(i % 37).padStart(2, '0')}`
    rows.push(`('${project}', ${Math.floor(i / 37)}, ${i % 3 === 0 ? 'NULL' : `'${i.toString(16).padStart(40, '0')}'`}, '${JSON.stringify(['1.21', `line\nbreak ${i}`]).replaceAll("'", "''")}')`)
  }
  await db.exec(`INSERT INTO t VALUES ${rows.join(',')}`)
})

afterAll(async () => {
  await db.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('pages of rows read as text', () => {
  it('gives every row once, in key order, across pages of any size, pages that end on the last row included', async () => {
    const expected = (await db.all<{ project: string; rank: number; sha1: string | null; tags: string }>(`SELECT project, rank, sha1, tags FROM t ORDER BY project, rank`)).map(
      (r) => [r.project, String(r.rank), r.sha1 ?? '', r.tags],
    )
    expect(expected).toHaveLength(1234)
    for (const limit of [1, 7, 100, 617, 1234, 5000]) {
      const seen: string[][] = []
      await forEachRowAsText(db, 4, pageSql, (fields) => seen.push(fields), limit)
      expect(seen, `pages of ${limit}`).toEqual(expected)
    }
  })

  it('refuses a page that loses a row to a NULL, and a row whose text holds a separator', async () => {
    const plain = (after: string[] | null, limit: number): [string, (string | number)[]] => {
      const [sql, params] = pageSql(after, limit)
      return [sql.replace("coalesce(sha1, '')", 'sha1'), params]
    }
    await expect(forEachRowAsText(db, 4, plain, () => {}, 100)).rejects.toThrow(/a page of 100 rows was read as \d+: a column held NULL or a separator/)
    await db.run(`UPDATE t SET tags = 'a' || char(31) || 'b' WHERE project = 'p05' AND rank = 3`)
    try {
      await expect(forEachRowAsText(db, 4, pageSql, () => {}, 50)).rejects.toThrow(/a row read as 5 fields, not 4/)
    } finally {
      await db.run(`UPDATE t SET tags = '[]' WHERE project = 'p05' AND rank = 3`)
    }
  })
})
