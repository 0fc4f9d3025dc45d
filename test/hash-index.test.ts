/**
 * The catalog's index of known file hashes (build/hash-index.ts): its layout as the README documents
 * it, what it holds and rules out, candidates newest first, and the shim answering through it: hashes
 * it rules out without a query, a made-up hash with a real file's prefix as unknown, the same answers
 * as without it. Through the sample catalog's real build and a real server.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { candidateRowids, candidatesOfHashes, createHashIndex, hashHolder, hashIndexRow, holdsHash, mayBeKnown, possiblyKnownHashes, readHashIndexRow, type HashIndex } from '../build/hash-index.ts'
import { renderRawBody } from '../build/render/body.ts'
import { errorSchema } from '../build/schema/api.ts'
import { openRelease } from '../shim/release.ts'
import { json, startServer, withCatalogCopy, type TestServer } from './harness.ts'

/** A hex string of `length` characters, fixed by `seed`. */
function hexOf(seed: string, length: 40 | 64): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, length)
}

/** `hash` with its characters after the first 8 (its 32-bit prefix) replaced by those of `seed`'s. */
function samePrefix(hash: string, seed: string): string {
  return hash.slice(0, 8) + hexOf(seed, 64).slice(8, hash.length)
}

/** An index of these (hash, version rowid, rank) entries, through its stored row and back, as the shim reads it. */
function indexOf(entries: readonly (readonly [string, number, number])[]): HashIndex {
  const made = createHashIndex(entries.length)
  for (const [hash, rowid, rank] of entries) made.add(hash, rowid, rank)
  return readHashIndexRow(hashIndexRow(made.finish()), 'c.sqlite')
}

describe('the index', () => {
  it('holds every hash added, with its version, and rules out nearly every other', () => {
    const known = Array.from({ length: 5000 }, (_, i) => hexOf(`known ${i}`, i % 2 === 0 ? 64 : 40))
    const index = indexOf(known.map((h, i) => [h, 1000 + i, 0]))
    expect(known.map((h) => candidateRowids(index, h))).toEqual(known.map((_, i) => [1000 + i]))
    expect(candidatesOfHashes(index, known)).toEqual(known.map((_, i) => [1000 + i]))
    // n / 2^32 of unknown hashes share a known prefix: about 0.0001% here.
    const others = Array.from({ length: 40_000 }, (_, i) => hexOf(`other ${i}`, i % 2 === 0 ? 64 : 40))
    expect(others.filter((h) => mayBeKnown(index, h)).length).toBeLessThan(3)
    expect(candidatesOfHashes(index, others).filter((c) => c.length > 0).length).toBe(others.filter((h) => mayBeKnown(index, h)).length)
    expect(possiblyKnownHashes(index, [...others.slice(0, 50), ...known.slice(0, 50)])).toEqual([...others.slice(0, 50).filter((h) => mayBeKnown(index, h)), ...known.slice(0, 50)])
  })

  it('stores the layout the README documents: 16-bit buckets, 16-bit keys, 32-bit rowids, little-endian', () => {
    const entries = Array.from({ length: 3000 }, (_, i) => [hexOf(`layout ${i}`, i % 3 === 0 ? 40 : 64), (i * 7919) % 100_003, i % 5] as const)
    const made = createHashIndex(entries.length)
    for (const [hash, rowid, rank] of entries) made.add(hash, rowid, rank)
    const row = hashIndexRow(made.finish())
    // The reference: entries by 32-bit prefix, then rank, then rowid.
    const sorted = [...entries].sort((a, b) => parseInt(a[0].slice(0, 8), 16) - parseInt(b[0].slice(0, 8), 16) || a[2] - b[2] || a[1] - b[1])
    expect(row.entries).toBe(entries.length)
    expect(row.buckets.length).toBe(65_537 * 4)
    for (const [i, [hash, rowid]] of sorted.entries()) {
      expect(row.keys.readUInt16LE(i * 2)).toBe(parseInt(hash.slice(4, 8), 16))
      expect(row.rowids.readUInt32LE(i * 4)).toBe(rowid)
      const bucket = parseInt(hash.slice(0, 4), 16)
      expect(row.buckets.readUInt32LE(bucket * 4)).toBeLessThanOrEqual(i)
      expect(row.buckets.readUInt32LE((bucket + 1) * 4)).toBeGreaterThan(i)
    }
    expect(row.buckets.readUInt32LE(65_536 * 4)).toBe(entries.length)
  })

  it('gives the candidates of a shared prefix newest first, each version once', () => {
    const hash = hexOf('shared', 64)
    const twin = samePrefix(hash, 'twin')
    const sha1 = samePrefix(hexOf('short', 40), 'short').slice(0, 40)
    const index = indexOf([
      [hash, 30, 2],
      [twin, 10, 0],
      [hash, 20, 1],
      // The same version for two hashes of one prefix: one candidate.
      [twin, 20, 1],
      [sha1, 5, 0],
    ])
    expect(candidateRowids(index, hash)).toEqual([10, 20, 30])
    expect(candidateRowids(index, twin)).toEqual([10, 20, 30])
    expect(candidatesOfHashes(index, [twin, sha1, hexOf('none', 40)])).toEqual([[10, 20, 30], [5], []])
    expect(index.keys.length).toBe(4)
    expect(hashHolder(hash)).toBe(`"sha256":"${hash}"`)
    expect(hashHolder(sha1)).toBe(`"sha1":"${sha1}"`)
  })

  it('finds a hash\'s holder text exactly where a plain search of it does', () => {
    const [a, b] = [hexOf('held a', 64), hexOf('held b', 40)]
    const bodies = [
      `{"data":{"files":[{"sha256":"${a}","sha1":"${b}"}]}}`,
      // The hash as another member's value, in a string, under the other algorithm's key, cut short.
      `{"data":{"versionNumber":"${a}","changelog":"\\"sha256\\":\\"${a}\\"","files":[{"sha1":"${a.slice(0, 40)}","sha256":"${a.slice(0, 63)}"}]}}`,
      `{"data":{"id":"x","files":[{"sha256":"${b}${a.slice(40)}","sha1":"${b}"}]}}`,
      `"sha256":"${a}"`,
      `{"x":":\\"${a}\\"","sha256":"${a}"}`,
      '',
    ]
    const hashes = [a, b, a.slice(0, 40), hexOf('other', 64)]
    for (const body of bodies) {
      const json = Buffer.from(body)
      for (const hash of hashes) {
        for (const from of [0, 8, 12]) expect(holdsHash(json, hash, from), `${body} ${hash} ${from}`).toBe(json.includes(hashHolder(hash), from, 'latin1'))
      }
    }
    expect(holdsHash(Buffer.from(bodies[0]!), a, 0)).toBe(true)
    expect(holdsHash(Buffer.from(bodies[1]!), a, 0)).toBe(false)
  })

  it('of no hashes rules out every hash', () => {
    const index = indexOf([])
    expect([hexOf('a', 40), hexOf('b', 64)].map((h) => mayBeKnown(index, h))).toEqual([false, false])
    expect(candidatesOfHashes(index, [hexOf('a', 40)])).toEqual([[]])
  })

  it('refuses a version rowid it cannot hold, and more hashes than it was made for', () => {
    expect(() => createHashIndex(1).add(hexOf('a', 40), 2 ** 32, 0)).toThrow(/version rowid 4294967296 does not fit/)
    const made = createHashIndex(1)
    made.add(hexOf('a', 40), 1, 0)
    expect(() => made.add(hexOf('b', 40), 2, 0)).toThrow(/made for 1 hashes/)
  })

  it('is refused when its row is malformed', () => {
    const row = hashIndexRow(createHashIndexOf([hexOf('x', 64), hexOf('y', 64), hexOf('z', 40)]))
    expect(readHashIndexRow(row, 'c.sqlite').keys.length).toBe(3)
    const unsorted = { ...row, keys: Buffer.from(row.keys), buckets: Buffer.alloc(row.buckets.length) }
    // All three entries in bucket 0, with keys out of order.
    unsorted.buckets.fill(0)
    for (let b = 1; b <= 65_536; b++) unsorted.buckets.writeUInt32LE(3, b * 4)
    unsorted.keys.writeUInt16LE(9, 0)
    unsorted.keys.writeUInt16LE(3, 2)
    const broken = [
      { ...row, entries: 2.5 },
      { ...row, entries: 4 },
      { ...row, keys: 'text' },
      { ...row, buckets: row.buckets.subarray(4) },
      { ...row, buckets: Buffer.alloc(row.buckets.length) },
      unsorted,
      { buckets: undefined, keys: undefined, rowids: undefined, entries: undefined },
    ]
    for (const bad of broken) expect(() => readHashIndexRow(bad, 'c.sqlite')).toThrow(/c\.sqlite: its hash_index row is malformed/)
  })
})

/** An index of these hashes, each in its own version. */
function createHashIndexOf(hashes: readonly string[]): HashIndex {
  const made = createHashIndex(hashes.length)
  for (const [i, h] of hashes.entries()) made.add(h, i + 1, 0)
  return made.finish()
}

describe('the catalog\'s index in the shim', () => {
  let server: TestServer
  /** Every hash of the catalog's files, each once (a file can be in two versions: the sample has such). */
  let known: string[] = []
  /** Hashes of no file whose prefix the index does not hold. */
  let ruledOut: string[] = []

  beforeAll(async () => {
    server = await startServer(inject('distDir'))
    const rows = await server.ctx.release.db.all<{ sha256: string; sha1: string | null }>(`SELECT sha256, sha1 FROM files ORDER BY id`)
    known = [...new Set(rows.flatMap((r) => (r.sha1 === null ? [r.sha256] : [r.sha256, r.sha1])))]
    expect(known.length).toBeLessThan(rows.length * 2)
    const index = server.ctx.release.hashIndex!
    ruledOut = Array.from({ length: 40 }, (_, i) => hexOf(`not a file ${i}`, i % 2 === 0 ? 64 : 40)).filter((h) => !mayBeKnown(index, h)).slice(0, 20)
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })

  /** An answer's status and text, and its ETag when it is a 200. */
  const ask = async (url: string): Promise<{ status: number; text: string; etag?: string }> => {
    const res = await server.get(url)
    const text = await res.text()
    return res.status === 200 ? { status: res.status, text, etag: res.headers.get('etag')! } : { status: res.status, text }
  }

  it('is built over every file\'s SHA-1 and SHA-256, read with the release, and names each hash\'s newest version first', async () => {
    const { db, hashIndex } = server.ctx.release
    const row = await db.get<{ entries: number }>(`SELECT entries FROM hash_index`)
    expect(known.length).toBeGreaterThan(100)
    expect(row!.entries).toBe(hashIndex!.keys.length)
    // One entry a file's hash and its version: a hash in two versions has two.
    const { n } = (await db.get<{ n: number }>(`SELECT count(sha256) + count(sha1) AS n FROM files`))!
    expect([row!.entries, n > known.length]).toEqual([n, true])
    expect(ruledOut).toHaveLength(20)
    // The rule of every hash lookup, in SQL: the newest version holding the file.
    const owners = await db.all<{ hash: string; rowid: number }>(`
      SELECT h.hash, (SELECT v.rowid FROM files f JOIN versions v ON v.id = f.version_id WHERE f.sha256 = h.hash OR f.sha1 = h.hash ORDER BY v.rank LIMIT 1) AS rowid
      FROM (SELECT sha256 AS hash FROM files UNION SELECT sha1 FROM files WHERE sha1 IS NOT NULL) h`)
    expect(owners).toHaveLength(known.length)
    const versions = new Map((await db.all<{ rowid: number; json: string }>(`SELECT rowid, json FROM versions`)).map((v) => [v.rowid, v.json]))
    for (const { hash, rowid } of owners) {
      const first = candidateRowids(hashIndex!, hash).find((r) => versions.get(r)?.includes(hashHolder(hash)))
      expect(first, hash).toBe(rowid)
    }
  })

  it('finds, for every hash of the catalog, the bytes the build rendered for its single lookup', async () => {
    const { cache, release } = server.ctx
    const found = new Map<string, string>()
    for (let at = 0; at < known.length; at += 100) {
      cache.clear()
      const { data } = JSON.parse(await (await server.get(`/version-files?hashes=${known.slice(at, at + 100).join(',')}`)).text()) as { data: Record<string, unknown> }
      for (const [hash, version] of Object.entries(data)) found.set(hash, JSON.stringify({ data: version }))
    }
    expect(found.size).toBe(known.length)
    for (const hash of known) {
      const file = path.join(release.publicDir, 'api', 'v1', 'version-files', `${hash}.json`)
      expect(found.get(hash), hash).toBe(readFileSync(file, 'utf8'))
    }
    cache.clear()
  })

  it('stores each version\'s body ETag, the one its bytes have, and answers alike from a catalog without it', async () => {
    const { cache, release } = server.ctx
    const rows = await release.db.all<{ json: string; body_etag: string }>(`SELECT json, body_etag FROM versions`)
    expect(rows.length).toBeGreaterThan(50)
    for (const r of rows) expect(r.body_etag).toBe(renderRawBody(r.json).etag)
    expect(release.versionsBodyEtag).toBe(true)
    const url = `/version-files?hashes=${known.slice(0, 100).join(',')}`
    cache.clear()
    const stored = await ask(url)
    release.versionsBodyEtag = false
    try {
      cache.clear()
      expect(await ask(url)).toEqual(stored)
      // The single lookups the bulk one kept are answered with their own ETag, the file's.
      for (const hash of known.slice(0, 5)) {
        const res = await server.get(`/version-files/${hash}`)
        expect(res.headers.get('etag'), hash).toBe(renderRawBody(JSON.stringify((JSON.parse(stored.text) as { data: Record<string, unknown> }).data[hash])).etag)
      }
    } finally {
      release.versionsBodyEtag = true
    }
    cache.clear()
    expect(await ask(url)).toEqual(stored)
    for (const hash of known.slice(0, 5)) {
      const res = await server.get(`/version-files/${hash}`)
      expect(res.headers.get('etag'), hash).toBe(renderRawBody(JSON.stringify((JSON.parse(stored.text) as { data: Record<string, unknown> }).data[hash])).etag)
    }
    cache.clear()
  })

  it('answers hashes it rules out as unknown without a query, the same answers as without it', async () => {
    const { cache, release } = server.ctx
    const hashes = known.slice(0, 30)
    const mixed = hashes.flatMap((h, i) => (i < ruledOut.length ? [h, ruledOut[i]!] : [h]))
    cache.clear()
    const knownOnly = await ask(`/version-files?hashes=${hashes.join(',')}`)
    expect(Object.keys((JSON.parse(knownOnly.text) as { data: object }).data)).toEqual(hashes)
    const filters = 'gameVersion=1.21.1&platform=fabric'
    const updates = await ask(`/version-files/update?hashes=${hashes.join(',')}&${filters}`)
    expect(Object.keys((JSON.parse(updates.text) as { data: object }).data).length).toBeGreaterThan(0)
    const queries = [vi.spyOn(release.db, 'all'), vi.spyOn(release.db, 'get')]
    const reads = vi.spyOn(cache, 'read')
    try {
      // Its known hashes' single lookups are kept (the request above), its unknown ones ruled out: no query.
      expect(await ask(`/version-files?hashes=${mixed.join(',')}`)).toEqual(knownOnly)
      expect(await ask(`/version-files/update?hashes=${ruledOut.join(',')}&${filters}`)).toEqual({ status: 200, text: '{"data":{}}', etag: expect.any(String) })
      expect(reads).not.toHaveBeenCalled()
      // A single lookup's path is first tried as a file, as every plain path is (shim/app.ts); then no query.
      const single = await server.get(`/version-files/${ruledOut[0]}`)
      expect([single.status, errorSchema.parse(await json(single)).error.message]).toEqual([404, `File with hash ${ruledOut[0]} was not found`])
      const update = await server.get(`/version-files/${ruledOut[1]}/update?${filters}`)
      expect([update.status, errorSchema.parse(await json(update)).error.message]).toEqual([404, `An update of the file with hash ${ruledOut[1]} was not found`])
      for (const spy of queries) expect(spy).not.toHaveBeenCalled()
      expect(reads.mock.calls.map((c) => c[1])).toEqual([`/api/v1/version-files/${ruledOut[0]}`])
      // Cold, through the index: the same answers.
      cache.clear()
      expect(await ask(`/version-files?hashes=${mixed.join(',')}`)).toEqual(knownOnly)
      // Without the index (a catalog built before it): the same answers, through the files' hash indexes.
      const index = release.hashIndex
      release.hashIndex = undefined
      try {
        cache.clear()
        expect(await ask(`/version-files?hashes=${mixed.join(',')}`)).toEqual(knownOnly)
        expect(await ask(`/version-files/update?hashes=${mixed.join(',')}&${filters}`)).toEqual(updates)
        expect((await server.get(`/version-files/${ruledOut[0]}`)).status).toBe(404)
        expect(queries[0]).toHaveBeenCalled()
      } finally {
        release.hashIndex = index
      }
      // And with it, the update answer of known and unknown hashes is the known hashes' answer.
      expect(await ask(`/version-files/update?hashes=${mixed.join(',')}&${filters}`)).toEqual(updates)
    } finally {
      for (const spy of [...queries, reads]) spy.mockRestore()
      cache.clear()
    }
  })

  it('answers a made-up hash with a real file\'s prefix as unknown, and finds a hash past another version of its prefix', async () => {
    const { cache, release } = server.ctx
    const [a, b] = [known[0]!, known[known.length - 1]!]
    const fakeA = samePrefix(a, 'made up')
    const fakeB = samePrefix(b, 'made up').slice(0, b.length)
    expect([mayBeKnown(release.hashIndex!, fakeA), mayBeKnown(release.hashIndex!, fakeB)]).toEqual([true, true])
    cache.clear()
    const real = await ask(`/version-files?hashes=${a},${b}`)
    expect(Object.keys((JSON.parse(real.text) as { data: object }).data)).toEqual([a, b])
    // Without filters every file's project has an update, its newest version: a and b are of two projects.
    const updates = await ask(`/version-files/update?hashes=${a},${b}`)
    const newest = (JSON.parse(updates.text) as { data: Record<string, { projectId: string }> }).data
    expect(Object.keys(newest)).toEqual([a, b])
    expect(newest[a]!.projectId).not.toBe(newest[b]!.projectId)
    cache.clear()
    expect(await ask(`/version-files?hashes=${a},${fakeA},${b},${fakeB}`)).toEqual(real)
    expect(await ask(`/version-files?hashes=${fakeA},${fakeB}`)).toEqual({ status: 200, text: '{"data":{}}', etag: expect.any(String) })
    expect((await ask(`/version-files/${fakeA}`)).status).toBe(404)
    expect(await ask(`/version-files/update?hashes=${fakeA},${fakeB}`)).toEqual({ status: 200, text: '{"data":{}}', etag: expect.any(String) })
    // An index whose prefix of `a` first names a newer version of another hash (b's): `a` is still
    // found in its own version, the first candidate that holds it.
    const rowidOf = async (hash: string): Promise<number> =>
      (await release.db.get<{ rowid: number }>(`SELECT v.rowid FROM files f JOIN versions v ON v.id = f.version_id WHERE f.sha256 = ?1 OR f.sha1 = ?1 ORDER BY v.rank LIMIT 1`, [hash]))!.rowid
    const [rowA, rowB] = [await rowidOf(a), await rowidOf(b)]
    expect(rowA).not.toBe(rowB)
    const index = release.hashIndex
    release.hashIndex = indexOf([
      [a, rowA, 5],
      [fakeA, rowB, -1],
      [b, rowB, 0],
    ])
    try {
      expect(candidateRowids(release.hashIndex, a)).toEqual([rowB, rowA])
      cache.clear()
      expect(await ask(`/version-files?hashes=${a},${fakeA},${b}`)).toEqual(real)
      // Update matching takes the same holder: `a`'s update is its own project's newest version, not
      // b's, though b's project is the first candidate's; fakeA, held by neither, is left out.
      cache.clear()
      expect(await ask(`/version-files/update?hashes=${a},${fakeA},${b}`)).toEqual(updates)
      expect(await ask(`/version-files/update?hashes=${fakeA}`)).toEqual({ status: 200, text: '{"data":{}}', etag: expect.any(String) })
    } finally {
      release.hashIndex = index
      cache.clear()
    }
  })

  it('is left out for a catalog without one, and a malformed one is refused', async () => {
    await withCatalogCopy(server.ctx.release.dir, async ({ dir, catalog, edit }) => {
      const access = { connections: 1, mmapBytes: 0 }
      const opened = await openRelease(dir, access)
      expect(Buffer.from(opened.hashIndex!.keys.buffer, opened.hashIndex!.keys.byteOffset, opened.hashIndex!.keys.byteLength)).toEqual(
        Buffer.from(server.ctx.release.hashIndex!.keys.buffer, server.ctx.release.hashIndex!.keys.byteOffset, server.ctx.release.hashIndex!.keys.byteLength),
      )
      await opened.db.close()
      await edit(`UPDATE hash_index SET entries = entries + 1`)
      await expect(openRelease(dir, access)).rejects.toThrow(`${catalog}: its hash_index row is malformed`)
      await edit(`DELETE FROM hash_index`)
      await expect(openRelease(dir, access)).rejects.toThrow(/hash_index row is malformed/)
      await edit(`DROP TABLE hash_index`)
      const release = await openRelease(dir, access)
      expect(release.hashIndex).toBeUndefined()
      expect(release.game).toBe(server.ctx.release.game)
      await release.db.close()
    })
  })
})
