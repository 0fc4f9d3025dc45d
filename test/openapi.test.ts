/**
 * The OpenAPI document: valid OpenAPI 3.1, covering every path of SPEC.md §4, and TRUE of the
 * running server: real answers of every endpoint (200, 302, 304, 404, 405, 422, 429) are validated
 * against the schema and headers the document declares for their path and status, and types
 * generated from it by openapi-typescript type-check real bodies.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020 } from 'ajv/dist/2020.js'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { json, startServer, type TestServer } from './harness.ts'

type Json = Record<string, any>

let server: TestServer
let doc: Json
let docText: string
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false })

beforeAll(async () => {
  server = await startServer(inject('distDir'))
  const res = await server.get('/openapi.json')
  expect(res.status).toBe(200)
  docText = await res.text()
  doc = JSON.parse(docText) as Json
  // Component schemas reference each other as #/components/schemas/X: register them under one root.
  ajv.addSchema({ $id: 'openapi.json', components: { schemas: doc.components.schemas } })
})
afterAll(async () => {
  expect(server.serverErrors()).toBe(0)
  await server.close()
})

/** Follows a local `$ref` of the document. */
function resolve(node: Json): Json {
  if (typeof node.$ref !== 'string') return node
  return resolve((node.$ref as string).slice(2).split('/').reduce<Json>((at, key) => at[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc))
}

/** The document path template of a request path (literal segments beat parameters). */
function findTemplate(apiPath: string): string | undefined {
  const segments = apiPath.split('?')[0]!.split('/')
  let best: { template: string; literals: number } | undefined
  for (const template of Object.keys(doc.paths)) {
    const parts = template.split('/')
    if (parts.length !== segments.length) continue
    if (!parts.every((p, i) => p.startsWith('{') || p === segments[i])) continue
    const literals = parts.filter((p) => !p.startsWith('{')).length
    if (!best || literals > best.literals) best = { template, literals }
  }
  return best?.template
}

/** A schema of the document with its local `$ref`s pointed at the copy registered in ajv. */
function rebase(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rebase)
  if (node === null || typeof node !== 'object') return node
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#') ? `openapi.json${v}` : rebase(v)]),
  )
}

/** Validates a value against a schema of the document; returns the error text, or '' when valid. */
function validate(schema: Json, value: unknown): string {
  const check = ajv.compile(rebase(schema) as Json)
  return check(value) ? '' : ajv.errorsText(check.errors)
}

/**
 * Checks a real answer against the document: the status is declared for the operation, every
 * required header is present and valid, and the body matches the declared schema.
 */
async function checkAnswer(apiPath: string, init?: RequestInit): Promise<Response> {
  const res = await server.get(apiPath, init)
  const template = findTemplate(apiPath)
  expect(template, `no documented path for ${apiPath}`).toBeDefined()
  const responses = doc.paths[template!].get.responses as Json
  expect(Object.keys(responses), `${apiPath} answered ${res.status}`).toContain(String(res.status))
  const declared = resolve(responses[res.status])
  for (const [name, header] of Object.entries<Json>(declared.headers ?? {})) {
    const h = resolve(header)
    const value = res.headers.get(name)
    if (h.required) expect(value, `${apiPath} ${res.status} header ${name}`).not.toBeNull()
    if (value !== null) expect(validate(h.schema, h.schema.type === 'integer' ? Number(value) : value), `${apiPath} header ${name}: ${value}`).toBe('')
  }
  const media = declared.content?.['application/json']
  const text = await res.clone().text()
  if (!media) {
    expect(text, `${apiPath} ${res.status} has no body`).toBe('')
    return res
  }
  expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  expect(validate(media.schema, JSON.parse(text)), `${apiPath} ${res.status}`).toBe('')
  return res
}

describe('the document', () => {
  it('is a valid OpenAPI 3.1 document of version 1.1.0 served with the same bytes with or without a query', async () => {
    const result = await new Validator().validate(structuredClone(doc))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('1.1.0')
    expect(doc.servers).toEqual([{ url: '/api/v1' }])
    const again = await server.get('/openapi.json?x=1')
    expect(await again.text()).toBe(docText)
  })

  it('describes every path of SPEC.md §4, each with a 200 (or 302) example that fits its schema', () => {
    const game = server.ctx.release.game
    expect(Object.keys(doc.paths).sort()).toEqual(
      [
        '/projects', '/search', '/projects/{idOrSlug}', '/projects/{idOrSlug}/dependencies', '/projects/{idOrSlug}/versions',
        '/projects/{idOrSlug}/versions/{version}', '/projects/{idOrSlug}/files', '/versions', '/versions/{id}', '/version-files',
        '/version-files/update', '/version-files/{hash}', '/version-files/{hash}/update', '/files/{id}/download', '/users',
        '/users/{username}', '/users/{username}/projects', '/categories', '/types', `/${game}/versions`, '/statistics', '/openapi.json',
      ].sort(),
    )
    for (const name of ['Author', 'ProjectSummary', 'ProjectDetail', 'Version', 'File', 'Dependency', 'Dependencies', 'VersionsByHash', 'UserProfile', 'Statistics', 'Category', 'ContentType', 'GameVersion', 'PageMeta', 'Error']) {
      expect(doc.components.schemas, name).toHaveProperty(name)
    }
    for (const [template, item] of Object.entries<Json>(doc.paths)) {
      const responses = item.get.responses as Json
      for (const status of ['404', '405', '422', '429']) {
        if (responses[status]) expect(resolve(responses[status]).content['application/json'].schema.$ref, `${template} ${status}`).toBe('#/components/schemas/Error')
      }
      expect(responses['405'], template).toBeDefined()
      expect(resolve(responses['429']).headers, template).toHaveProperty('Retry-After')
      if (template === '/files/{id}/download') {
        expect(responses['302'].headers).toHaveProperty('Location')
        continue
      }
      const ok = responses['200'].content['application/json']
      expect(ok.example, template).toBeDefined()
      expect(validate(ok.schema, ok.example), template).toBe('')
      expect(Object.keys(responses['200'].headers)).toEqual(expect.arrayContaining(['ETag', 'Cache-Control', 'X-Ratelimit-Limit']))
      for (const status of ['404', '405', '422', '429']) {
        if (responses[status]) expect(validate({ $ref: '#/components/schemas/Error' }, resolve(responses[status]).content['application/json'].example)).toBe('')
      }
      // Every path parameter of the template is declared, and list parameters use the comma form.
      const params = item.get.parameters.map(resolve) as Json[]
      for (const [, name] of template.matchAll(/\{(\w+)\}/g)) expect(params.some((p) => p.in === 'path' && p.name === name), `${template} ${name}`).toBe(true)
      for (const p of params.filter((p) => p.schema?.type === 'array')) expect([p.style, p.explode]).toEqual(['form', false])
      for (const p of params.filter((p) => p.example !== undefined)) expect(validate(p.schema, p.example), `${template} ${p.name} example`).toBe('')
      if (params.some((p) => p.name === 'platform')) expect(params.some((p) => p.name === 'loader' && /alias of `platform`/i.test(p.description))).toBe(true)
    }
  })
})

describe('real answers match the document', () => {
  it('of every endpoint on the sample catalog, successes and errors', async () => {
    const db = server.ctx.release.db
    const game = server.ctx.release.game
    const version = (await db.get<{ id: string; project_id: string; version_number: string }>(
      `SELECT v.id, v.project_id, v.version_number FROM versions v JOIN files f ON f.version_id = v.id WHERE f.sha1 IS NOT NULL ORDER BY v.id LIMIT 1`,
    ))!
    const project = (await db.get<{ slug: string }>(`SELECT slug FROM projects WHERE id = ?`, [version.project_id]))!
    const file = (await db.get<{ id: string; sha1: string; sha256: string }>(`SELECT id, sha1, sha256 FROM files WHERE version_id = ? AND sha1 IS NOT NULL`, [version.id]))!
    const user = (await db.get<{ id: string; username: string }>(`SELECT id, username FROM users ORDER BY id LIMIT 1`))!
    const p = project.slug
    const ok = [
      '/projects', '/projects?q=sodium&limit=3', `/projects?ids=${p},sodium`, '/search?type=mod&loader=fabric&sort=downloads', `/projects/${p}`,
      `/projects/${p.toUpperCase()}`, `/projects/${p}/dependencies`, '/projects/fabric-api/versions?limit=5&includeChangelog=false',
      `/projects/${p}/versions`, `/projects/${p}/versions/${encodeURIComponent(version.version_number)}`, `/projects/${p}/versions/${version.id}`,
      `/projects/${p}/files`, `/projects/${p}/files?all=true`, `/versions?ids=${version.id}`, `/versions?ids=${version.id}&includeChangelog=false`,
      `/versions/${version.id}`, `/version-files?hashes=${file.sha1},${file.sha256}`, `/version-files/update?hashes=${file.sha1}&algorithm=sha1`,
      `/version-files/${file.sha1}`, `/version-files/${file.sha256}?algorithm=sha256`, `/version-files/${file.sha256}/update?channel=stable,beta,alpha`,
      `/users?ids=${user.id},${user.username}`, `/users/${user.username}`, `/users/${user.id}/projects`, '/categories', '/categories?type=skin',
      '/types', `/${game}/versions`, `/${game}/versions?snapshots=true`, '/statistics', '/openapi.json',
    ]
    for (const apiPath of ok) expect((await checkAnswer(apiPath)).status, apiPath).toBe(200)
    expect((await checkAnswer(`/files/${file.id}/download`)).status).toBe(302)
    const errors: [string, number][] = [
      ['/projects/no-such-project', 404], [`/projects/${p}/versions/no-such-version`, 404], ['/versions/no-such-version', 404],
      [`/version-files/${'0'.repeat(40)}`, 404], [`/version-files/${'0'.repeat(64)}/update`, 404], ['/files/no-such-file/download', 404],
      ['/users/no-such-user-x', 404], ['/users/no-such-user-x/projects', 404], ['/projects?limit=101', 422], ['/search?sort=random', 422],
      [`/projects/${p}/versions?channel=nightly`, 422], [`/projects/${p}/files?all=maybe`, 422], ['/versions', 422],
      ['/version-files?hashes=xyz', 422], [`/version-files/update?hashes=${file.sha1}&algorithm=sha256`, 422],
      [`/version-files/${file.sha1}?algorithm=sha256`, 422], [`/version-files/${file.sha1}/update?channel=x`, 422], ['/users?ids=', 422],
      ['/categories?type=plugin', 422], [`/${game}/versions?snapshots=maybe`, 422],
    ]
    for (const [apiPath, status] of errors) expect((await checkAnswer(apiPath)).status, apiPath).toBe(status)
    expect((await checkAnswer('/projects', { method: 'POST' })).status).toBe(405)
    expect((await checkAnswer(`/users/${user.username}`, { method: 'DELETE' })).status).toBe(405)
  })

  it('rejects bodies that break the declared schema (the checks above can fail)', async () => {
    const schema = doc.paths['/projects/{idOrSlug}'].get.responses['200'].content['application/json'].schema as Json
    const body = await json(await server.get('/projects/sodium'))
    expect(validate(schema, body)).toBe('')
    expect(validate(schema, { data: { ...body.data, id: 1 } })).not.toBe('')
    expect(validate(schema, { data: { ...body.data, unexpected: true } })).not.toBe('')
    expect(validate(schema, { data: { ...body.data, currentVersion: { ...body.data.currentVersion, files: [{}] } } })).not.toBe('')
    expect(validate(schema, { ...body, meta: {} })).not.toBe('')
    const notFound = await json(await server.get('/projects/no-such-project'))
    expect(validate(schema, notFound)).not.toBe('')
  })

  it('of conditional requests (304) and of the rate limit (429)', async () => {
    const first = await server.get('/statistics?x=1')
    const notModified = await checkAnswer('/statistics?x=1', { headers: { 'If-None-Match': first.headers.get('etag')! } })
    expect(notModified.status).toBe(304)
    const limited = await startServer(inject('distDir'), { rateLimit: 1 })
    try {
      const saved = server
      server = limited
      try {
        // A query: a plain static read may be answered by nginx in front, which does not count it.
        await server.get('/types?x=0')
        expect((await checkAnswer('/types?x=1')).status).toBe(429)
      } finally {
        server = saved
      }
      expect(limited.serverErrors()).toBe(0)
    } finally {
      await limited.close()
    }
  })
})

describe('types generated by openapi-typescript', () => {
  it('type-check real bodies, and reject a wrong one', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-types-'))
    try {
      writeFileSync(path.join(dir, 'api.ts'), astToString(await openapiTS(docText)))
      const body = async (apiPath: string): Promise<string> => JSON.stringify(await json(await server.get(apiPath)))
      const version = (await json(await server.get('/projects/sodium'))).data.currentVersion
      const client = [
        `import type { components, paths } from './api.ts'`,
        `type Ok<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer B } } } } } ? B : never`,
        `export const detail: Ok<'/projects/{idOrSlug}'> = ${await body('/projects/sodium')}`,
        `export const search: Ok<'/projects'> = ${await body('/projects?limit=2')}`,
        `export const bulk: Ok<'/search'> = ${await body('/search?ids=sodium,lithium')}`,
        `export const profile: Ok<'/users/{username}'> = ${await body('/users/lumenwright')}`,
        `export const stats: Ok<'/statistics'> = ${await body('/statistics')}`,
        `export const error: components['schemas']['Error'] = ${await body('/projects/no-such-project')}`,
        `// @ts-expect-error a version id is a string`,
        `export const wrong: components['schemas']['Version'] = ${JSON.stringify({ ...version, id: 1 })}`,
      ].join('\n')
      const clientFile = path.join(dir, 'client.ts')
      writeFileSync(clientFile, client)
      const program = ts.createProgram([clientFile], {
        strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler, allowImportingTsExtensions: true, skipLibCheck: true, types: [],
      })
      const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      expect(problems).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
