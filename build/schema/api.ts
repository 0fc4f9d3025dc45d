/**
 * API resources of SPEC.md §2: what every response body contains. The renderers build these
 * shapes, tests parse responses with them, and the OpenAPI document is generated from them.
 */
import { z } from 'zod'
import { channels, dependencyTypes, gameVersionTypes, linkKinds, projectTypes, userLinkKeys } from './source.ts'

const dateTime = z.iso.datetime().meta({ example: '2024-04-29T10:00:00.000Z' })

export const authorSchema = z
  .object({
    id: z.string(),
    username: z.string(),
    name: z.string(),
    avatarUrl: z.string().nullable(),
    verified: z.boolean(),
  })
  .meta({ id: 'Author', description: 'Embedded user summary.' })

export const projectSummarySchema = z
  .object({
    id: z.string(),
    type: z.enum(projectTypes),
    slug: z.string(),
    name: z.string(),
    summary: z.string(),
    iconUrl: z.string().nullable(),
    url: z.string().meta({ description: 'Site-relative page URL.' }),
    status: z.string().meta({ description: 'Always `published`: nothing else is visible.' }),
    author: authorSchema,
    categories: z.array(z.string()),
    tags: z.array(z.string()),
    gameVersions: z.array(z.string()),
    platforms: z.array(z.string()).meta({ description: 'Loaders (mods), editions (maps) or models (skins).' }),
    license: z.string().nullable(),
    downloads: z.int().nonnegative(),
    favorites: z.int().nonnegative(),
    followers: z.int().nonnegative(),
    createdAt: dateTime,
    updatedAt: dateTime,
    publishedAt: dateTime.nullable(),
  })
  .meta({ id: 'ProjectSummary' })

export const fileSchema = z
  .object({
    id: z.string(),
    filename: z.string(),
    size: z.int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    sha1: z.string().regex(/^[0-9a-f]{40}$/).nullable(),
    contentType: z.string(),
    primary: z.boolean(),
    downloadUrl: z.string().meta({ description: 'The counting download endpoint of this file.' }),
  })
  .meta({ id: 'File' })

export const dependencySchema = z
  .object({
    type: z.enum(dependencyTypes),
    project: z
      .object({ id: z.string(), slug: z.string(), name: z.string(), type: z.enum(projectTypes) })
      .nullable(),
    versionId: z.string().nullable(),
    external: z.object({ source: z.string(), id: z.string() }).nullable(),
  })
  .meta({ id: 'Dependency' })

export const versionSchema = z
  .object({
    id: z.string(),
    projectId: z.string(),
    versionNumber: z.string(),
    name: z.string(),
    channel: z.enum(channels),
    status: z.string().meta({ description: 'Always `published`: nothing else is visible.' }),
    gameVersions: z.array(z.string()),
    platforms: z.array(z.string()),
    downloads: z.int().nonnegative(),
    changelog: z.string().optional().meta({ description: 'Left out when includeChangelog=false.' }),
    createdAt: dateTime,
    publishedAt: dateTime.nullable(),
    files: z.array(fileSchema),
    dependencies: z.array(dependencySchema),
  })
  .meta({ id: 'Version' })

export const projectDetailSchema = projectSummarySchema
  .extend({
    description: z.string().meta({ description: 'Markdown.' }),
    bannerUrl: z.string().nullable(),
    licenseUrl: z.string().nullable(),
    links: z.array(z.object({ kind: z.enum(linkKinds), url: z.string(), label: z.string().nullable() })),
    screenshots: z.array(z.object({ id: z.string(), url: z.string(), caption: z.string() })),
    members: z.array(z.object({ role: z.string(), user: authorSchema })),
    currentVersion: versionSchema.nullable(),
  })
  .meta({ id: 'ProjectDetail' })

export const dependenciesSchema = z
  .object({ projects: z.array(projectSummarySchema), versions: z.array(versionSchema) })
  .meta({ id: 'Dependencies' })

export const versionsByHashSchema = z
  .record(z.string(), versionSchema)
  .meta({ id: 'VersionsByHash', description: 'Keyed by the requested hash; unknown hashes are left out.' })

export const userProfileSchema = z
  .object({
    id: z.string(),
    username: z.string(),
    name: z.string(),
    bio: z.string(),
    avatarUrl: z.string().nullable(),
    links: z.partialRecord(z.enum(userLinkKeys), z.string()),
    role: z.string(),
    developer: z.object({ verified: z.boolean() }).nullable(),
    location: z.string().nullable(),
    joinedAt: dateTime,
    stats: z.object({
      projects: z.int().nonnegative(),
      downloads: z.int().nonnegative(),
      followers: z.int().nonnegative(),
      favorites: z.int().nonnegative(),
    }),
  })
  .meta({ id: 'UserProfile' })

export const statisticsSchema = z
  .object({
    projects: z.int().nonnegative(),
    versions: z.int().nonnegative(),
    files: z.int().nonnegative(),
    authors: z.int().nonnegative(),
    downloads: z.int().nonnegative(),
  })
  .meta({ id: 'Statistics', description: 'Totals over published items.' })

export const categorySchema = z
  .object({ slug: z.string(), name: z.string(), projectType: z.enum(projectTypes), group: z.string(), icon: z.string().nullable() })
  .meta({ id: 'Category' })

export const contentTypeSchema = z
  .object({
    slug: z.enum(projectTypes),
    name: z.string(),
    fileExtensions: z.array(z.string()),
    maxFileSize: z.int().positive(),
    platformsLabel: z.string(),
    platforms: z.array(z.string()),
    enabled: z.boolean(),
  })
  .meta({ id: 'ContentType' })

export const gameVersionSchema = z
  .object({ version: z.string(), type: z.enum(gameVersionTypes), releasedAt: dateTime, major: z.boolean() })
  .meta({ id: 'GameVersion' })

export const pageMetaSchema = z
  .object({
    page: z.int().positive(),
    limit: z.int().positive(),
    total: z.int().nonnegative(),
    totalPages: z.int().nonnegative(),
  })
  .meta({ id: 'PageMeta' })

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ example: 'not_found' }),
      message: z.string(),
      details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'Error' })

/** `{ data }` envelope of a success body. */
export function dataEnvelope<T extends z.ZodType>(data: T): z.ZodObject<{ data: T }> {
  return z.object({ data })
}

/** `{ data, meta }` envelope of a paginated success body. */
export function pageEnvelope<T extends z.ZodType>(
  item: T,
): z.ZodObject<{ data: z.ZodArray<T>; meta: typeof pageMetaSchema }> {
  return z.object({ data: z.array(item), meta: pageMetaSchema })
}

export type Author = z.infer<typeof authorSchema>
export type ProjectSummary = z.infer<typeof projectSummarySchema>
export type ProjectDetail = z.infer<typeof projectDetailSchema>
export type ApiFile = z.infer<typeof fileSchema>
export type Dependency = z.infer<typeof dependencySchema>
export type Version = z.infer<typeof versionSchema>
export type UserProfile = z.infer<typeof userProfileSchema>
export type Statistics = z.infer<typeof statisticsSchema>
export type PageMeta = z.infer<typeof pageMetaSchema>
