/**
 * CATALOG_MMAP_BYTES: the shim's read connections map the catalog into memory (SQLite's mmap_size)
 * and answer the same bytes as with pread; the mapping goes with the connections, and a size SQLite
 * would cut is refused, not taken. Through the real server on the fixture release.
 */
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { MAX_CATALOG_MMAP_BYTES, resolveShimOptions, shimDefaults } from '../shim/config.ts'
import { createShimContext } from '../shim/context.ts'
import { openRelease } from '../shim/release.ts'
import { expectSameAnswersAtOnce, startServer, type TestServer } from './harness.ts'

/** Mappings of `file` in this process (/proc/self/maps lists a mapped file by its real path). */
function mappingsOf(file: string): number {
  return readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((line) => line.endsWith(` ${file}`)).length
}

/** Open descriptors of `file` in this process. */
function descriptorsOf(file: string): number {
  let n = 0
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++
    } catch {
      // closed while listed
    }
  }
  return n
}

describe('CATALOG_MMAP_BYTES', () => {
  it('is off by default and takes 0 up to SQLite limit', () => {
    expect(shimDefaults.catalogMmapBytes).toBe(0)
    expect(resolveShimOptions({}, {}).catalogMmapBytes).toBe(0)
    expect(resolveShimOptions({}, { CATALOG_MMAP_BYTES: '268435456' }).catalogMmapBytes).toBe(268435456)
    expect(resolveShimOptions({}, { CATALOG_MMAP_BYTES: String(MAX_CATALOG_MMAP_BYTES) }).catalogMmapBytes).toBe(2147418112)
    for (const bad of ['-1', '2147418113', '1e9', '256M']) {
      expect(() => resolveShimOptions({}, { CATALOG_MMAP_BYTES: bad })).toThrow(`CATALOG_MMAP_BYTES must be an integer from 0 to 2147418112, got "${bad}"`)
    }
  })

  describe('through the server', () => {
    let catalogFile: string
    let hashes: string[]
    let paths: string[]
    let plain: TestServer
    beforeAll(async () => {
      const dist = inject('distDir')
      catalogFile = path.join(realpathSync(path.join(dist, 'current')), 'catalog.sqlite')
      const catalog = await openDb(catalogFile, { readonly: true })
      hashes = (await catalog.all<{ sha1: string }>(`SELECT sha1 FROM files WHERE sha1 IS NOT NULL ORDER BY id LIMIT 8`)).map((r) => r.sha1)
      await catalog.close()
      paths = [
        `/version-files?hashes=${hashes.join(',')}`,
        `/version-files/update?hashes=${hashes.join(',')}&platform=fabric`,
        '/projects?q=sodium',
        '/projects?limit=5&sort=downloads',
        '/categories',
      ]
      plain = await startServer(dist, { cacheBytes: 0 })
    })
    afterAll(async () => {
      expect(plain.serverErrors()).toBe(0)
      await plain.close()
    })

    it('maps the catalog into the connections that read, answers the same bytes, and unmaps it on close', async () => {
      expect(hashes).toHaveLength(8)
      // The server reading with pread maps nothing.
      for (const p of paths) expect((await plain.get(p)).status, p).toBe(200)
      expect(mappingsOf(catalogFile)).toBe(0)
      const expected = await Promise.all(paths.map(async (p) => (await plain.get(p)).text()))
      expect(Object.keys(JSON.parse(expected[0]!).data)).toHaveLength(8)

      const mapped = await startServer(inject('distDir'), { cacheBytes: 0, readConnections: 2, catalogMmapBytes: 64 * 2 ** 20 })
      try {
        await expectSameAnswersAtOnce(mapped, paths, expected)
        // Mapped by every connection that has read (the second takes queries only when the first has two).
        expect(mappingsOf(catalogFile)).toBeGreaterThanOrEqual(1)
        expect(mappingsOf(catalogFile)).toBeLessThanOrEqual(2)
        expect(mapped.serverErrors()).toBe(0)
      } finally {
        await mapped.close()
      }
      expect(mappingsOf(catalogFile)).toBe(0)
    })

    it('maps it once per connection of the pool', async () => {
      const release = await openRelease(inject('distDir'), { connections: 2, mmapBytes: 64 * 2 ** 20 })
      try {
        // Sent at once: the first connection takes two, the second the next two (createDbPool).
        const counts = await Promise.all([1, 2, 3, 4].map(() => release.db.get<{ n: number }>(`SELECT count(*) AS n FROM versions`)))
        expect(new Set(counts.map((c) => c!.n)).size).toBe(1)
        expect(counts[0]!.n).toBeGreaterThan(0)
        expect(mappingsOf(catalogFile)).toBe(2)
      } finally {
        await release.db.close()
      }
      expect(mappingsOf(catalogFile)).toBe(0)
    })

    it('refuses a size SQLite would cut, naming it, and leaves no connection open', async () => {
      const before = descriptorsOf(catalogFile)
      const options = resolveShimOptions({ distDir: inject('distDir'), port: 0, releasePollMs: 0, readConnections: 2, catalogMmapBytes: MAX_CATALOG_MMAP_BYTES + 1 }, {})
      await expect(createShimContext(options)).rejects.toThrow(`SQLite took mmap_size 2147418112 for ${catalogFile}, not the 2147418113 asked (CATALOG_MMAP_BYTES)`)
      expect(descriptorsOf(catalogFile)).toBe(before)
      expect(mappingsOf(catalogFile)).toBe(0)
    })
  })
})
