/**
 * The hash lookups' and update matching's answers come out of SQLite as one BLOB of records
 * (`<hash><JSON object>`, or `<rowid><ETag><JSON object>` by rowid, apart by NUL bytes;
 * shim/versions-query.ts). Here on a real SQLite connection, with the same group_concat the queries
 * use, over text with multi-byte characters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDb, type Db } from '../build/db/sqlite.ts'
import { splitHashRecords, splitRowidRecords } from '../shim/versions-query.ts'

const sha1 = 'a'.repeat(39) + 'f'
const sha256 = '0123456789abcdef'.repeat(4)

let db: Db
beforeAll(async () => {
  db = await openDb(':memory:')
  await db.exec(`CREATE TABLE t (k INTEGER, hash TEXT, json TEXT)`)
})
afterAll(async () => {
  await db.close()
})

/** The records of the rows given, made as the shim's queries make them. */
async function recordsOf(rows: [number, string, string | null][]): Promise<Buffer | null> {
  await db.run(`DELETE FROM t`)
  for (const row of rows) await db.run(`INSERT INTO t VALUES (?, ?, ?)`, row)
  const [row] = await db.all<{ records: Buffer | null }>(`SELECT CAST(group_concat(hash || json, char(0) ORDER BY k) AS BLOB) AS records FROM t`)
  return row!.records
}

describe('splitHashRecords', () => {
  it('gives each hash with the exact bytes of its JSON, SHA-1 and SHA-256 alike, in the records\' order; a NULL JSON leaves its hash out', async () => {
    const first = JSON.stringify({ data: { name: 'Café ☕ 💥', changelog: 'tab\tline\nend' } })
    const second = JSON.stringify({ id: 'x', text: '\u0000 escaped, never raw' })
    const records = await recordsOf([
      [2, sha256, second],
      [1, sha1, first],
      [3, 'b'.repeat(40), null],
    ])
    expect(records).toBeInstanceOf(Buffer)
    const split = splitHashRecords(records)
    expect(split.map((r) => r.hash)).toEqual([sha1, sha256])
    expect(split.map((r) => r.body.toString('utf8'))).toEqual([first, second])
    expect(Buffer.compare(split[0]!.body, Buffer.from(first))).toBe(0)
  })

  it('gives nothing for no record (every JSON NULL, or no row)', async () => {
    expect(await recordsOf([[1, sha1, null]])).toBeNull()
    expect(splitHashRecords(null)).toEqual([])
    expect(await recordsOf([])).toBeNull()
  })

  it('refuses a record that is not a hash of 40 or 64 characters and a JSON object, naming where it starts', () => {
    expect(() => splitHashRecords(Buffer.from(`${sha1}{}\u0000abc{}`))).toThrow('at byte 43 is not a hash and a JSON object')
    expect(() => splitHashRecords(Buffer.from(`${sha256}{"a":1`))).toThrow('at byte 0 is not a hash and a JSON object')
    expect(() => splitHashRecords(Buffer.from(`${sha1}x{}`))).toThrow('at byte 0')
  })
})

describe('splitRowidRecords', () => {
  /** The records of versions rows, made as findSingleLookupsByRowids' queries make them, with or without their ETag. */
  async function rowidRecordsOf(rows: [number, string | null, string | null][], withEtag: boolean): Promise<Buffer | null> {
    await db.exec(`DROP TABLE IF EXISTS v; CREATE TABLE v (rowid INTEGER PRIMARY KEY, body_etag TEXT, json TEXT)`)
    for (const row of rows) await db.run(`INSERT INTO v VALUES (?, ?, ?)`, row)
    const made = withEtag ? `v.rowid || coalesce(v.body_etag, '') || '{"data":' || v.json || '}'` : `v.rowid || '{"data":' || v.json || '}'`
    const [row] = await db.all<{ records: Buffer | null }>(`SELECT CAST(group_concat(${made}, char(0)) AS BLOB) AS records FROM v`)
    return row!.records
  }

  it('gives each version\'s single lookup bytes by rowid, with its stored ETag when there is one', async () => {
    const first = JSON.stringify({ name: 'Café ☕ 💥', changelog: 'tab\tline\nend' })
    const second = JSON.stringify({ id: 'x' })
    const rows: [number, string | null, string | null][] = [
      [7, '"1a2b3c-4d5"', first],
      [1234567, null, second],
      [9, '"ff-1"', null],
    ]
    const withEtag = splitRowidRecords(await rowidRecordsOf(rows, true))
    expect([...withEtag.keys()]).toEqual([7, 1234567])
    expect(withEtag.get(7)!.etag).toBe('"1a2b3c-4d5"')
    expect(withEtag.get(1234567)!.etag).toBeUndefined()
    expect(withEtag.get(7)!.body.toString('utf8')).toBe(`{"data":${first}}`)
    expect(withEtag.get(1234567)!.body.toString('utf8')).toBe(`{"data":${second}}`)
    const without = splitRowidRecords(await rowidRecordsOf(rows, false))
    expect([...without.entries()].map(([r, l]) => [r, l.etag, l.body.toString('utf8')])).toEqual([
      [7, undefined, `{"data":${first}}`],
      [1234567, undefined, `{"data":${second}}`],
    ])
    expect(splitRowidRecords(null).size).toBe(0)
  })

  it('refuses a record that is not a rowid, an ETag and a JSON object, naming where it starts', () => {
    expect(() => splitRowidRecords(Buffer.from(`7{}\u0000{}`))).toThrow('at byte 4 is not a rowid, an ETag and a JSON object')
    expect(() => splitRowidRecords(Buffer.from(`7"ab-1{}`))).toThrow('at byte 0 has an unclosed ETag')
    expect(() => splitRowidRecords(Buffer.from(`7"ab-1"x{}`))).toThrow('at byte 0 is not a rowid')
    expect(() => splitRowidRecords(Buffer.from(`7{"a":1`))).toThrow('at byte 0')
  })
})
