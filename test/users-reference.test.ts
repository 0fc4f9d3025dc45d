/**
 * Users (bulk read, profiles, project lists) and reference data (categories, types, game versions,
 * statistics), checked against the catalog database and against each other through the public API.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { z } from 'zod'
import {
  categorySchema,
  contentTypeSchema,
  dataEnvelope,
  errorSchema,
  fileSchema,
  gameVersionSchema,
  pageEnvelope,
  projectDetailSchema,
  projectSummarySchema,
  statisticsSchema,
  userProfileSchema,
  versionSchema,
} from '../build/schema/api.ts'
import { json, startServer, type TestServer } from './harness.ts'

let server: TestServer
let users: { id: string; username: string }[]

const profilesBody = dataEnvelope(z.array(userProfileSchema)).strict()
const projectListBody = dataEnvelope(z.array(projectSummarySchema)).strict()

beforeAll(async () => {
  server = await startServer(inject('distDir'))
  users = await server.ctx.release.db.all<{ id: string; username: string }>(`SELECT id, username FROM users ORDER BY id`)
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

/** Fetches a path and checks it is a 422 naming `param` in its details. */
async function expect422(path: string, param: string): Promise<void> {
  const res = await server.get(path)
  expect(res.status, path).toBe(422)
  const body = errorSchema.parse(await json(res))
  expect(body.error.code).toBe('validation_failed')
  expect(body.error.details?.map((d) => d.path.split(/[.[]/)[0])).toContain(param)
}

/** Fetches a path and checks it is the 404 envelope. */
async function expect404(path: string): Promise<void> {
  const res = await server.get(path)
  expect(res.status, path).toBe(404)
  const body = errorSchema.parse(await json(res))
  expect(body.error.code).toBe('not_found')
  expect(body.error.requestId).toBe(res.headers.get('x-request-id'))
}

/** Bytes and ETag of a response that must be a 200. */
async function fetchOk(path: string): Promise<{ text: string; etag: string | null }> {
  const res = await server.get(path)
  expect(res.status, path).toBe(200)
  return { text: await res.text(), etag: res.headers.get('etag') }
}

describe('GET /users?ids=', () => {
  it('lists profiles in the order asked, ids or usernames in any case, unknown left out, duplicates once, no meta', async () => {
    expect(users.length).toBeGreaterThanOrEqual(3)
    const [a, b, c] = users as [(typeof users)[0], (typeof users)[0], (typeof users)[0]]
    const asked = [c.username.toUpperCase(), 'no-such-user-x', a.id, c.id, b.username, a.username]
    const res = await server.get(`/users?ids=${encodeURIComponent(asked.join(','))}`)
    expect(res.status).toBe(200)
    const body = profilesBody.parse(await json(res))
    expect(body.data.map((u) => u.id)).toEqual([c.id, a.id, b.id])
    const jsonForm = await server.get(`/users?ids=${encodeURIComponent(JSON.stringify(asked))}`)
    expect(profilesBody.parse(await json(jsonForm))).toEqual(body)
  })

  it('answers each profile with the bytes of the static profile', async () => {
    const u = users[0]!
    const bulk = profilesBody.parse(await json(await server.get(`/users?ids=${u.id}`)))
    const single = dataEnvelope(userProfileSchema).parse(JSON.parse((await fetchOk(`/users/${u.username}`)).text))
    expect(bulk.data).toEqual([single.data])
  })

  it('accepts 50 ids and rejects 51, a missing or an empty list with a 422 naming ids', async () => {
    const fifty = Array.from({ length: 50 }, (_, i) => users[i % users.length]!.id + (i >= users.length ? `-${i}` : ''))
    const ok = await server.get(`/users?ids=${fifty.join(',')}`)
    expect(ok.status).toBe(200)
    expect(profilesBody.parse(await json(ok)).data).toHaveLength(Math.min(50, users.length))
    await expect422(`/users?ids=${[...fifty, 'one-more'].join(',')}`, 'ids')
    await expect422('/users', 'ids')
    await expect422('/users?ids=', 'ids')
    await expect422('/users?ids=[1,2]', 'ids')
  })
})

describe('GET /users/{username} and /users/{username}/projects', () => {
  it('matches usernames case-insensitively and ids too, with the bytes and ETag of the canonical file', async () => {
    for (const u of users.slice(0, 5)) {
      const canonical = await fetchOk(`/users/${u.username}`)
      for (const other of [`/users/${u.username.toUpperCase()}`, `/users/${u.id}`, `/users/${u.username}?x=1`]) {
        expect(await fetchOk(other), other).toEqual(canonical)
      }
      const projects = await fetchOk(`/users/${u.username}/projects`)
      expect(await fetchOk(`/users/${u.username.toUpperCase()}/projects?x=1`)).toEqual(projects)
    }
  })

  it('lists exactly the public projects the user owns or is a member of, downloads desc then id, and stats.projects counts them', async () => {
    const db = server.ctx.release.db
    for (const u of users) {
      const list = projectListBody.parse(JSON.parse((await fetchOk(`/users/${u.username}/projects`)).text)).data
      const expected = await db.all<{ id: string }>(
        `SELECT DISTINCT p.id, p.downloads FROM project_members m JOIN projects p ON p.id = m.project_id WHERE m.user_id = ? ORDER BY p.downloads DESC, p.id`,
        [u.id],
      )
      expect(list.map((p) => p.id), u.username).toEqual(expected.map((r) => r.id))
      for (const [i, p] of list.entries()) {
        if (i > 0) expect(list[i - 1]!.downloads).toBeGreaterThanOrEqual(p.downloads)
        expect(p.status).toBe('published')
      }
      const profile = dataEnvelope(userProfileSchema).parse(JSON.parse((await fetchOk(`/users/${u.username}`)).text)).data
      expect(profile.stats.projects, u.username).toBe(list.length)
    }
  })

  it('lists a project under a user exactly when the project detail names the user as a member', async () => {
    const owner = users.find((u) => u.username === 'lumenwright') ?? users[0]!
    const list = projectListBody.parse(JSON.parse((await fetchOk(`/users/${owner.username}/projects`)).text)).data
    expect(list.length).toBeGreaterThan(0)
    for (const p of list) {
      const detail = dataEnvelope(projectDetailSchema).parse(JSON.parse((await fetchOk(`/projects/${p.slug}`)).text)).data
      expect(detail.members.map((m) => m.user.id)).toContain(owner.id)
    }
  })

  it('answers 404 for an unknown user', async () => {
    await expect404('/users/no-such-user-x')
    await expect404('/users/no-such-user-x/projects')
    await expect404('/users/NO-SUCH-USER-X?x=1')
  })
})

describe('reference data', () => {
  it('lists categories, and with type=map only map categories, in the order of the full list', async () => {
    const all = dataEnvelope(z.array(categorySchema)).parse(JSON.parse((await fetchOk('/categories')).text)).data
    expect(await fetchOk('/categories?x=1')).toEqual(await fetchOk('/categories'))
    for (const type of ['mod', 'map', 'skin'] as const) {
      const some = dataEnvelope(z.array(categorySchema)).parse(JSON.parse((await fetchOk(`/categories?type=${type}`)).text)).data
      expect(some.length, type).toBeGreaterThan(0)
      expect(some.every((c) => c.projectType === type)).toBe(true)
      expect(some).toEqual(all.filter((c) => c.projectType === type))
    }
    await expect422('/categories?type=plugin', 'type')
    await expect422('/categories?type=map&type=mod', 'type')
  })

  it('lists content types; a query string changes nothing', async () => {
    const types = dataEnvelope(z.array(contentTypeSchema)).parse(JSON.parse((await fetchOk('/types')).text)).data
    expect(types.map((t) => t.slug).sort()).toEqual(['map', 'mod', 'skin'])
    expect(types.every((t) => t.enabled)).toBe(true)
    expect(await fetchOk('/types?x=1')).toEqual(await fetchOk('/types'))
  })

  it('lists game versions: releases by default, every version newest first with snapshots=true', async () => {
    const game = server.ctx.release.game
    const parse = async (p: string): Promise<z.infer<typeof gameVersionSchema>[]> =>
      dataEnvelope(z.array(gameVersionSchema)).parse(JSON.parse((await fetchOk(p)).text)).data
    const releases = await parse(`/${game}/versions`)
    const every = await parse(`/${game}/versions?snapshots=true`)
    expect(releases.length).toBeGreaterThan(0)
    expect(releases.every((v) => v.type === 'release')).toBe(true)
    expect(every.length).toBeGreaterThan(releases.length)
    expect(every.filter((v) => v.type === 'release')).toEqual(releases)
    for (const [i, v] of every.entries()) if (i > 0) expect(every[i - 1]!.releasedAt >= v.releasedAt).toBe(true)
    const total = await server.ctx.release.db.get<{ n: number }>(`SELECT count(*) AS n FROM reference WHERE kind = 'game-version'`)
    expect(every).toHaveLength(total!.n)
    expect(await fetchOk(`/${game}/versions?snapshots=false`)).toEqual(await fetchOk(`/${game}/versions`))
    expect(await fetchOk(`/${game}/versions?snapshots=0&x=1`)).toEqual(await fetchOk(`/${game}/versions`))
    await expect422(`/${game}/versions?snapshots=maybe`, 'snapshots')
  })

  it('answers 404 for another game, and the game route shadows no other route', async () => {
    await expect404('/notagame/versions')
    await expect404('/notagame/versions?snapshots=true')
    await expect404('/projects/versions')
    const versions = await server.get('/projects/sodium/versions?limit=1')
    expect(versions.status).toBe(200)
    pageEnvelope(versionSchema).parse(await json(versions))
  })
})

describe('GET /statistics', () => {
  it('totals what the other endpoints list', async () => {
    const stats = dataEnvelope(statisticsSchema).strict().parse(JSON.parse((await fetchOk('/statistics')).text)).data
    expect(await fetchOk('/statistics?x=1')).toEqual(await fetchOk('/statistics'))
    const first = pageEnvelope(projectSummarySchema).parse(await json(await server.get('/projects?limit=100')))
    expect(stats.projects).toBe(first.meta.total)
    const projects = [...first.data]
    for (let page = 2; page <= first.meta.totalPages; page++) {
      projects.push(...pageEnvelope(projectSummarySchema).parse(await json(await server.get(`/projects?limit=100&page=${page}`))).data)
    }
    expect(projects).toHaveLength(stats.projects)
    expect(stats.downloads).toBe(projects.reduce((sum, p) => sum + p.downloads, 0))
    let versions = 0
    let files = 0
    const authors = new Set<string>()
    for (const p of projects) {
      versions += pageEnvelope(versionSchema).parse(await json(await server.get(`/projects/${p.slug}/versions?limit=1`))).meta.total
      files += dataEnvelope(z.array(fileSchema)).parse(await json(await server.get(`/projects/${p.slug}/files?all=true`))).data.length
      const detail = dataEnvelope(projectDetailSchema).parse(JSON.parse((await fetchOk(`/projects/${p.slug}`)).text)).data
      for (const m of detail.members) authors.add(m.user.id)
    }
    expect(stats.versions).toBe(versions)
    expect(stats.files).toBe(files)
    expect(stats.authors).toBe(authors.size)
  })
})
