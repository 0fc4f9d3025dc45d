/**
 * Issue "Version files": hash lookups (single and bulk), update matching (single and bulk agree on
 * every input) and the download redirect, through the real shim. The oracle is built from the full
 * versions lists the server returns (files carry their hashes) and from the sample data's blobs.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import { createBody } from '../build/render/body.ts'
import { dataEnvelope, errorSchema, pageEnvelope, versionSchema, versionsByHashSchema, type Version } from '../build/schema/api.ts'
import { MAX_BULK_HASHES, versionFilesOtherParamsSchema, versionFilesQuerySchema, versionFilesUpdateOtherParamsSchema, versionFilesUpdateQuerySchema } from '../build/schema/query.ts'
import { readPlainHashList, readPlainHashQuery, readQuery } from '../shim/query.ts'
import { answerCacheKey } from '../shim/static-cache.ts'
import { expectSameAnswersAtOnce, expectValidationError, json, listSampleProjects, matchesFilters, readSampleVersions, startServer, type TestServer, type VersionFilters } from './harness.ts'

const projects = listSampleProjects()

/** Files of hidden versions (non-published versions, and every version of a hidden project), with their hashes. */
function readHiddenFiles(): { id: string; sha256: string; sha1: string | null }[] {
  const out: { id: string; sha256: string; sha1: string | null }[] = []
  for (const { folder, project } of projects) {
    const dir = path.join('data/projects', folder, 'versions')
    for (const version of readSampleVersions(folder)) {
      if (project.status === 'published' && version.status === 'published') continue
      for (const f of version.files) {
        if (f.path) {
          const bytes = readFileSync(path.join(dir, f.path))
          out.push({ id: f.id, sha256: createHash('sha256').update(bytes).digest('hex'), sha1: createHash('sha1').update(bytes).digest('hex') })
        } else out.push({ id: f.id, sha256: f.sha256!, sha1: f.sha1 ?? null })
      }
    }
  }
  return out
}

const byHashSchema = dataEnvelope(versionsByHashSchema)
const singleSchema = dataEnvelope(versionSchema)

let server: TestServer
/** Every visible project's versions, newest first, as the server lists them. */
const lists = new Map<string, Version[]>()
/** Every hash of a visible file → the versions containing it, newest first. */
const byHash = new Map<string, Version[]>()
let hiddenHashes: string[] = []

async function inBatches<T, R>(items: readonly T[], size: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = []
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(run))))
  return out
}

/** The oracle of update matching: the newest version of the file's project matching every filter. */
function expectedUpdate(hash: string, f: VersionFilters): Version | undefined {
  const owner = byHash.get(hash)![0]!
  return lists.get(owner.projectId)!.find((v) => matchesFilters(v, f))
}

beforeAll(async () => {
  server = await startServer(inject('distDir'))
  for (const { project } of projects.filter((p) => p.project.status === 'published')) {
    const res = await server.get(`/projects/${project.id}/versions?limit=100`)
    const body = pageEnvelope(versionSchema).parse(await json(res))
    expect(body.meta.total).toBeLessThanOrEqual(100)
    lists.set(project.id, body.data)
    for (const v of body.data) {
      for (const f of v.files) {
        for (const h of [f.sha256, f.sha1]) {
          if (!h) continue
          const list = byHash.get(h) ?? []
          if (!list.includes(v)) list.push(v)
          byHash.set(h, list)
        }
      }
    }
  }
  hiddenHashes = readHiddenFiles()
    .flatMap((f) => [f.sha256, f.sha1 ?? ''])
    .filter((h) => h !== '' && !byHash.has(h))
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

describe('GET /version-files/{hash}', () => {
  it('resolves every SHA-1 and SHA-256, in lower and upper case, to the newest version containing the file', async () => {
    const hashes = [...byHash.keys()]
    expect(hashes.filter((h) => h.length === 40).length).toBeGreaterThan(200)
    await inBatches(hashes, 40, async (hash) => {
      const lower = await server.get(`/version-files/${hash}`)
      expect(lower.status, hash).toBe(200)
      const text = await lower.text()
      expect(singleSchema.parse(JSON.parse(text)).data.id, hash).toBe(byHash.get(hash)![0]!.id)
      for (const url of [`/version-files/${hash.toUpperCase()}`, `/version-files/${hash}?algorithm=${hash.length === 40 ? 'sha1' : 'sha256'}`]) {
        const res = await server.get(url)
        expect(res.status, url).toBe(200)
        expect(await res.text(), url).toBe(text)
      }
    })
  })

  it('resolves a blob shared by two versions of a project to the newer one', async () => {
    const shared = [...byHash.entries()].filter(([, versions]) => versions.length > 1)
    expect(shared.length).toBeGreaterThan(0)
    for (const [hash, [newer, older]] of shared) {
      expect(newer!.projectId).toBe(older!.projectId)
      expect(newer!.publishedAt! >= older!.publishedAt!).toBe(true)
      const body = singleSchema.parse(await json(await server.get(`/version-files/${hash.toUpperCase()}`)))
      expect(body.data.id).toBe(newer!.id)
    }
  })

  it('404s for the file of a draft or withheld version and an unknown hash', async () => {
    expect(hiddenHashes.length).toBeGreaterThan(4)
    for (const hash of [...hiddenHashes, '0'.repeat(40), 'f'.repeat(64)]) {
      for (const url of [`/version-files/${hash}`, `/version-files/${hash.toUpperCase()}`, `/version-files/${hash}/update`]) {
        const res = await server.get(url)
        expect(res.status, url).toBe(404)
        expect(errorSchema.parse(await json(res)).error.code).toBe('not_found')
      }
    }
  })

  it('422s name the bad parameter: malformed hash, algorithm disagreeing with the length, unknown algorithm', async () => {
    const sha256 = [...byHash.keys()].find((h) => h.length === 64)!
    const sha1 = [...byHash.keys()].find((h) => h.length === 40)!
    await expectValidationError(server, '/version-files/abc', 'hash')
    await expectValidationError(server, `/version-files/${sha1.slice(0, 39)}g`, 'hash')
    await expectValidationError(server, `/version-files/${sha256}0`, 'hash')
    await expectValidationError(server, `/version-files/${sha256}?algorithm=sha1`, 'hash')
    await expectValidationError(server, `/version-files/${sha1}?algorithm=sha256`, 'hash')
    await expectValidationError(server, `/version-files/${sha1}?algorithm=md5`, 'algorithm')
    await expectValidationError(server, '/version-files/abc/update', 'hash')
    await expectValidationError(server, `/version-files/${sha256}/update?algorithm=sha1`, 'hash')
    await expectValidationError(server, `/version-files/${sha1}/update?channel=nightly`, 'channel')
    await expectValidationError(server, `/version-files/${sha1}/update?algorithm=md5`, 'algorithm')
  })
})

describe('GET /version-files?hashes=', () => {
  it('keys each version by the requested hash (lowercased), as the single lookup, unknown and hidden hashes left out', async () => {
    const hashes = [...byHash.keys()]
    for (let i = 0; i < hashes.length; i += 97) {
      const chunk = hashes.slice(i, i + 97)
      const asked = [...chunk.map((h, j) => (j % 2 === 0 ? h.toUpperCase() : h)), '1'.repeat(40), hiddenHashes[0]!]
      const res = await server.get(`/version-files?hashes=${asked.join(',')}`)
      expect(res.status).toBe(200)
      const body = byHashSchema.parse(await json(res))
      expect(Object.keys(body.data)).toEqual(chunk)
      for (const h of chunk) expect(body.data[h]!.id, h).toBe(byHash.get(h)![0]!.id)
    }
    const one = hashes[0]!
    const single = await (await server.get(`/version-files/${one}`)).text()
    const bulk = await (await server.get(`/version-files?hashes=${encodeURIComponent(JSON.stringify([one, one.toUpperCase()]))}`)).text()
    expect(bulk).toBe(`{"data":{"${one}":${single.slice('{"data":'.length, -1)}}}`)
    expect(byHashSchema.parse(await json(await server.get(`/version-files?hashes=${'2'.repeat(64)}`))).data).toEqual({})
  })

  it('answers the same bytes whether the single lookups are in the static cache or found by SQL, and keeps exact file bytes', async () => {
    const hashes = [...byHash.keys()].slice(0, 100)
    const url = `/version-files?hashes=${hashes.join(',')}`
    const { cache, release } = server.ctx
    const single = (h: string): string => `/api/v1/version-files/${h}`
    cache.clear()
    const coldRes = await server.get(url)
    const cold = await coldRes.text()
    expect(Object.keys(byHashSchema.parse(JSON.parse(cold)).data)).toEqual(hashes)
    // What SQL found was kept under each single lookup's path: the exact bytes of its pre-rendered file.
    for (const h of hashes) expect(cache.get!(single(h))?.bytes.toString(), h).toBe(readFileSync(path.join(release.dir, `public${single(h)}.json`), 'utf8'))
    // Each kept in memory of its own, not as a view that would keep the query's whole answer alive.
    for (const h of hashes) expect(cache.get!(single(h))!.bytes.buffer.byteLength, h).toBe(cache.get!(single(h))!.bytes.length)
    const warm = await server.get(url)
    expect(await warm.text()).toBe(cold)
    // Sent in parts, described as one body: its length, one ETag cold and warm, HEAD and 304 alike.
    expect(warm.headers.get('content-length')).toBe(String(Buffer.byteLength(cold)))
    expect(warm.headers.get('etag')).toBe(coldRes.headers.get('etag'))
    const head = await server.get(url, { method: 'HEAD' })
    expect([head.status, head.headers.get('content-length'), await head.text()]).toEqual([200, String(Buffer.byteLength(cold)), ''])
    const notModified = await server.get(url, { headers: { 'If-None-Match': warm.headers.get('etag')! } })
    expect([notModified.status, await notModified.text()]).toEqual([304, ''])
    // Half the single lookups read from their files, half found by SQL: spliced together, the same bytes.
    cache.clear()
    for (const h of hashes.filter((_, i) => i % 2 === 0)) await cache.read(release.dir, single(h))
    expect(cache.get!(single(hashes[1]!))).toBeUndefined()
    expect(await (await server.get(url)).text()).toBe(cold)
  })

  it('answers many lookups at once each with its own bytes: an answer\'s pooled buffer is used again only once its response went out', async () => {
    const all = [...byHash.keys()]
    // Twelve different lists (each a rotation of the hashes, some cut short), cold and warm alike.
    const urls = Array.from({ length: 12 }, (_, i) => `/version-files?hashes=${[...all.slice(i * 7), ...all.slice(0, i * 7)].slice(0, 100 - i * 5).join(',')}`)
    server.ctx.cache.clear()
    const expected: string[] = []
    for (const url of urls) {
      const text = await (await server.get(url)).text()
      expect(Object.keys(byHashSchema.parse(JSON.parse(text)).data).length).toBeGreaterThan(0)
      expected.push(text)
    }
    expect(new Set(expected).size).toBe(urls.length)
    await expectSameAnswersAtOnce(server, urls, expected, 4)
    server.ctx.cache.clear()
    await expectSameAnswersAtOnce(server, urls, expected, 4)
  })

  it('derives a strong ETag in the one format from the parts, which changes whenever the bytes do', async () => {
    const hashes = [...byHash.keys()].slice(0, 20)
    const { cache, release } = server.ctx
    const single = (h: string): string => `/api/v1/version-files/${h}`
    const get = async (list: readonly string[]): Promise<{ etag: string; text: string }> => {
      const res = await server.get(`/version-files?hashes=${list.join(',')}`)
      return { etag: res.headers.get('etag')!, text: await res.text() }
    }
    cache.clear()
    const base = await get(hashes)
    // The rule's format (build/render/etag.ts): "<hex of the first bits of a SHA-256>-<hex size>".
    expect(base.etag).toMatch(/^"[0-9a-f]{1,8}-[0-9a-f]+"$/)
    expect(base.etag.slice(1, -1).split('-')[1]).toBe(Buffer.byteLength(base.text).toString(16))
    // Same bytes, same ETag: asked in another spelling, and with the single lookups cached or not.
    expect(await get(hashes.map((h) => h.toUpperCase()))).toEqual(base)
    cache.clear()
    for (const h of hashes.slice(5)) await cache.read(release.dir, single(h))
    expect(await get(hashes)).toEqual(base)
    // Other bytes, another ETag: another order, one hash fewer, one version changed with its size kept.
    const reordered = await get([...hashes.slice(1), hashes[0]!])
    expect(reordered.text).not.toBe(base.text)
    expect(reordered.etag).not.toBe(base.etag)
    expect((await get(hashes.slice(1))).etag).not.toBe(base.etag)
    cache.clear()
    const file = readFileSync(path.join(release.dir, `public${single(hashes[3]!)}.json`), 'utf8')
    const changed = file.replace(/"downloads":(\d)/, (_, d: string) => `"downloads":${(Number(d) + 1) % 10}`)
    expect(changed).not.toBe(file)
    expect(changed.length).toBe(file.length)
    cache.put!(single(hashes[3]!), createBody(Buffer.from(changed)), cache.generation)
    const edited = await get(hashes)
    expect(edited.text.length).toBe(base.text.length)
    expect(edited.text).not.toBe(base.text)
    expect(edited.etag).not.toBe(base.etag)
    cache.clear()
  })

  it('keeps the plan of a request asked a second time, answers repeats from it without reading the query, looking up keys or SQLite, and makes it again when a body leaves the cache', async () => {
    const { cache, release } = server.ctx
    const hashes = [...byHash.keys()].slice(0, 40)
    const search = `hashes=${hashes.join(',')}`
    const planKey = answerCacheKey('hashes', search)
    const ask = async (): Promise<{ text: string; etag: string | null }> => {
      const res = await server.get(`/version-files?${search}`)
      return { text: await res.text(), etag: res.headers.get('etag') }
    }
    cache.clear()
    const first = await ask()
    expect(Object.keys(byHashSchema.parse(JSON.parse(first.text)).data)).toEqual(hashes)
    // Asked once, the request is only noted: a one-off list keeps no plan.
    expect(cache.get!(planKey)).toBeUndefined()
    expect(await ask()).toEqual(first)
    expect(cache.get!(planKey)).toBeDefined()
    const queries = vi.spyOn(release.db, 'all')
    const gets = vi.spyOn(cache, 'get')
    try {
      // A repeat: the same bytes and ETag, one lookup (the plan's), no SQL.
      expect(await ask()).toEqual(first)
      expect(gets.mock.calls).toEqual([[planKey]])
      expect(queries).not.toHaveBeenCalled()
      // One of its bodies leaves the cache: found again by SQL, the same answer, and a new plan kept.
      cache.drop!(`/api/v1/version-files/${hashes[5]}`)
      expect(await ask()).toEqual(first)
      expect(queries).toHaveBeenCalledTimes(1)
      gets.mockClear()
      expect(await ask()).toEqual(first)
      expect(gets.mock.calls).toEqual([[planKey]])
      expect(queries).toHaveBeenCalledTimes(1)
    } finally {
      gets.mockRestore()
      queries.mockRestore()
    }
    // A body kept with other bytes (another ETag) is never spliced under the plan's ETag.
    const single = `/api/v1/version-files/${hashes[3]}`
    const file = readFileSync(path.join(release.dir, `public${single}.json`), 'utf8')
    const changed = file.replace(/"downloads":(\d)/, (_, d: string) => `"downloads":${(Number(d) + 1) % 10}`)
    cache.drop!(single)
    cache.put!(single, createBody(Buffer.from(changed)), cache.generation)
    const edited = await ask()
    const firstData = byHashSchema.parse(JSON.parse(first.text)).data
    expect(JSON.parse(edited.text)).toEqual({ data: { ...firstData, [hashes[3]!]: JSON.parse(changed).data } })
    expect(edited.text).not.toBe(first.text)
    expect(edited.etag).not.toBe(first.etag)
    // A new release clears plans with the bodies.
    cache.clear()
    expect(cache.get!(planKey)).toBeUndefined()
    expect(await ask()).toEqual(first)
    cache.clear()
  })

  it('keeps no plan while a body it would splice is not kept (the cache did not admit it), and answers every repeat from the bodies', async () => {
    const { cache } = server.ctx
    const hashes = [...byHash.keys()].slice(40, 60)
    const search = `hashes=${hashes.join(',')}`
    const planKey = answerCacheKey('hashes', search)
    const ask = async (): Promise<{ status: number; text: string; etag: string | null }> => {
      const res = await server.get(`/version-files?${search}`)
      return { status: res.status, text: await res.text(), etag: res.headers.get('etag') }
    }
    cache.clear()
    const put = cache.put!.bind(cache)
    // The cache turns down one single lookup, as a full cache turns down a key asked less often than what it would evict.
    const puts = vi.spyOn(cache, 'put').mockImplementation(((key: string, body: never, generation: number) => (key === hashes[7] ? body : put(key, body, generation))) as typeof put)
    try {
      const first = await ask()
      expect(first.status).toBe(200)
      expect(Object.keys(byHashSchema.parse(JSON.parse(first.text)).data)).toEqual(hashes)
      expect(cache.refOf!(hashes[7]!)).toBeUndefined()
      expect(cache.refOf!(hashes[6]!)).toBeDefined()
      // Asked again (a plan would be admitted now) and again: the same answer, and no plan with a hole in it.
      expect(await ask()).toEqual(first)
      expect(cache.get!(planKey)).toBeUndefined()
      expect(await ask()).toEqual(first)
    } finally {
      puts.mockRestore()
      cache.clear()
    }
  })

  it('reads the catalog with SQLite\'s default page cache (a larger one counts in RSS against the 300 MB bound)', async () => {
    expect(await server.ctx.release.db.get<{ cache_size: number }>('PRAGMA cache_size')).toEqual({ cache_size: -2000 })
  })

  it('keeps nothing found for a release that stopped being live during the lookup', async () => {
    const { cache } = server.ctx
    const hash = [...byHash.keys()][0]!
    cache.clear()
    const stale = cache.generation
    cache.clear()
    cache.put!(`/api/v1/version-files/${hash}`, { bytes: Buffer.from('{"data":{}}'), etag: '"x"' }, stale)
    expect(cache.get!(`/api/v1/version-files/${hash}`)).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  it('reads a plain list of lowercase hashes in one pass to the very list readQuery gives, and leaves any other query to readQuery', () => {
    const sha1 = 'a'.repeat(40)
    const [h1, h2] = [...byHash.keys()] as [string, string]
    const distinct = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => (from + i).toString(16).padStart(64, '0'))
    const plain = [
      `hashes=${h1}`,
      `hashes=${h1},${h2},${sha1},${h1}`,
      `hashes=${h1},`,
      `hashes=${distinct(100).join(',')}`,
      `hashes=${[...distinct(100), ...distinct(50)].join(',')}`,
    ]
    for (const search of plain) {
      const fast = readPlainHashList(search, MAX_BULK_HASHES)
      expect(fast).toBeDefined()
      expect(fast).toEqual(readQuery(search, versionFilesQuerySchema).hashes)
    }
    const others = [
      '',
      'hashes=',
      'hashes=,',
      `hashes=${h1},,${h2}`,
      `hashes=${h1.toUpperCase()}`,
      `hashes=${h1}%2C${h2}`,
      `hashes=["${h1}"]`,
      `hashes=${h1}&algorithm=sha256`,
      `algorithm=sha1&hashes=${sha1}`,
      `hashes=${h1.slice(1)}`,
      `hashes=${sha1}0`,
      `hashes=${'g'.repeat(40)}`,
      `hashes=${distinct(101).join(',')}`,
      `hashes=${h1}+`,
    ]
    for (const search of others) expect(readPlainHashList(search, MAX_BULK_HASHES)).toBeUndefined()
  })

  it('reads a plain list followed by other parameters to what readQuery gives, and leaves every other form and every problem to readQuery', () => {
    const sha1 = 'a'.repeat(40)
    const [h1, h2] = [...byHash.keys()].filter((h) => h.length === 64) as [string, string]
    const distinct = (n: number): string[] => Array.from({ length: n }, (_, i) => i.toString(16).padStart(64, '0'))
    const readBoth = (search: string, others: typeof versionFilesUpdateOtherParamsSchema, whole: typeof versionFilesUpdateQuerySchema) => {
      const fast = readPlainHashQuery(search, MAX_BULK_HASHES, others)
      const slow = readQuery(search, whole)
      return { fast, slow: { hashes: [...new Set(slow.hashes)], rest: { ...slow, hashes: undefined } } }
    }
    const same = [
      `hashes=${h1},${h2},${h1}`,
      `hashes=${h1}&gameVersion=1.21.4&loader=fabric`,
      `hashes=${h1},${h2}&gameVersion=1.21.4,1.21.1&platform=fabric&channel=stable,beta`,
      `hashes=${h1}&algorithm=sha256&gameVersion=%5B%221.21.4%22%5D`,
      `hashes=${sha1}&algorithm=sha1&platform=neoforge&platform=forge`,
      `hashes=${distinct(100).join(',')}&unknown=1&gameVersion=1.20.1`,
    ]
    for (const search of same) {
      const { fast, slow } = readBoth(search, versionFilesUpdateOtherParamsSchema, versionFilesUpdateQuerySchema)
      expect(fast, search).toBeDefined()
      expect({ hashes: fast!.hashes, rest: { ...fast!.rest, hashes: undefined } }, search).toEqual(slow)
    }
    expect(readPlainHashQuery(`hashes=${h1},${sha1}`, MAX_BULK_HASHES, versionFilesOtherParamsSchema)).toEqual({ hashes: [h1, sha1], rest: {} })
    const others = [
      `gameVersion=1.21.4&hashes=${h1}`,
      `hashes=${h1}&hashes=${h2}`,
      `hashes=${h1}&h%61shes=${h2}`,
      `hashes=${h1}&algorithm=sha1`,
      `hashes=${sha1}&algorithm=sha256`,
      `hashes=${h1}&algorithm=md5`,
      `hashes=${h1}&channel=nightly`,
      `hashes=${h1}&gameVersion=1.21.4&gameVersion=[1`,
      `hashes=${h1.toUpperCase()}&platform=fabric`,
      `hashes=&platform=fabric`,
    ]
    for (const search of others) expect(readPlainHashQuery(search, MAX_BULK_HASHES, versionFilesUpdateOtherParamsSchema), search).toBeUndefined()
  })

  it('422s name the bad parameter', async () => {
    const sha256 = [...byHash.keys()].find((h) => h.length === 64)!
    for (const base of ['/version-files', '/version-files/update']) {
      await expectValidationError(server, base, 'hashes')
      await expectValidationError(server, `${base}?hashes=`, 'hashes')
      await expectValidationError(server, `${base}?hashes=${Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(40, '0')).join(',')}`, 'hashes')
      await expectValidationError(server, `${base}?hashes=${sha256},xyz`, 'hashes')
      await expectValidationError(server, `${base}?hashes=${sha256}&algorithm=sha1`, 'hashes')
      await expectValidationError(server, `${base}?hashes=${sha256}&algorithm=md5`, 'algorithm')
    }
    await expectValidationError(server, `/version-files/update?hashes=${sha256}&channel=nightly`, 'channel')
  })
})

describe('update matching', () => {
  const sodium = (): Version[] => [...lists.values()].find((l) => l[0]?.name.startsWith('Sodium '))!

  it('finds the newest stable sodium for an older stable with gameVersion and loader filters', async () => {
    const installed = sodium().find((v) => v.versionNumber === 'mc1.20.1-0.5.0')!
    const hash = installed.files[0]!.sha256
    const res = await server.get(`/version-files/${hash}/update?gameVersion=1.20.1&loader=fabric&channel=stable`)
    expect(res.status).toBe(200)
    const update = singleSchema.parse(await json(res)).data
    expect(update.id).toBe(expectedUpdate(hash, { gameVersion: ['1.20.1'], platform: ['fabric'], channel: ['stable'] })!.id)
    expect(update.id).not.toBe(installed.id)
    expect(update.projectId).toBe(installed.projectId)
    expect(update.gameVersions).toContain('1.20.1')
    expect(update.publishedAt! > installed.publishedAt!).toBe(true)
  })

  it('channel=stable never returns a beta; the newest version returns itself; no match is 404 or left out', async () => {
    const newest = sodium()[0]!
    expect(newest.channel).not.toBe('stable')
    const self = singleSchema.parse(await json(await server.get(`/version-files/${newest.files[0]!.sha1}/update`))).data
    expect(self.id).toBe(newest.id)
    const stable = singleSchema.parse(await json(await server.get(`/version-files/${newest.files[0]!.sha256}/update?channel=stable`))).data
    expect(stable.channel).toBe('stable')
    expect(stable.id).toBe(sodium().find((v) => v.channel === 'stable')!.id)
    const none = await server.get(`/version-files/${newest.files[0]!.sha256}/update?gameVersion=0.0.1`)
    expect(none.status).toBe(404)
    expect(errorSchema.parse(await json(none)).error.code).toBe('not_found')
    const bulk = byHashSchema.parse(await json(await server.get(`/version-files/update?hashes=${newest.files[0]!.sha256}&gameVersion=0.0.1`)))
    expect(bulk.data).toEqual({})
  })

  it('keeps an answer asked a second time in the static cache, keyed by its exact text, and answers repeats from it; refusals and 404s are not kept', async () => {
    const { cache } = server.ctx
    const hashes = [...byHash.keys()].slice(0, 30)
    const search = `hashes=${hashes.join(',')}&loader=fabric&channel=stable`
    cache.clear()
    const first = await server.get(`/version-files/update?${search}`)
    const text = await first.text()
    expect(Object.keys(byHashSchema.parse(JSON.parse(text)).data).length).toBeGreaterThan(0)
    // Asked once: only noted. Asked again: the same answer, kept under its key with the bytes and ETag sent.
    expect(cache.get!(answerCacheKey('updates', search))).toBeUndefined()
    const again = await server.get(`/version-files/update?${search}`)
    expect([await again.text(), again.headers.get('etag'), again.headers.get('cache-control')]).toEqual([text, first.headers.get('etag'), first.headers.get('cache-control')])
    expect(cache.get!(answerCacheKey('updates', search))?.bytes.toString()).toBe(text)
    expect(cache.get!(answerCacheKey('updates', search))?.etag).toBe(first.headers.get('etag'))
    const notModified = await server.get(`/version-files/update?${search}`, { headers: { 'If-None-Match': first.headers.get('etag')! } })
    expect([notModified.status, await notModified.text()]).toEqual([304, ''])
    // The kept body is what answers, without SQL; another spelling of the request has a key of its
    // own, and its answer comes from SQLite: the same versions.
    const queries = vi.spyOn(server.ctx.release.db, 'all')
    try {
      expect(await (await server.get(`/version-files/update?${search}`)).text()).toBe(text)
      expect(queries).not.toHaveBeenCalled()
      const upper = `hashes=${hashes.map((h) => h.toUpperCase()).join(',')}&channel=stable&platform=fabric`
      expect(JSON.parse(await (await server.get(`/version-files/update?${upper}`)).text())).toEqual(JSON.parse(text))
      // One: the JSON of the files' candidate versions and of the newest matching ones, worked out
      // in memory (build/hash-index.ts, build/version-targets.ts).
      expect(queries).toHaveBeenCalledTimes(1)
    } finally {
      queries.mockRestore()
    }
    // A new release clears the cache (its generation), and the query runs again.
    cache.clear()
    expect(await (await server.get(`/version-files/update?${search}`)).text()).toBe(text)
    // The single update: keyed by the path's hash and the query, as sent.
    const hash = hashes.find((h) => expectedUpdate(h, { channel: ['stable'] }))!
    const single = await (await server.get(`/version-files/${hash}/update?channel=stable`)).text()
    expect(singleSchema.parse(JSON.parse(single)).data.id).toBe(expectedUpdate(hash, { channel: ['stable'] })!.id)
    expect(cache.get!(answerCacheKey('update', JSON.stringify([hash, 'channel=stable'])))).toBeUndefined()
    expect(await (await server.get(`/version-files/${hash}/update?channel=stable`)).text()).toBe(single)
    expect(cache.get!(answerCacheKey('update', JSON.stringify([hash, 'channel=stable'])))?.bytes.toString()).toBe(single)
    // 404s and 422s keep nothing, and stay what they are when asked again.
    const size = cache.size
    for (const [url, status] of [
      [`/version-files/${hash}/update?gameVersion=0.0.1`, 404],
      [`/version-files/update?hashes=${hash},xyz`, 422],
      [`/version-files/${hash}%3Fx/update?y`, 422],
    ] as const) {
      for (let i = 0; i < 2; i++) {
        const res = await server.get(url)
        expect([url, res.status]).toEqual([url, status])
        expect(errorSchema.parse(await json(res)).error.code).toBe(status === 404 ? 'not_found' : 'validation_failed')
      }
    }
    expect(cache.size).toBe(size)
    cache.clear()
  })

  it('single and bulk agree with each other and with the oracle for every hash and every filter combination', async () => {
    const combos: { query: string; filters: VersionFilters }[] = [
      { query: '', filters: {} },
      { query: 'channel=stable', filters: { channel: ['stable'] } },
      { query: 'channel=beta,alpha', filters: { channel: ['beta', 'alpha'] } },
      { query: 'gameVersion=1.20.1', filters: { gameVersion: ['1.20.1'] } },
      { query: 'loader=fabric', filters: { platform: ['fabric'] } },
      { query: 'platform=neoforge&channel=stable', filters: { platform: ['neoforge'], channel: ['stable'] } },
      { query: 'gameVersion=["1.21","1.21.1"]&loader=fabric,quilt&channel=stable', filters: { gameVersion: ['1.21', '1.21.1'], platform: ['fabric', 'quilt'], channel: ['stable'] } },
      { query: 'gameVersion=0.0.1', filters: { gameVersion: ['0.0.1'] } },
    ]
    const hashes = [...byHash.keys()]
    let found = 0
    let missing = 0
    for (const combo of combos) {
      const bulk: Record<string, Version> = {}
      for (let i = 0; i < hashes.length; i += 100) {
        const res = await server.get(`/version-files/update?hashes=${hashes.slice(i, i + 100).join(',')}&${combo.query}`)
        expect(res.status, combo.query).toBe(200)
        Object.assign(bulk, byHashSchema.parse(await json(res)).data)
      }
      await inBatches(hashes, 40, async (hash) => {
        const expected = expectedUpdate(hash, combo.filters)
        const res = await server.get(`/version-files/${hash}/update?${combo.query}`)
        const label = `${hash} ${combo.query}`
        if (!expected) {
          missing++
          expect(res.status, label).toBe(404)
          await res.arrayBuffer()
          expect(bulk[hash], label).toBeUndefined()
          return
        }
        found++
        expect(res.status, label).toBe(200)
        const single = singleSchema.parse(await json(res)).data
        expect(single.id, label).toBe(expected.id)
        expect(single.projectId, label).toBe(byHash.get(hash)![0]!.projectId)
        expect(matchesFilters(single, combo.filters), label).toBe(true)
        expect(bulk[hash], label).toEqual(single)
      })
      expect(Object.keys(bulk).length).toBe(hashes.filter((h) => expectedUpdate(h, combo.filters)).length)
    }
    expect(found).toBeGreaterThan(1000)
    expect(missing).toBeGreaterThan(500)
  })
})

describe('with CACHE_BYTES=0', () => {
  let off: TestServer
  beforeAll(async () => {
    off = await startServer(inject('distDir'), { cacheBytes: 0 })
  })
  afterAll(async () => {
    expect(off.serverErrors()).toBe(0)
    await off.close()
  })

  it('answers every hash route with the bytes and ETag of the default shim, asked again and again, each time from SQLite', async () => {
    // A store without memory: no answer key is made for it, nothing is looked up or kept.
    expect(off.ctx.cache.get).toBeUndefined()
    const hashes = [...byHash.keys()].slice(0, 25)
    const hash = hashes.find((h) => expectedUpdate(h, { channel: ['stable'] }))!
    const bulk = [`/version-files?hashes=${hashes.join(',')}`, `/version-files/update?hashes=${hashes.join(',')}&loader=fabric&channel=stable`]
    const paths = [...bulk, `/version-files/${hash}`, `/version-files/${hash}/update?channel=stable`]
    server.ctx.cache.clear()
    const queries = vi.spyOn(off.ctx.release.db, 'all')
    try {
      for (let round = 0; round < 3; round++) {
        for (const p of paths) {
          const [want, got] = await Promise.all([server.get(p), off.get(p)])
          expect([p, got.status, await got.text(), got.headers.get('etag')]).toEqual([p, 200, await want.text(), want.headers.get('etag')])
        }
        // One query for each bulk answer and for the single update, every round: nothing was kept.
        expect(queries).toHaveBeenCalledTimes(3 * (round + 1))
      }
    } finally {
      queries.mockRestore()
    }
    expect(off.ctx.cache.size).toBe(0)
    // The default shim kept what was asked again; the one without memory answered the same.
    expect(server.ctx.cache.get!(answerCacheKey('updates', bulk[1]!.split('?')[1]!))).toBeDefined()
    server.ctx.cache.clear()
  })
})

describe('GET /files/{id}/download', () => {
  it('redirects (302, no-store, empty body) to the content-addressed object, which has the exact bytes', async () => {
    const files = [...lists.values()].flatMap((l) => l.flatMap((v) => v.files))
    expect(files.length).toBeGreaterThan(100)
    await inBatches(files, 20, async (file) => {
      const url = `/files/${file.id}/download`
      const res = await server.get(url)
      expect(res.status, url).toBe(302)
      expect(res.headers.get('cache-control')).toBe('no-store')
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(res.headers.get('x-ratelimit-limit')).not.toBeNull()
      expect(await res.text()).toBe('')
      const location = res.headers.get('location')!
      expect(location).toBe(`/objects/${file.sha256}/${encodeURIComponent(file.filename)}`)
      const head = await server.get(url, { method: 'HEAD' })
      expect(head.status).toBe(302)
      expect(head.headers.get('location')).toBe(location)
      expect(head.headers.get('cache-control')).toBe('no-store')
      const object = await server.get(new URL(location, server.origin).href)
      expect(object.status, location).toBe(200)
      const bytes = Buffer.from(await object.arrayBuffer())
      expect(bytes.length).toBe(file.size)
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(file.sha256)
    })
  })

  it('404s for an unknown file and a file of a hidden version', async () => {
    const hidden = readHiddenFiles().filter((f) => !byHash.has(f.sha256))
    expect(hidden.length).toBeGreaterThan(0)
    for (const id of ['noSuchFile', ...hidden.map((f) => f.id)]) {
      for (const method of ['GET', 'HEAD']) {
        const res = await server.get(`/files/${id}/download`, { method })
        expect(res.status, `${method} ${id}`).toBe(404)
        expect(res.headers.get('location')).toBeNull()
        if (method === 'GET') expect(errorSchema.parse(await json(res)).error.code).toBe('not_found')
      }
    }
  })
})
