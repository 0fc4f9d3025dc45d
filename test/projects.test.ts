/**
 * Issue "Projects": search and bulk read of GET /projects and /search, and the single-project reads
 * (detail, dependencies, files) when they reach the shim. Expected values come from the sample
 * data in data/ and from the static release, never from the code under test.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import {
  dataEnvelope,
  errorSchema,
  fileSchema,
  pageEnvelope,
  projectDetailSchema,
  projectSummarySchema,
  versionSchema,
  type ProjectSummary,
} from '../build/schema/api.ts'
import { sortValues } from '../build/schema/query.ts'
import { json, startServer, type TestServer } from './harness.ts'

interface SampleProject {
  id: string
  slug: string
  name: string
  status: string
  authorId: string
}
interface SampleVersion {
  id: string
  status: string
  files: { id: string }[]
}

const dataDir = 'data/projects'
const folders = readdirSync(dataDir)
const projects: SampleProject[] = folders.map((f) => JSON.parse(readFileSync(path.join(dataDir, f, 'project.json'), 'utf8')) as SampleProject)
const visible = projects.filter((p) => p.status === 'published')
const invisible = projects.filter((p) => p.status !== 'published')

/** Source versions of a project folder (all statuses). */
function readSampleVersions(slug: string): SampleVersion[] {
  const dir = path.join(dataDir, slug, 'versions')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as SampleVersion)
}

const page = pageEnvelope(projectSummarySchema)
const list = dataEnvelope(projectSummarySchema.array())

let server: TestServer
/** Every visible project, one big page in the default order. */
let everything: ProjectSummary[]

beforeAll(async () => {
  server = await startServer(inject('distDir'))
  const res = await server.get('/projects?limit=100')
  expect(res.status).toBe(200)
  everything = page.parse(await json(res)).data
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

async function getPage(query: string): Promise<{ data: ProjectSummary[]; meta: { page: number; limit: number; total: number; totalPages: number } }> {
  const res = await server.get(`/projects?${query}`)
  expect(res.status, query).toBe(200)
  return page.parse(await json(res))
}

/** Walks every page of a query with limit 7 and returns the ids in order. */
async function walkPages(query: string): Promise<string[]> {
  const first = await getPage(`${query}&limit=7&page=1`)
  const ids = first.data.map((p) => p.id)
  expect(first.meta.totalPages).toBe(Math.ceil(first.meta.total / 7))
  for (let n = 2; n <= first.meta.totalPages + 1; n++) {
    const next = await getPage(`${query}&limit=7&page=${n}`)
    expect(next.meta).toEqual({ page: n, limit: 7, total: first.meta.total, totalPages: first.meta.totalPages })
    if (n === first.meta.totalPages + 1) expect(next.data).toEqual([])
    else expect(next.data.length).toBe(n === first.meta.totalPages ? first.meta.total - 7 * (n - 1) : 7)
    ids.push(...next.data.map((p) => p.id))
  }
  expect(new Set(ids).size).toBe(ids.length)
  return ids
}

async function expectValidationFailed(query: string, param: string): Promise<void> {
  const res = await server.get(`/projects?${query}`)
  expect(res.status, query).toBe(422)
  const body = errorSchema.parse(await json(res))
  expect(body.error.code).toBe('validation_failed')
  expect(body.error.details?.some((d) => d.path === param || d.path.startsWith(`${param}[`)), JSON.stringify(body)).toBe(true)
  expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
}

const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
/** The order each sort promises, ties broken by id. */
const comparators: Record<string, (a: ProjectSummary, b: ProjectSummary) => number> = {
  downloads: (a, b) => b.downloads - a.downloads || compareText(a.id, b.id),
  relevance: (a, b) => b.downloads - a.downloads || compareText(a.id, b.id),
  favorites: (a, b) => b.favorites - a.favorites || compareText(a.id, b.id),
  updated: (a, b) => compareText(b.updatedAt, a.updatedAt) || compareText(a.id, b.id),
  newest: (a, b) => compareText(b.publishedAt ?? '', a.publishedAt ?? '') || compareText(a.id, b.id),
  name: (a, b) => compareText(a.name.toLowerCase(), b.name.toLowerCase()) || compareText(a.id, b.id),
}

describe('GET /projects search', () => {
  it('lists every visible project and no invisible one, with an exact total', async () => {
    expect(everything.length).toBe(visible.length)
    expect(new Set(everything.map((p) => p.id))).toEqual(new Set(visible.map((p) => p.id)))
    const res = await getPage('limit=100')
    expect(res.meta).toEqual({ page: 1, limit: 100, total: visible.length, totalPages: 1 })
  })

  it('answers page 1 with the bytes of the pre-rendered /projects, and /search the same', async () => {
    const staticBody = await (await server.get('/projects')).text()
    for (const p of ['/projects?page=1&limit=20', '/projects?page=1', '/search?limit=20', '/projects?sort=downloads', '/projects?sort=relevance&q=%20']) {
      const res = await server.get(p)
      expect(res.status, p).toBe(200)
      expect(await res.text(), p).toBe(staticBody)
    }
    expect(page.parse(JSON.parse(staticBody)).meta).toEqual({ page: 1, limit: 20, total: visible.length, totalPages: Math.ceil(visible.length / 20) })
  })

  it('keeps every sort ordered across page boundaries, never repeating or skipping an item', async () => {
    for (const sort of sortValues) {
      const big = (await getPage(`sort=${sort}&limit=100`)).data
      expect(big.length).toBe(visible.length)
      expect(big.map((p) => p.id), sort).toEqual([...big].sort(comparators[sort]).map((p) => p.id))
      expect(await walkPages(`sort=${sort}`), sort).toEqual(big.map((p) => p.id))
    }
    const filtered = (await getPage('type=mod&sort=name&limit=100')).data.map((p) => p.id)
    expect(await walkPages('type=mod&sort=name')).toEqual(filtered)
    const searched = (await getPage('q=mod&limit=100')).data.map((p) => p.id)
    expect(searched.length).toBeGreaterThan(7)
    expect(await walkPages('q=mod')).toEqual(searched)
  })

  it('answers a page beyond the end with no items and the right meta', async () => {
    const res = await getPage('page=1000&limit=10')
    expect(res).toEqual({ data: [], meta: { page: 1000, limit: 10, total: visible.length, totalPages: Math.ceil(visible.length / 10) } })
  })

  it('filters by type: every result has it, and none is missing', async () => {
    for (const type of ['mod', 'map', 'skin'] as const) {
      const res = await getPage(`type=${type}&limit=100`)
      const expected = everything.filter((p) => p.type === type)
      expect(expected.length).toBeGreaterThan(0)
      expect(res.data.map((p) => p.id)).toEqual(expected.map((p) => p.id))
      expect(res.meta.total).toBe(expected.length)
    }
  })

  it('matches any value of a list filter, in comma, JSON array and repeated forms alike', async () => {
    const cases: { param: string; values: string[]; field: (p: ProjectSummary) => string[] }[] = [
      { param: 'gameVersion', values: ['1.20.1', '1.21'], field: (p) => p.gameVersions },
      { param: 'gameVersion', values: ['1.21', '1.8.9', '1.12.2'], field: (p) => p.gameVersions },
      { param: 'category', values: ['optimization', 'adventure'], field: (p) => p.categories },
      { param: 'platform', values: ['quilt', 'bedrock'], field: (p) => p.platforms },
      { param: 'loader', values: ['neoforge', 'slim'], field: (p) => p.platforms },
      { param: 'tag', values: ['fps', 'multiplayer'], field: (p) => p.tags },
    ]
    for (const { param, values, field } of cases) {
      const expected = everything.filter((p) => field(p).some((v) => values.includes(v))).map((p) => p.id)
      // More projects have one of the values than all of them, so "any" is really tested.
      expect(everything.filter((p) => values.every((v) => field(p).includes(v))).length, param).toBeLessThan(expected.length)
      const forms = [
        `${param}=${values.join(',')}`,
        `${param}=${encodeURIComponent(JSON.stringify(values))}`,
        values.map((v) => `${param}=${v}`).join('&'),
        `${param}=${values.join(',%20')}`,
      ]
      for (const form of forms) {
        const res = await getPage(`${form}&limit=100`)
        expect(res.data.map((p) => p.id), form).toEqual(expected)
        for (const p of res.data) expect(field(p).some((v) => values.includes(v)), `${form}: ${p.slug}`).toBe(true)
      }
    }
  })

  it('treats loader as platform', async () => {
    for (const v of ['fabric', 'forge,quilt', '["classic","slim"]']) {
      const a = await (await server.get(`/projects?platform=${encodeURIComponent(v)}&limit=100`)).text()
      const b = await (await server.get(`/projects?loader=${encodeURIComponent(v)}&limit=100`)).text()
      expect(b).toBe(a)
      expect(page.parse(JSON.parse(a)).data.length).toBeGreaterThan(0)
    }
  })

  it('combines different filters with AND', async () => {
    const res = await getPage('type=mod&gameVersion=1.21,1.21.1&platform=fabric&category=optimization&limit=100')
    const expected = everything.filter(
      (p) =>
        p.type === 'mod' &&
        p.gameVersions.some((v) => v === '1.21' || v === '1.21.1') &&
        p.platforms.includes('fabric') &&
        p.categories.includes('optimization'),
    )
    expect(expected.length).toBeGreaterThan(0)
    expect(res.data.map((p) => p.id)).toEqual(expected.map((p) => p.id))
    expect((await getPage('type=skin&platform=fabric')).data).toEqual([])
    expect((await getPage('gameVersion=0.0.1')).meta.total).toBe(0)
  })

  it('filters by author username, case-insensitively', async () => {
    const sodium = everything.find((p) => p.slug === 'sodium')!
    const username = sodium.author.username
    const expected = everything.filter((p) => p.author.username === username).map((p) => p.id)
    expect(expected.length).toBeGreaterThan(1)
    for (const form of [username, username.toUpperCase()]) {
      expect((await getPage(`author=${form}&limit=100`)).data.map((p) => p.id)).toEqual(expected)
    }
    expect((await getPage('author=nobody-at-all')).meta.total).toBe(0)
  })

  it('ETag and If-None-Match work on a dynamic search', async () => {
    const res = await server.get('/projects?q=sodium&type=mod')
    const etag = res.headers.get('etag')!
    expect(etag).toMatch(/^"/)
    const again = await server.get('/projects?q=sodium&type=mod', { headers: { 'If-None-Match': etag } })
    expect(again.status).toBe(304)
    expect(await again.text()).toBe('')
  })
})

describe('GET /projects full text (q)', () => {
  const slugsOf = async (q: string, extra = ''): Promise<string[]> => (await getPage(`q=${encodeURIComponent(q)}${extra}&limit=100`)).data.map((p) => p.slug)

  it('ranks an exact name or slug match first', async () => {
    for (const [q, slug] of [
      ['sodium', 'sodium'],
      ['Sodium', 'sodium'],
      ['iris', 'iris'],
      ['No Chat Reports', 'no-chat-reports'],
      ['no-chat-reports', 'no-chat-reports'],
      ['lithium', 'lithium'],
      ['Just Enough Items', 'jei'],
      ['jei', 'jei'],
    ]) {
      expect((await slugsOf(q!))[0], q).toBe(slug)
    }
  })

  it('matches a prefix of the last word while typing, and words joined together', async () => {
    expect(await slugsOf('sod')).toContain('sodium')
    expect(await slugsOf('sodi')).toContain('sodium-extra')
    expect(await slugsOf('nochatreports')).toContain('no-chat-reports')
    expect(await slugsOf('no chat rep')).toContain('no-chat-reports')
  })

  it('searches summary, tags, author and description too', async () => {
    const sodium = everything.find((p) => p.slug === 'sodium')!
    expect(await slugsOf(sodium.author.username)).toContain('sodium')
    const tag = sodium.tags[0]!
    const withTag = await slugsOf(tag)
    for (const p of everything.filter((x) => x.tags.includes(tag))) expect(withTag).toContain(p.slug)
    expect(await slugsOf('micro-stutter')).toContain('sodium')
    expect(await slugsOf('zzzzqqqq')).toEqual([])
  })

  it('combines q with filters and with every sort', async () => {
    const mods = await getPage('q=sodium&type=mod&limit=100')
    expect(mods.data.length).toBeGreaterThan(0)
    for (const p of mods.data) expect(p.type).toBe('mod')
    expect((await getPage('q=sodium&type=skin')).meta.total).toBe(0)
    for (const sort of sortValues) {
      const res = (await getPage(`q=sodium&sort=${sort}&limit=100`)).data
      expect(new Set(res.map((p) => p.id))).toEqual(new Set(mods.data.map((p) => p.id)))
      if (sort !== 'relevance') expect(res.map((p) => p.id), sort).toEqual([...res].sort(comparators[sort]).map((p) => p.id))
    }
  })

  it('never lets the text become FTS5 syntax: hostile values answer 200 or 422, never 500', async () => {
    const hostile = ['"', '""', 'AND', 'OR', 'NOT x', 'x NOT', 'NEAR(a b)', 'title:x', 'name:sodium', '-x', '^x', '(', ')', '*', 'sod*', '{name}: x', "'", '\\', '%', '_', 'a'.repeat(500), 'x '.repeat(250), 'é', '🙂', 'x'.repeat(5_000)]
    for (const q of hostile) {
      const res = await server.get(`/projects?q=${encodeURIComponent(q)}`)
      expect([200, 422], JSON.stringify(q.slice(0, 20))).toContain(res.status)
      if (res.status === 200) page.parse(await json(res))
      else expect(errorSchema.parse(await json(res)).error.details?.[0]?.path).toBe('q')
    }
    expect((await server.get(`/projects?q=${'x'.repeat(5_000)}`)).status).toBe(422)
    // 10,000 characters exceed the request-target limit of the app (414) before reaching the route.
    const huge = await server.get(`/projects?q=${'x'.repeat(10_000)}`)
    expect([414, 422]).toContain(huge.status)
    expect(errorSchema.parse(await json(huge)).error.requestId).toBe(huge.headers.get('x-request-id'))
    // Operators are plain words: "name:sodium" is the words name and sodium.
    expect(await slugsOf('name:sodium')).toEqual(await slugsOf('name sodium'))
  })

  it('treats a q of only spaces or punctuation as no q', async () => {
    const base = await (await server.get('/projects?limit=100')).text()
    for (const q of ['', ' ', '"', '()', '*', '-', ' , ; ']) {
      expect(await (await server.get(`/projects?q=${encodeURIComponent(q)}&limit=100`)).text(), JSON.stringify(q)).toBe(base)
    }
  })
})

describe('GET /projects?ids= bulk read', () => {
  it('lists the projects asked, in order, each once, without unknown or invisible ones and without meta', async () => {
    const asked = ['lithium', 'SODIUM', 'no-such-project', invisible[0]!.slug, invisible[1]!.id, 'MOFfkAST', 'iris', 'Lithium', 'jei']
    const res = await server.get(`/projects?ids=${encodeURIComponent(asked.join(','))}`)
    expect(res.status).toBe(200)
    const body = await json(res)
    expect(Object.keys(body)).toEqual(['data'])
    const items = list.parse(body).data
    expect(items.map((p) => p.slug)).toEqual(['lithium', 'sodium', 'iris', 'jei'])
    expect(projects.find((p) => p.id === 'MOFfkAST')?.slug).toBe('sodium')
  })

  it('lists no invisible project even when asked by id or slug', async () => {
    const ids = invisible.flatMap((p) => [p.id, p.slug])
    const res = await server.get(`/projects?ids=${encodeURIComponent(JSON.stringify(ids))}`)
    expect(list.parse(await json(res)).data).toEqual([])
  })

  it('ignores every other parameter', async () => {
    const a = await (await server.get('/projects?ids=sodium,iris,create')).text()
    for (const extra of ['type=skin', 'q=zzzz', 'limit=1', 'page=9', 'sort=name', 'author=nobody', 'gameVersion=0.0.1']) {
      expect(await (await server.get(`/projects?ids=sodium,iris,create&${extra}`)).text(), extra).toBe(a)
    }
    expect(await (await server.get('/search?ids=sodium,iris,create')).text()).toBe(a)
    expect(await (await server.get(`/projects?ids=${encodeURIComponent('["sodium","iris","create"]')}`)).text()).toBe(a)
  })

  it('answers each item with the summary of its detail, byte-identical to the search items', async () => {
    const ids = visible.slice(0, 50).map((p) => p.id)
    const items = list.parse(await json(await server.get(`/projects?ids=${ids.join(',')}`))).data
    expect(items.map((p) => p.id)).toEqual(ids)
    const summaryKeys = Object.keys(projectSummarySchema.shape)
    for (const item of items) {
      const detail = dataEnvelope(projectDetailSchema).parse(await json(await server.get(`/projects/${item.slug}`))).data
      expect(Object.keys(item)).toEqual(summaryKeys)
      expect(item, item.slug).toEqual(Object.fromEntries(summaryKeys.map((k) => [k, detail[k as keyof typeof detail]])))
      expect(JSON.stringify(item)).toBe(JSON.stringify(everything.find((p) => p.id === item.id)))
    }
  })

  it('rejects an invalid ids list with 422 naming ids, even with other parameters', async () => {
    const many = Array.from({ length: 51 }, (_, i) => `p${i}`)
    await expectValidationFailed(`ids=${many.join(',')}`, 'ids')
    await expectValidationFailed(`ids=${encodeURIComponent(JSON.stringify(many))}&type=mod`, 'ids')
    await expectValidationFailed('ids=[broken', 'ids')
    await expectValidationFailed(`ids=${encodeURIComponent('[1,2]')}`, 'ids')
    await expectValidationFailed('ids=', 'ids')
    await expectValidationFailed('ids=,,', 'ids')
    expect((await server.get(`/projects?ids=${many.slice(0, 50).join(',')}`)).status).toBe(200)
  })
})

describe('GET /projects validation', () => {
  it('answers 422 validation_failed naming the parameter', async () => {
    const cases: [string, string][] = [
      ['type=plugin', 'type'],
      ['sort=name;DROP%20TABLE%20projects', 'sort'],
      ['sort=popular', 'sort'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=-1', 'limit'],
      ['limit=1.5', 'limit'],
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['page=', 'page'],
      ['sort=name&sort=downloads', 'sort'],
      ['q=a&q=b', 'q'],
      ['category=[broken', 'category'],
      [`gameVersion=${encodeURIComponent('[1.21]')}`, 'gameVersion'],
      [`platform=${encodeURIComponent('["fabric",null]')}`, 'platform'],
      [`tag=${'x'.repeat(101)}`, 'tag'],
    ]
    for (const [query, param] of cases) await expectValidationFailed(query, param)
    // The same through the /search alias.
    const res = await server.get('/search?limit=0')
    expect(res.status).toBe(422)
  })

  it('ignores unknown parameters', async () => {
    expect(await (await server.get('/projects?foo=bar&__proto__=x')).text()).toBe(await (await server.get('/projects')).text())
  })
})

describe('single projects through the shim', () => {
  it('answers non-canonical detail and dependencies requests with the static bytes', async () => {
    for (const suffix of ['', '/dependencies']) {
      const canonical = await (await server.get(`/projects/sodium${suffix}`)).text()
      for (const p of [`/projects/SODIUM${suffix}`, `/projects/Sodium${suffix}?x=1`, `/projects/MOFfkAST${suffix}?x=1`, `/projects/sodium${suffix}?utm=1`]) {
        const res = await server.get(p)
        expect(res.status, p).toBe(200)
        expect(await res.text(), p).toBe(canonical)
      }
    }
    dataEnvelope(projectDetailSchema).parse(await json(await server.get('/projects/SODIUM')))
  })

  it('treats invisible and unknown projects as absent (404 envelope), however they are asked', async () => {
    for (const p of invisible) {
      for (const key of [p.slug.toUpperCase(), `${p.slug}?x=1`, `${p.id}?x=1`]) {
        for (const suffix of ['', '/dependencies', '/files']) {
          const target = key.includes('?') ? key.replace('?', `${suffix}?`) : `${key}${suffix}`
          for (const t of [target, target.includes('?') ? `${target}&all=true` : `${target}?all=true`]) {
            const res = await server.get(`/projects/${t}`)
            expect(res.status, t).toBe(404)
            const body = errorSchema.parse(await json(res))
            expect(body.error.code).toBe('not_found')
            expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
          }
        }
      }
    }
    expect((await server.get('/projects/no-such-project?x=1')).status).toBe(404)
    expect((await server.get('/projects/no-such-project/files?all=true')).status).toBe(404)
  })
})

describe('GET /projects/{idOrSlug}/files', () => {
  it('answers all=false (and SODIUM) with the static current files', async () => {
    const canonical = await (await server.get('/projects/sodium/files')).text()
    for (const p of ['/projects/sodium/files?all=false', '/projects/SODIUM/files', '/projects/MOFfkAST/files?all=0']) {
      expect(await (await server.get(p)).text(), p).toBe(canonical)
    }
    const detail = dataEnvelope(projectDetailSchema).parse(await json(await server.get('/projects/sodium'))).data
    expect(dataEnvelope(fileSchema.array()).parse(JSON.parse(canonical)).data).toEqual(detail.currentVersion?.files)
  })

  it('lists with all=true the files of every published version, newest first, byte-identical to the versions', async () => {
    for (const slug of ['sodium', 'fabric-api', 'cloth-config', 'eldham-city', 'iris']) {
      const sample = projects.find((p) => p.slug === slug)!
      const sourceVersions = readSampleVersions(slug)
      const published = sourceVersions.filter((v) => v.status === 'published')
      const hidden = sourceVersions.filter((v) => v.status !== 'published')
      const versions = []
      for (const v of published) {
        const res = await server.get(`/versions/${v.id}`)
        expect(res.status, v.id).toBe(200)
        versions.push(dataEnvelope(versionSchema).parse(await json(res)).data)
      }
      versions.sort(
        (a, b) =>
          compareText(b.publishedAt ?? '', a.publishedAt ?? '') || compareText(b.createdAt, a.createdAt) || compareText(a.id, b.id),
      )
      const expected = versions.flatMap((v) => [...v.files.filter((f) => f.primary), ...v.files.filter((f) => !f.primary)])
      for (const url of [`/projects/${slug}/files?all=true`, `/projects/${sample.id}/files?all=1`, `/projects/${slug.toUpperCase()}/files?all=true`]) {
        const res = await server.get(url)
        expect(res.status, url).toBe(200)
        const text = await res.text()
        expect(text, url).toBe(`{"data":[${expected.map((f) => JSON.stringify(f)).join(',')}]}`)
        const ids = new Set(dataEnvelope(fileSchema.array()).parse(JSON.parse(text)).data.map((f) => f.id))
        for (const v of hidden) for (const f of v.files) expect(ids.has(f.id), `${slug}: file ${f.id} of ${v.status} version`).toBe(false)
      }
      if (slug === 'sodium') expect(hidden.length).toBeGreaterThan(0)
    }
  })

  it('rejects an all that is not a boolean', async () => {
    const res = await server.get('/projects/sodium/files?all=maybe')
    expect(res.status).toBe(422)
    expect(errorSchema.parse(await json(res)).error.details?.[0]?.path).toBe('all')
  })
})
