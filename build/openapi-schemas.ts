/**
 * JSON Schemas of the OpenAPI components: every resource of schema/api.ts under its `.meta({ id })`
 * and every response body (envelope) built from them, with one example per body.
 */
import { z } from 'zod'
import { resourceExamples as ex } from './openapi-examples.ts'
import * as api from './schema/api.ts'

type Json = Record<string, unknown>

/** Response bodies by component name: each envelope is built from the resource schemas. */
export const bodies = {
  ProjectSearchResponse: {
    schema: z.union([api.pageEnvelope(api.projectSummarySchema), api.dataEnvelope(z.array(api.projectSummarySchema))]).meta({
      description: 'A search page with `meta`; with `ids`, the projects in the order asked and no `meta`.',
    }),
    example: { data: [ex.summary], meta: ex.meta },
  },
  ProjectListResponse: { schema: api.dataEnvelope(z.array(api.projectSummarySchema)), example: { data: [ex.summary] } },
  ProjectDetailResponse: { schema: api.dataEnvelope(api.projectDetailSchema), example: { data: ex.detail } },
  DependenciesResponse: { schema: api.dataEnvelope(api.dependenciesSchema), example: { data: { projects: [ex.summary], versions: [ex.version] } } },
  VersionPageResponse: { schema: api.pageEnvelope(api.versionSchema), example: { data: [ex.version], meta: { ...ex.meta, total: 1, totalPages: 1 } } },
  VersionListResponse: { schema: api.dataEnvelope(z.array(api.versionSchema)), example: { data: [ex.version] } },
  VersionResponse: { schema: api.dataEnvelope(api.versionSchema), example: { data: ex.version } },
  FileListResponse: { schema: api.dataEnvelope(z.array(api.fileSchema)), example: { data: [ex.file] } },
  VersionsByHashResponse: { schema: api.dataEnvelope(api.versionsByHashSchema), example: { data: { [ex.file.sha1!]: ex.version } } },
  UserProfileListResponse: { schema: api.dataEnvelope(z.array(api.userProfileSchema)), example: { data: [ex.profile] } },
  UserProfileResponse: { schema: api.dataEnvelope(api.userProfileSchema), example: { data: ex.profile } },
  CategoryListResponse: { schema: api.dataEnvelope(z.array(api.categorySchema)), example: { data: [ex.category] } },
  ContentTypeListResponse: { schema: api.dataEnvelope(z.array(api.contentTypeSchema)), example: { data: [ex.contentType] } },
  GameVersionListResponse: { schema: api.dataEnvelope(z.array(api.gameVersionSchema)), example: { data: [ex.gameVersion] } },
  StatisticsResponse: { schema: api.dataEnvelope(api.statisticsSchema), example: { data: ex.statistics } },
} satisfies Record<string, { schema: z.ZodType; example: unknown }>

/** Name of a response body component. */
export type BodyName = keyof typeof bodies

/** The resources of SPEC.md §2, each named by its `.meta({ id })`. */
const resourceSchemas: z.ZodType[] = [
  api.authorSchema, api.projectSummarySchema, api.projectDetailSchema, api.versionSchema, api.fileSchema, api.dependencySchema,
  api.dependenciesSchema, api.versionsByHashSchema, api.userProfileSchema, api.statisticsSchema, api.categorySchema,
  api.contentTypeSchema, api.gameVersionSchema, api.pageMetaSchema, api.errorSchema,
]

/** JSON Schemas of every resource and body, referencing each other through #/components/schemas. */
export function renderComponentSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>()
  for (const schema of resourceSchemas) {
    const id = z.globalRegistry.get(schema)?.id
    if (!id) throw new Error('a resource schema of schema/api.ts has no .meta({ id })')
    registry.add(schema, { id })
  }
  for (const [id, body] of Object.entries(bodies)) registry.add(body.schema, { id })
  const { schemas } = z.toJSONSchema(registry, { target: 'draft-2020-12', uri: (id) => `#/components/schemas/${id}` })
  // Every named schema must be a component: a `__shared` bucket would mean one was left out above.
  if ('__shared' in schemas) throw new Error(`schemas with an id missing from the OpenAPI components: ${Object.keys(schemas.__shared!).join(', ')}`)
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _s, $id: _i, ...schema }]) => [id, schema as Json]),
  )
}

