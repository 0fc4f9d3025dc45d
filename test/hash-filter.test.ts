/**
 * The catalog's filter of known file hashes (build/hash-filter.ts): what it holds and rules out,
 * the build's row, and the shim answering hashes it rules out without a query, with the same answers
 * as without it. Through the sample catalog's real build and a real server.
 */
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { checkHashFilter, createHashFilter, HASH_FILTER_BITS_PER_HASH, mayContainHash } from '../build/hash-filter.ts'
import { errorSchema } from '../build/schema/api.ts'
import { openRelease } from '../shim/release.ts'
import { json, startServer, type TestServer } from './harness.ts'

/** A hex string of `length` characters, fixed by `seed`. */
function hexOf(seed: string, length: 40 | 64): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, length)
}

describe('the filter', () => {
  it('holds every hash added and rules out nearly every other', () => {
    const known = Array.from({ length: 5000 }, (_, i) => hexOf(`known ${i}`, i % 2 === 0 ? 64 : 40))
    const filter = createHashFilter(known.length)
    for (const h of known) filter.add(h)
    expect(filter.data.bits.length).toBe((known.length * HASH_FILTER_BITS_PER_HASH) / 8)
    expect(known.filter((h) => !mayContainHash(filter.data, h))).toEqual([])
    // About 0.05% false positives at 16 bits a hash and 11 probes: 20 of 40,000 expected.
    const others = Array.from({ length: 40_000 }, (_, i) => hexOf(`other ${i}`, i % 2 === 0 ? 64 : 40))
    const falsePositives = others.filter((h) => mayContainHash(filter.data, h)).length / others.length
    expect(falsePositives).toBeGreaterThan(0.0001)
    expect(falsePositives).toBeLessThan(0.0015)
  })

  it('sets and reads the bits the README documents: (a + k·(b | 1)) mod the bit count', () => {
    // The documented layout is what catalogs hold: the build and every shim must probe the same bits.
    const reference = (hash: string, size: number, probes: number): number[] => {
      const a = BigInt(parseInt(hash.slice(0, 8), 16))
      const b = BigInt(parseInt(hash.slice(8, 16), 16) | 1) & 0xffffffffn
      return Array.from({ length: probes }, (_, k) => Number((a + BigInt(k) * b) % BigInt(size)))
    }
    const setBits = (bits: Uint8Array): number[] => {
      const out: number[] = []
      for (let byte = 0; byte < bits.length; byte++) {
        if (bits[byte] === 0) continue
        for (let b = 0; b < 8; b++) if (bits[byte]! & (1 << b)) out.push(byte * 8 + b)
      }
      return out
    }
    for (const [count, hashes] of [[1, 200], [3, 200], [1000, 200], [999_983, 20]] as const) {
      for (let i = 0; i < hashes; i++) {
        const hash = hexOf(`probe ${count} ${i}`, i % 2 === 0 ? 64 : 40)
        const filter = createHashFilter(count)
        filter.add(hash)
        const { bits, probes } = filter.data
        const expected = reference(hash, bits.length * 8, probes)
        expect(setBits(bits), hash).toEqual([...new Set(expected)].sort((x, y) => x - y))
        // The shim reads exactly those bits: each one cleared alone rules the hash out.
        expect(mayContainHash(filter.data, hash)).toBe(true)
        const bit = expected[i % probes]!
        bits[bit >>> 3]! &= ~(1 << (bit & 7))
        expect(mayContainHash(filter.data, hash), hash).toBe(false)
      }
    }
  })

  it('of no hashes rules out every hash', () => {
    const { data } = createHashFilter(0)
    expect(data.bits.length).toBe(8)
    expect([hexOf('a', 40), hexOf('b', 64)].map((h) => mayContainHash(data, h))).toEqual([false, false])
  })

  it('is refused when its row is malformed', () => {
    const bits = Buffer.alloc(16)
    expect(checkHashFilter({ bits, probes: 7 }, 'c.sqlite')).toEqual({ bits, probes: 7 })
    for (const row of [{ bits: 'text', probes: 7 }, { bits: Buffer.alloc(4), probes: 7 }, { bits, probes: 0 }, { bits, probes: 2.5 }, { bits: undefined, probes: undefined }]) {
      expect(() => checkHashFilter(row, 'c.sqlite')).toThrow(/c\.sqlite: its hash_filter row is malformed/)
    }
  })
})

describe('the catalog\'s filter in the shim', () => {
  let server: TestServer
  /** Every hash of the catalog's files. */
  let known: string[] = []
  /** Hashes of no file that the catalog's filter rules out. */
  let ruledOut: string[] = []

  beforeAll(async () => {
    server = await startServer(inject('distDir'))
    const rows = await server.ctx.release.db.all<{ sha256: string; sha1: string | null }>(`SELECT sha256, sha1 FROM files ORDER BY id`)
    known = rows.flatMap((r) => (r.sha1 === null ? [r.sha256] : [r.sha256, r.sha1]))
    const filter = server.ctx.release.knownHashes!
    ruledOut = Array.from({ length: 200 }, (_, i) => hexOf(`not a file ${i}`, i % 2 === 0 ? 64 : 40)).filter((h) => !mayContainHash(filter, h)).slice(0, 20)
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })

  it('is built over every file\'s SHA-1 and SHA-256 and read with the release', async () => {
    const row = await server.ctx.release.db.get<{ bits: Buffer; probes: number; hashes: number }>(`SELECT bits, probes, hashes FROM hash_filter`)
    expect(row!.hashes).toBe(known.length)
    expect(known.length).toBeGreaterThan(100)
    expect(row!.bits.length).toBe(Math.ceil((known.length * HASH_FILTER_BITS_PER_HASH) / 8))
    const filter = server.ctx.release.knownHashes!
    expect(Buffer.from(filter.bits)).toEqual(row!.bits)
    expect(known.filter((h) => !mayContainHash(filter, h))).toEqual([])
    expect(ruledOut).toHaveLength(20)
  })

  it('answers hashes it rules out as unknown without a query, the same answers as without it', async () => {
    const { cache, release } = server.ctx
    const hashes = known.slice(0, 30)
    const mixed = hashes.flatMap((h, i) => (i < ruledOut.length ? [h, ruledOut[i]!] : [h]))
    const ask = async (url: string): Promise<{ status: number; text: string }> => {
      const res = await server.get(url)
      return { status: res.status, text: await res.text() }
    }
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
      expect(await ask(`/version-files/update?hashes=${ruledOut.join(',')}&${filters}`)).toEqual({ status: 200, text: '{"data":{}}' })
      expect(reads).not.toHaveBeenCalled()
      // A single lookup's path is first tried as a file, as every plain path is (shim/app.ts); then no query.
      const single = await server.get(`/version-files/${ruledOut[0]}`)
      expect([single.status, errorSchema.parse(await json(single)).error.message]).toEqual([404, `File with hash ${ruledOut[0]} was not found`])
      const update = await server.get(`/version-files/${ruledOut[1]}/update?${filters}`)
      expect([update.status, errorSchema.parse(await json(update)).error.message]).toEqual([404, `An update of the file with hash ${ruledOut[1]} was not found`])
      for (const spy of queries) expect(spy).not.toHaveBeenCalled()
      expect(reads.mock.calls.map((c) => c[1])).toEqual([`/api/v1/version-files/${ruledOut[0]}`])
      // Without the filter (a catalog built before it): the same answers, through SQLite.
      const filter = release.knownHashes
      release.knownHashes = undefined
      try {
        cache.clear()
        expect(await ask(`/version-files?hashes=${mixed.join(',')}`)).toEqual(knownOnly)
        expect(await ask(`/version-files/update?hashes=${mixed.join(',')}&${filters}`)).toEqual(updates)
        expect((await server.get(`/version-files/${ruledOut[0]}`)).status).toBe(404)
        expect(queries[0]).toHaveBeenCalled()
      } finally {
        release.knownHashes = filter
      }
      // And with it, the update answer of known and unknown hashes is the known hashes' answer.
      expect(await ask(`/version-files/update?hashes=${mixed.join(',')}&${filters}`)).toEqual(updates)
    } finally {
      for (const spy of [...queries, reads]) spy.mockRestore()
      cache.clear()
    }
  })

  it('is left out for a catalog without one, and a malformed one is refused', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hash-filter-'))
    try {
      const releaseDir = path.join(dir, 'releases', '00000001')
      mkdirSync(releaseDir, { recursive: true })
      const catalog = path.join(releaseDir, 'catalog.sqlite')
      copyFileSync(path.join(server.ctx.release.dir, 'catalog.sqlite'), catalog)
      symlinkSync('releases/00000001', path.join(dir, 'current'))
      const access = { connections: 1, mmapBytes: 0 }
      const edit = async (sql: string): Promise<void> => {
        const db = await openDb(catalog)
        await db.exec(sql)
        await db.close()
      }
      await edit(`UPDATE hash_filter SET probes = 0`)
      await expect(openRelease(dir, access)).rejects.toThrow(`${catalog}: its hash_filter row is malformed`)
      await edit(`DELETE FROM hash_filter`)
      await expect(openRelease(dir, access)).rejects.toThrow(/hash_filter row is malformed/)
      await edit(`DROP TABLE hash_filter`)
      const release = await openRelease(dir, access)
      expect(release.knownHashes).toBeUndefined()
      expect(release.game).toBe(server.ctx.release.game)
      await release.db.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
