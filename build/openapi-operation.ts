/**
 * Operation objects of the OpenAPI document: path and query parameters (from the query schemas'
 * input side, i.e. the raw strings), the 200 body with its example, and the error responses.
 */
import { z } from 'zod'
import { resourceExamples as ex } from './openapi-examples.ts'
import { bodies, type BodyName } from './openapi-schemas.ts'
import * as query from './schema/query.ts'

type Json = Record<string, unknown>
type ErrorStatus = 404 | 422

/** The document's own version (SPEC.md §9). */
export const OPENAPI_DOCUMENT_VERSION = '1.1.0'

/** What each query parameter means, where the schema alone does not say it. */
const paramDocs: Record<string, string> = {
  q: 'Full-text search over name, slug, summary, description, tags and author.',
  type: 'Project type.',
  category: 'Category slugs; matches any.',
  gameVersion: 'Game versions; matches any.',
  platform: 'Platforms (loaders, editions or models); matches any. `loader` is an alias.',
  tag: 'Tags; matches any.',
  author: 'Username of a member of the project.',
  sort: 'Order of a search.',
  page: 'Page number, from 1.',
  limit: 'Page size, 1 to 100.',
  channel: 'Release channels; matches any.',
  includeChangelog: 'false leaves `changelog` out of each version.',
  all: 'true lists the files of every published version instead of the current one.',
  algorithm: 'Hash algorithm; inferred from each hash length when absent, and must match it when given.',
  snapshots: 'true lists every game version (snapshots, betas, alphas); false only releases.',
}

/** Realistic values of the list parameters (the schemas' own examples are placeholders). */
const paramExamples: Record<string, unknown> = {
  hashes: [ex.file.sha1, ex.file.sha256],
  category: ['optimization'],
  gameVersion: ['1.20.4', '1.21.1'],
  platform: ['fabric'],
  tag: ['performance'],
  channel: ['stable', 'beta'],
}

/** Meaning and example of `ids`, which differ per endpoint. */
export interface IdsDoc {
  description: string
  example: string[]
}

/** Query parameters of an endpoint, from its schema's input side (the raw strings of the query). */
function renderQueryParameters(schema: z.ZodObject, ids?: IdsDoc): Json[] {
  const json = renderInputSchema(schema) as { properties?: Record<string, Json>; required?: string[] }
  const params: Json[] = []
  for (const [name, { example: _placeholder, ...property }] of Object.entries(json.properties ?? {})) {
    const isList = query.listParamNames.has(name)
    const docs = [name === 'ids' ? ids?.description : paramDocs[name], property.description].filter(Boolean)
    const param: Json = { name, in: 'query', required: json.required?.includes(name) ?? false, description: docs.join(' '), schema: property }
    // form/explode=false is OpenAPI's name for the comma form; the schema's description adds the JSON array form.
    if (isList) Object.assign(param, { style: 'form', explode: false })
    const example = name === 'ids' ? ids?.example : paramExamples[name]
    if (example !== undefined) param.example = example
    params.push(param)
    for (const [alias, target] of Object.entries(query.paramAliases)) {
      if (target === name) params.push({ ...param, name: alias, required: false, description: `Alias of \`${name}\`. ${param.description as string}` })
    }
  }
  return params
}

/** JSON Schema of what a client sends for a parameter (the input side of its zod schema). */
function renderInputSchema(schema: z.ZodType): Json {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' })
  return json
}

const pathParamDocs: Record<string, [string, Json]> = {
  idOrSlug: ['Project id, or slug (case-insensitive).', { type: 'string', example: 'lithium' }],
  version: ['Version id, or version number of the project.', { type: 'string', example: 'mc1.20.4-0.12.1' }],
  id: ['Version id.', { type: 'string', example: ex.version.id }],
  hash: ['SHA-1 (40 hex) or SHA-256 (64 hex) of a published file, any case.', { ...renderInputSchema(query.hashParam), example: ex.file.sha1 }],
  username: ['Username (case-insensitive) or user id.', { type: 'string', example: ex.profile.username }],
}

/** One GET operation of the table below. */
export interface OperationSpec {
  path: string
  tag: string
  summary: string
  body?: BodyName
  query?: z.ZodObject
  ids?: IdsDoc
  errors?: readonly ErrorStatus[]
}

const successHeaders = {
  ETag: { $ref: '#/components/headers/ETag' },
  'Cache-Control': { $ref: '#/components/headers/Cache-Control' },
  'X-Ratelimit-Limit': { $ref: '#/components/headers/X-Ratelimit-Limit' },
  'X-Ratelimit-Remaining': { $ref: '#/components/headers/X-Ratelimit-Remaining' },
  'X-Ratelimit-Reset': { $ref: '#/components/headers/X-Ratelimit-Reset' },
}

const errorResponseNames: Record<ErrorStatus | 405 | 429, string> = { 404: 'NotFound', 405: 'MethodNotAllowed', 422: 'ValidationFailed', 429: 'RateLimited' }

/** Body of GET /openapi.json: the document itself. */
const documentMedia = {
  schema: { type: 'object', required: ['openapi', 'info', 'paths'] },
  example: { openapi: '3.1.0', info: { title: 'Content catalog API', version: OPENAPI_DOCUMENT_VERSION }, paths: {} },
}

/** The operation object of one endpoint. */
export function renderOperation(spec: OperationSpec): Json {
  const pathParams = [...spec.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => {
    const [description, schema] = pathParamDocs[name!]!
    return { name, in: 'path', required: true, description, schema }
  })
  const parameters = [...pathParams, ...(spec.query ? renderQueryParameters(spec.query, spec.ids) : []), { $ref: '#/components/parameters/If-None-Match' }]
  const media = spec.body ? { schema: { $ref: `#/components/schemas/${spec.body}` }, example: bodies[spec.body].example } : documentMedia
  const ok = { description: spec.body ? 'OK' : 'This OpenAPI 3.1 document itself (not wrapped in `data`).', headers: successHeaders, content: { 'application/json': media } }
  const responses: Json = { 200: ok, 304: { $ref: '#/components/responses/NotModified' } }
  for (const status of [...(spec.errors ?? []), 405, 429] as const) responses[status] = { $ref: `#/components/responses/${errorResponseNames[status]}` }
  const operationId = `get${spec.path.replace(/\{(\w)/g, (_, c: string) => `By-${c}`).split(/[^A-Za-z0-9]+/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('')}`
  return { tags: [spec.tag], summary: spec.summary, operationId, parameters, responses }
}

/** The download redirect (no body, no ETag). */
export function renderDownloadOperation(): Json {
  return {
    tags: ['files'],
    summary: 'Download a file: a redirect to the immutable, content-addressed file object; counted once per visitor and day.',
    operationId: 'getFilesByIdDownload',
    parameters: [{ name: 'id', in: 'path', required: true, description: 'File id.', schema: { type: 'string', example: ex.file.id } }],
    responses: {
      302: {
        description: 'Found: the file object.',
        headers: {
          Location: { required: true, description: 'URL of the file object.', schema: { type: 'string', format: 'uri-reference' } },
          'Cache-Control': { required: true, description: 'Always `no-store`.', schema: { type: 'string', const: 'no-store' } },
          'X-Ratelimit-Limit': { $ref: '#/components/headers/X-Ratelimit-Limit' },
        },
      },
      404: { $ref: '#/components/responses/NotFound' },
      405: { $ref: '#/components/responses/MethodNotAllowed' },
      429: { $ref: '#/components/responses/RateLimited' },
    },
  }
}
