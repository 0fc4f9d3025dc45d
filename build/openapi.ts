/**
 * The OpenAPI 3.1 document of the API (SPEC.md §4, served as /openapi.json), generated from the
 * zod schemas that shape the responses (schema/api.ts) and validate the queries (schema/query.ts),
 * so the description cannot drift from what is served. Pre-rendered by the build (static/site.ts).
 */
import { errorExamples } from './openapi-examples.ts'
import { OPENAPI_DOCUMENT_VERSION, renderDownloadOperation, renderOperation, type OperationSpec } from './openapi-operation.ts'
import { renderComponentSchemas } from './openapi-schemas.ts'
import * as query from './schema/query.ts'

export { OPENAPI_DOCUMENT_VERSION } from './openapi-operation.ts'

type Json = Record<string, unknown>

/** Every GET endpoint of SPEC.md §4 but the download; `game` is the catalog's game segment. */
function listOperations(game: string): OperationSpec[] {
  const search = { tag: 'projects', body: 'ProjectSearchResponse', query: query.projectsQuerySchema, errors: [422] } as const
  const ids = {
    description: 'Project ids or slugs (at most 50) to read in bulk: the answer lists them in the order asked, without `meta`, and every other parameter is ignored.',
    example: ['sodium', 'lithium'],
  }
  return [
    { ...search, path: '/projects', summary: 'Search projects, or read projects in bulk with `ids`.', ids },
    { ...search, path: '/search', summary: 'Alias of GET /projects.', ids },
    { path: '/projects/{idOrSlug}', tag: 'projects', summary: 'Read a project.', body: 'ProjectDetailResponse', errors: [404] },
    { path: '/projects/{idOrSlug}/dependencies', tag: 'projects', summary: 'Projects and versions the published versions depend on (required, optional, embedded).', body: 'DependenciesResponse', errors: [404] },
    { path: '/projects/{idOrSlug}/versions', tag: 'versions', summary: 'List the versions of a project, newest first.', body: 'VersionPageResponse', query: query.versionsListQuerySchema, errors: [404, 422] },
    { path: '/projects/{idOrSlug}/versions/{version}', tag: 'versions', summary: 'Read a version of a project.', body: 'VersionResponse', errors: [404] },
    { path: '/projects/{idOrSlug}/files', tag: 'files', summary: 'Files of the current version (or of every published version).', body: 'FileListResponse', query: query.filesQuerySchema, errors: [404, 422] },
    { path: '/versions', tag: 'versions', summary: 'Read versions in bulk, in the order asked.', body: 'VersionListResponse', query: query.versionsBulkQuerySchema, ids: { description: 'Version ids (at most 100).', example: ['eeVny0lO', 'rXBXquyQ'] }, errors: [422] },
    { path: '/versions/{id}', tag: 'versions', summary: 'Read a version by id.', body: 'VersionResponse', errors: [404] },
    { path: '/version-files', tag: 'files', summary: 'Identify installed files by hash.', body: 'VersionsByHashResponse', query: query.versionFilesQuerySchema, errors: [422] },
    { path: '/version-files/update', tag: 'files', summary: 'Newest compatible version of the project of each hash.', body: 'VersionsByHashResponse', query: query.versionFilesUpdateQuerySchema, errors: [422] },
    { path: '/version-files/{hash}', tag: 'files', summary: 'The version containing a file.', body: 'VersionResponse', query: query.versionFileQuerySchema, errors: [404, 422] },
    { path: '/version-files/{hash}/update', tag: 'files', summary: 'Newest published version of the same project matching the filters.', body: 'VersionResponse', query: query.versionFileUpdateQuerySchema, errors: [404, 422] },
    { path: '/users', tag: 'users', summary: 'Read public profiles in bulk, in the order asked.', body: 'UserProfileListResponse', query: query.usersQuerySchema, ids: { description: 'User ids or usernames (case-insensitive), at most 50.', example: ['lumenwright', 'pixelmoth'] }, errors: [422] },
    { path: '/users/{username}', tag: 'users', summary: 'Read a public profile.', body: 'UserProfileResponse', errors: [404] },
    { path: '/users/{username}/projects', tag: 'users', summary: 'All public projects of a user (owner or member), downloads descending; not paginated.', body: 'ProjectListResponse', errors: [404] },
    { path: '/categories', tag: 'reference', summary: 'Categories, optionally of one project type.', body: 'CategoryListResponse', query: query.categoriesQuerySchema, errors: [422] },
    { path: '/types', tag: 'reference', summary: 'Enabled content types and their file rules.', body: 'ContentTypeListResponse' },
    { path: `/${game}/versions`, tag: 'reference', summary: `Versions of ${game}, newest first.`, body: 'GameVersionListResponse', query: query.gameVersionsQuerySchema, errors: [422] },
    { path: '/statistics', tag: 'reference', summary: 'Totals over published items.', body: 'StatisticsResponse' },
    { path: '/openapi.json', tag: 'reference', summary: 'This description of the API.' },
  ]
}

const headers: Record<string, Json> = {
  ETag: { required: true, description: 'Strong, content-based entity tag; send it back as If-None-Match.', schema: { type: 'string', example: '"1b4e3c2a-1124"' } },
  'Cache-Control': { required: true, description: 'Short max-age with stale-while-revalidate on JSON; `no-store` on errors and redirects.', schema: { type: 'string', example: 'public, max-age=60, stale-while-revalidate=600' } },
  'X-Ratelimit-Limit': { required: true, description: 'Requests allowed per minute per client IP.', schema: { type: 'integer', example: 120 } },
  'X-Ratelimit-Remaining': { description: 'Requests left in the current window (answers of the dynamic server).', schema: { type: 'integer', example: 117 } },
  'X-Ratelimit-Reset': { description: 'When the window resets, in epoch seconds (answers of the dynamic server).', schema: { type: 'integer', example: 1767225600 } },
  'Retry-After': { required: true, description: 'Seconds to wait before retrying.', schema: { type: 'integer', example: 12 } },
  'X-Request-Id': { required: true, description: 'Id of the request; equals `error.requestId`.', schema: { type: 'string' } },
}

/** An error response with its example body. */
function renderErrorResponse(status: keyof typeof errorExamples, description: string, extra: Json = {}): Json {
  return {
    description,
    headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, 'X-Ratelimit-Limit': { $ref: '#/components/headers/X-Ratelimit-Limit' }, ...extra },
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: errorExamples[status] } },
  }
}

const responses: Record<string, Json> = {
  NotModified: {
    description: 'Not modified: If-None-Match matched the current ETag. Empty body.',
    headers: { ETag: { $ref: '#/components/headers/ETag' }, 'Cache-Control': { $ref: '#/components/headers/Cache-Control' } },
  },
  NotFound: renderErrorResponse(404, 'The project, version, file, hash, user or path does not exist or is not public (`not_found`).'),
  MethodNotAllowed: renderErrorResponse(405, 'A method other than GET, HEAD or OPTIONS: the API is read-only (`method_not_allowed`).', {
    Allow: { required: true, description: 'The allowed methods.', schema: { type: 'string', const: 'GET, HEAD, OPTIONS' } },
  }),
  ValidationFailed: renderErrorResponse(422, 'A parameter fails validation (`validation_failed`); `details` names each problem. A bulk maximum exceeded is one.'),
  RateLimited: renderErrorResponse(429, 'More than the rate limit of requests per minute from this IP (`rate_limited`).', {
    'Retry-After': { $ref: '#/components/headers/Retry-After' },
    'X-Ratelimit-Remaining': { ...headers['X-Ratelimit-Remaining'], required: true },
    'X-Ratelimit-Reset': { ...headers['X-Ratelimit-Reset'], required: true },
  }),
}

/** Creates the OpenAPI 3.1 document of the API for a catalog serving `game`. */
export function createOpenApiDocument(game: string): Json {
  const paths: Record<string, Json> = {}
  for (const spec of listOperations(game)) paths[spec.path] = { get: renderOperation(spec) }
  paths['/files/{id}/download'] = { get: renderDownloadOperation() }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Content catalog API',
      version: OPENAPI_DOCUMENT_VERSION,
      description:
        'Public, read-only, anonymous JSON API over a catalog of user-published content (mods, maps, skins). Only GET (and HEAD) is accepted; ' +
        'no account or key exists. Success bodies are `{ data, meta? }`, failures `{ error }`. Clients are asked to send a User-Agent naming the application and a contact.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/api/v1' }],
    tags: ['projects', 'versions', 'files', 'users', 'reference'].map((name) => ({ name })),
    paths,
    components: {
      schemas: renderComponentSchemas(),
      parameters: {
        'If-None-Match': { name: 'If-None-Match', in: 'header', required: false, description: 'An ETag from an earlier answer; a match gets an empty 304.', schema: { type: 'string' } },
      },
      headers,
      responses,
    },
  }
}
