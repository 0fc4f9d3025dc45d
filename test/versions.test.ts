/**
 * Issue "Versions": the versions list (newest first, filters, paging, includeChangelog), single
 * version reads by id and number, and the bulk read, through the real shim. Expected values come
 * from the sample data and from the full unfiltered lists the server returns.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { dataEnvelope, errorSchema, pageEnvelope, versionSchema, type Version } from '../build/schema/api.ts'
import { expectValidationError, json, listSampleProjects, matchesFilters, readSampleVersions, startServer, type TestServer } from './harness.ts'

const projects = listSampleProjects()
const visibleProjects = projects.filter((p) => p.project.status === 'published')
const hiddenVersions = visibleProjects.flatMap((p) => readSampleVersions(p.folder).filter((v) => v.status !== 'published').map((v) => ({ ...v, slug: p.project.slug })))
const invisibleProject = projects.find((p) => p.project.status !== 'published')!.project

const listSchema = pageEnvelope(versionSchema)
const bulkSchema = dataEnvelope(versionSchema.array())

let server: TestServer
/** Every visible version of fabric-api and sodium, newest first, as the server lists them. */
const full = new Map<string, Version[]>()

async function getList(path: string): Promise<{ text: string; body: ReturnType<typeof listSchema.parse> }> {
  const res = await server.get(path)
  expect(res.status, path).toBe(200)
  const text = await res.text()
  return { text, body: listSchema.parse(JSON.parse(text)) }
}

/** DESIGN's one ordering: publishedAt desc, then createdAt desc, then id. */
function isNewerOrSame(a: Version, b: Version): boolean {
  if (a.publishedAt !== b.publishedAt) return (a.publishedAt ?? '') > (b.publishedAt ?? '')
  if (a.createdAt !== b.createdAt) return a.createdAt > b.createdAt
  return a.id <= b.id
}

beforeAll(async () => {
  server = await startServer(inject('distDir'))
  for (const slug of ['fabric-api', 'sodium']) full.set(slug, (await getList(`/projects/${slug}/versions?limit=100`)).body.data)
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

describe('GET /projects/{idOrSlug}/versions', () => {
  it('lists fabric-api newest first across pages of 7, with an exact total', async () => {
    const all = full.get('fabric-api')!
    expect(all.length).toBeGreaterThan(30)
    for (let i = 1; i < all.length; i++) expect(isNewerOrSame(all[i - 1]!, all[i]!), `${all[i - 1]!.id} before ${all[i]!.id}`).toBe(true)
    const walked: Version[] = []
    const pages = Math.ceil(all.length / 7)
    for (let page = 1; page <= pages + 1; page++) {
      const { body } = await getList(`/projects/fabric-api/versions?limit=7&page=${page}`)
      expect(body.meta).toEqual({ page, limit: 7, total: all.length, totalPages: pages })
      expect(body.data.length).toBe(page <= pages ? Math.min(7, all.length - (page - 1) * 7) : 0)
      walked.push(...body.data)
    }
    expect(walked.map((v) => v.id)).toEqual(all.map((v) => v.id))
    expect(new Set(walked.map((v) => v.id)).size).toBe(all.length)
  })

  it('filters by channel, gameVersion and platform (alias loader): any value of a list, all lists together', async () => {
    const all = full.get('sodium')!
    const cases: { query: string; filters: { channel?: string[]; gameVersion?: string[]; platform?: string[] } }[] = [
      { query: 'channel=stable', filters: { channel: ['stable'] } },
      { query: 'channel=beta,alpha', filters: { channel: ['beta', 'alpha'] } },
      { query: 'channel=["beta"]', filters: { channel: ['beta'] } },
      { query: 'gameVersion=1.21.1', filters: { gameVersion: ['1.21.1'] } },
      { query: 'gameVersion=1.20.1,1.21', filters: { gameVersion: ['1.20.1', '1.21'] } },
      { query: 'platform=neoforge', filters: { platform: ['neoforge'] } },
      { query: 'loader=neoforge', filters: { platform: ['neoforge'] } },
      { query: 'loader=fabric&channel=stable&gameVersion=1.21', filters: { platform: ['fabric'], channel: ['stable'], gameVersion: ['1.21'] } },
      { query: 'loader=fabric,neoforge&gameVersion=1.21.1', filters: { platform: ['fabric', 'neoforge'], gameVersion: ['1.21.1'] } },
      { query: 'loader=forge', filters: { platform: ['forge'] } },
    ]
    let nonTrivial = 0
    for (const c of cases) {
      const expected = all.filter((v) => matchesFilters(v, c.filters))
      if (expected.length > 0 && expected.length < all.length) nonTrivial++
      const { body } = await getList(`/projects/sodium/versions?limit=100&${c.query}`)
      expect(body.data.map((v) => v.id), c.query).toEqual(expected.map((v) => v.id))
      expect(body.meta.total, c.query).toBe(expected.length)
      for (const v of body.data) expect(matchesFilters(v, c.filters), `${c.query}: ${v.versionNumber}`).toBe(true)
      const paged = await getList(`/projects/sodium/versions?limit=2&page=2&${c.query}`)
      expect(paged.body.data.map((v) => v.id)).toEqual(expected.slice(2, 4).map((v) => v.id))
      expect(paged.body.meta).toEqual({ page: 2, limit: 2, total: expected.length, totalPages: Math.ceil(expected.length / 2) })
    }
    expect(nonTrivial).toBeGreaterThanOrEqual(6)
  })

  it('reads a one-value filter exactly: every game version and platform alone, and values that are parts of the arrays\' text', async () => {
    const all = full.get('sodium')!
    const gameVersions = [...new Set(all.flatMap((v) => v.gameVersions))]
    const platforms = [...new Set(all.flatMap((v) => v.platforms))]
    expect(all.some((v) => v.gameVersions.length > 1)).toBe(true)
    const cases: { query: string; filters: { gameVersion?: string[]; platform?: string[] } }[] = [
      ...gameVersions.map((g) => ({ query: `gameVersion=${encodeURIComponent(JSON.stringify([g]))}`, filters: { gameVersion: [g] } })),
      ...platforms.map((p) => ({ query: `platform=${p}`, filters: { platform: [p] } })),
      // Text between two elements, a part of one, one with a quote or a backslash: nothing matches.
      ...[',', '","', '1.2', '.21', '1.21"', 'a\\b', '[', ']'].map((g) => ({ query: `gameVersion=${encodeURIComponent(JSON.stringify([g]))}`, filters: { gameVersion: [g] } })),
    ]
    for (const c of cases) {
      const expected = all.filter((v) => matchesFilters(v, c.filters))
      const { body } = await getList(`/projects/sodium/versions?limit=100&${c.query}`)
      expect(body.data.map((v) => v.id), c.query).toEqual(expected.map((v) => v.id))
      expect(body.meta.total, c.query).toBe(expected.length)
    }
    expect(cases.filter((c) => all.some((v) => matchesFilters(v, c.filters))).length).toBe(gameVersions.length + platforms.length)
  })

  it('includeChangelog=false leaves out the changelog of every item and keeps every other byte', async () => {
    const withLog = await getList('/projects/fabric-api/versions?limit=50')
    const without = await getList('/projects/fabric-api/versions?limit=50&includeChangelog=false')
    expect(withLog.body.data.every((v) => typeof v.changelog === 'string')).toBe(true)
    for (const v of without.body.data) expect('changelog' in v).toBe(false)
    const raw = JSON.parse(withLog.text) as { data: Record<string, unknown>[]; meta: unknown }
    for (const item of raw.data) delete item.changelog
    expect(without.text).toBe(JSON.stringify(raw))
    const explicit = await getList('/projects/fabric-api/versions?limit=50&includeChangelog=true')
    expect(explicit.text).toBe(withLog.text)
  })

  it('with default parameters answers the bytes of the pre-rendered first page (by slug, id, any case)', async () => {
    for (const p of visibleProjects.slice(0, 12)) {
      const staticRes = await server.get(`/projects/${p.project.slug}/versions`)
      expect(staticRes.status).toBe(200)
      const bytes = await staticRes.text()
      for (const path of [
        `/projects/${p.project.slug}/versions?page=1&limit=20`,
        `/projects/${p.project.id}/versions?includeChangelog=true`,
        `/projects/${p.project.slug.toUpperCase()}/versions`,
        `/projects/${p.project.slug}/versions?unknown=1`,
      ]) {
        const res = await server.get(path)
        expect(res.status, path).toBe(200)
        expect(res.headers.get('etag')).toBe(staticRes.headers.get('etag'))
        expect(await res.text(), path).toBe(bytes)
      }
    }
  })

  it('404s for an unknown or invisible project; 422s name the bad parameter', async () => {
    for (const path of ['/projects/no-such-project/versions?limit=5', `/projects/${invisibleProject.slug}/versions`, `/projects/${invisibleProject.id}/versions?page=1`]) {
      const res = await server.get(path)
      expect(res.status, path).toBe(404)
      expect(errorSchema.parse(await json(res)).error.code).toBe('not_found')
    }
    await expectValidationError(server, '/projects/sodium/versions?limit=0', 'limit')
    await expectValidationError(server, '/projects/sodium/versions?limit=101', 'limit')
    await expectValidationError(server, '/projects/sodium/versions?page=0', 'page')
    await expectValidationError(server, '/projects/sodium/versions?page=abc', 'page')
    await expectValidationError(server, '/projects/sodium/versions?channel=nightly', 'channel')
    await expectValidationError(server, '/projects/sodium/versions?includeChangelog=maybe', 'includeChangelog')
    await expectValidationError(server, '/projects/sodium/versions?gameVersion=[1', 'gameVersion')
  })
})

describe('single versions', () => {
  it('reads a version by number (case-sensitive) or id under its project, with the static bytes', async () => {
    for (const v of full.get('sodium')!) {
      const canonical = await server.get(`/projects/sodium/versions/${encodeURIComponent(v.versionNumber)}`)
      expect(canonical.status).toBe(200)
      const bytes = await canonical.text()
      expect(dataEnvelope(versionSchema).parse(JSON.parse(bytes)).data.id).toBe(v.id)
      for (const path of [
        `/projects/SoDiUm/versions/${encodeURIComponent(v.versionNumber)}`,
        `/projects/${v.projectId}/versions/${v.id}?x=1`,
        `/projects/sodium/versions/${v.id}?includeChangelog=false`,
        `/versions/${v.id}`,
        `/versions/${v.id}?x=1`,
      ]) {
        const res = await server.get(path)
        expect(res.status, path).toBe(200)
        expect(await res.text(), path).toBe(bytes)
      }
      if (v.versionNumber.toUpperCase() !== v.versionNumber) {
        expect((await server.get(`/projects/sodium/versions/${encodeURIComponent(v.versionNumber.toUpperCase())}`)).status).toBe(404)
      }
    }
  })

  it('404s for a version of another project, a hidden version and an unknown one', async () => {
    const other = full.get('fabric-api')![0]!
    expect(hiddenVersions.length).toBeGreaterThan(0)
    const paths = [
      `/projects/sodium/versions/${other.id}`,
      `/projects/sodium/versions/${encodeURIComponent(other.versionNumber)}?x=1`,
      '/projects/sodium/versions/0.0.0-none',
      '/versions/doesNotExist',
      '/versions/doesNotExist?includeChangelog=false',
      ...hiddenVersions.flatMap((v) => [`/versions/${v.id}`, `/projects/${v.slug}/versions/${encodeURIComponent(v.versionNumber)}`, `/projects/${v.slug}/versions/${v.id}?x=1`]),
    ]
    for (const path of paths) {
      const res = await server.get(path)
      expect(res.status, path).toBe(404)
      expect(errorSchema.parse(await json(res)).error.code).toBe('not_found')
    }
  })
})

describe('GET /versions?ids=', () => {
  it('lists the versions asked for in that order, each once, unknown and hidden ones left out, as the single reads', async () => {
    const a = full.get('sodium')![3]!
    const b = full.get('fabric-api')![10]!
    const c = full.get('fabric-api')![0]!
    const ids = [b.id, 'unknownId', a.id, hiddenVersions[0]!.id, b.id, c.id]
    const res = await server.get(`/versions?ids=${ids.join(',')}`)
    expect(res.status).toBe(200)
    const text = await res.text()
    const body = bulkSchema.parse(JSON.parse(text))
    expect('meta' in body).toBe(false)
    expect(body.data.map((v) => v.id)).toEqual([b.id, a.id, c.id])
    const singles = await Promise.all([b, a, c].map(async (v) => (JSON.parse(await (await server.get(`/versions/${v.id}`)).text()) as { data: unknown }).data))
    expect(text).toBe(JSON.stringify({ data: singles }))
    const asJson = await server.get(`/versions?ids=${encodeURIComponent(JSON.stringify([b.id, a.id, c.id]))}`)
    expect(await asJson.text()).toBe(text)
  })

  it('includeChangelog=false leaves the changelog out; unknown ids only give an empty list', async () => {
    const ids = full.get('fabric-api')!.slice(0, 5).map((v) => v.id)
    const body = bulkSchema.parse(await json(await server.get(`/versions?ids=${ids.join(',')}&includeChangelog=false`)))
    expect(body.data.map((v) => v.id)).toEqual(ids)
    for (const v of body.data) expect('changelog' in v).toBe(false)
    expect(bulkSchema.parse(await json(await server.get('/versions?ids=nope,alsoNope'))).data).toEqual([])
  })

  it('422s name the bad parameter', async () => {
    await expectValidationError(server, '/versions', 'ids')
    await expectValidationError(server, '/versions?ids=', 'ids')
    await expectValidationError(server, `/versions?ids=${Array.from({ length: 101 }, (_, i) => `v${i}`).join(',')}`, 'ids')
    await expectValidationError(server, '/versions?ids=a&includeChangelog=maybe', 'includeChangelog')
  })
})
