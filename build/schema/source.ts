/**
 * Source records of the catalog: the files under `data/`, one record per file.
 * These schemas are the single definition of the source format (docs: data/README.md).
 */
import { z } from 'zod'

/** Opaque record id: base62, 4–32 characters (Modrinth-style `AANobbMI`). */
export const idSchema = z.string().regex(/^[A-Za-z0-9]{4,32}$/, 'must be 4–32 letters or digits')
/** Lowercase URL-safe name used for projects and categories. */
export const slugSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{1,63}$/, 'must be 2–64 lowercase letters, digits, "-" or "_", starting with a letter or digit')
/** Lowercase login name; matched case-insensitively by the API. */
export const usernameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{1,38}$/, 'must be 2–39 lowercase letters, digits, "-" or "_"')
/** ISO 8601 date-time with offset (normalised to UTC by the build). */
export const dateTimeSchema = z.iso.datetime({ offset: true })
export const urlSchema = z.url({ protocol: /^https?$/ })
export const sha256Schema = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters')
export const sha1Schema = z.string().regex(/^[0-9a-f]{40}$/, 'must be 40 lowercase hex characters')

export const projectTypes = ['mod', 'map', 'skin'] as const
export const projectTypeSchema = z.enum(projectTypes)
export const projectStatuses = ['published', 'draft', 'private', 'archived', 'withheld'] as const
export const versionStatuses = ['published', 'draft', 'withheld'] as const
export const channels = ['stable', 'beta', 'alpha'] as const
export const channelSchema = z.enum(channels)
export const dependencyTypes = ['required', 'optional', 'incompatible', 'embedded'] as const
export const linkKinds = ['source', 'issues', 'wiki', 'discord', 'donation', 'homepage'] as const
export const userLinkKeys = ['website', 'github', 'discord', 'twitter', 'youtube'] as const
export const userRoles = ['user', 'moderator', 'admin'] as const
export const gameVersionTypes = ['release', 'snapshot', 'beta', 'alpha'] as const

/** `data/catalog.json`: settings of the whole catalog. */
export const sourceCatalogSchema = z.strictObject({
  name: z.string().min(1),
  /** The game served; it is the literal path segment of `/{game}/versions`. */
  game: slugSchema.default('minecraft'),
})

/** `data/reference/categories/*.json` */
export const sourceCategorySchema = z.strictObject({
  slug: slugSchema,
  name: z.string().min(1).max(64),
  projectType: projectTypeSchema,
  group: z.enum(['categories', 'features', 'resolutions', 'performance']).default('categories'),
  icon: z.string().max(64).nullable().default(null),
})

/** `data/reference/types/*.json`: a content type and its file rules. */
export const sourceTypeSchema = z.strictObject({
  slug: projectTypeSchema,
  name: z.string().min(1),
  fileExtensions: z.array(z.string().regex(/^\.[a-z0-9.]+$/)).min(1),
  maxFileSize: z.int().positive(),
  platformsLabel: z.string().min(1),
  /** Allowed `platforms` values for projects and versions of this type. */
  platforms: z.array(slugSchema).min(1),
  enabled: z.boolean().default(true),
})

/** `data/reference/game-versions/*.json` */
export const sourceGameVersionSchema = z.strictObject({
  version: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._ -]{0,31}$/),
  type: z.enum(gameVersionTypes),
  releasedAt: dateTimeSchema,
  major: z.boolean().default(false),
})

/** `data/users/*.json` */
export const sourceUserSchema = z.strictObject({
  id: idSchema,
  username: usernameSchema,
  name: z.string().min(1).max(64),
  bio: z.string().max(2000).default(''),
  avatarUrl: urlSchema.nullable().default(null),
  links: z.partialRecord(z.enum(userLinkKeys), urlSchema).default({}),
  role: z.enum(userRoles).default('user'),
  developer: z.strictObject({ verified: z.boolean() }).nullable().default(null),
  location: z.string().max(100).nullable().default(null),
  joinedAt: dateTimeSchema,
})

/** `data/projects/<slug>/project.json` */
export const sourceProjectSchema = z
  .strictObject({
    id: idSchema,
    slug: slugSchema,
    type: projectTypeSchema,
    name: z.string().min(1).max(100),
    summary: z.string().min(1).max(300),
    description: z.string().default(''),
    status: z.enum(projectStatuses),
    iconUrl: urlSchema.nullable().default(null),
    bannerUrl: urlSchema.nullable().default(null),
    /** The owner (user id); rendered as `author` and as the first member, role "owner". */
    authorId: idSchema,
    members: z.array(z.strictObject({ userId: idSchema, role: z.string().min(1).max(32) })).default([]),
    categories: z.array(slugSchema).default([]),
    tags: z.array(z.string().regex(/^[a-z0-9][a-z0-9 _-]{0,31}$/)).default([]),
    license: z.string().max(64).nullable().default(null),
    licenseUrl: urlSchema.nullable().default(null),
    links: z
      .array(z.strictObject({ kind: z.enum(linkKinds), url: urlSchema, label: z.string().max(64).nullable().default(null) }))
      .default([]),
    screenshots: z
      .array(z.strictObject({ id: idSchema, url: urlSchema, caption: z.string().max(200).default('') }))
      .default([]),
    favorites: z.int().nonnegative().default(0),
    followers: z.int().nonnegative().default(0),
    createdAt: dateTimeSchema,
    updatedAt: dateTimeSchema,
    publishedAt: dateTimeSchema.nullable().default(null),
  })
  .refine((p) => p.status !== 'published' || p.publishedAt !== null, {
    message: 'a published project needs publishedAt',
    path: ['publishedAt'],
  })

/**
 * A file of a version. Either `path` names a blob (relative to the version record's folder) whose
 * size and hashes the build computes, or `size` + `sha256` (+ optional `sha1`) are declared.
 * When both are given the build checks that the blob matches what is declared.
 */
export const sourceFileSchema = z
  .strictObject({
    id: idSchema,
    filename: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._+()\- ]{0,199}$/, 'must be a plain file name'),
    primary: z.boolean().default(false),
    contentType: z.string().regex(/^[a-z]+\/[a-z0-9.+-]+$/).optional(),
    path: z.string().min(1).optional(),
    size: z.int().nonnegative().optional(),
    sha256: sha256Schema.optional(),
    sha1: sha1Schema.optional(),
  })
  .refine((f) => f.path !== undefined || (f.size !== undefined && f.sha256 !== undefined), {
    message: 'needs either path (a blob) or both size and sha256',
  })

export const sourceDependencySchema = z
  .strictObject({
    type: z.enum(dependencyTypes),
    projectId: idSchema.optional(),
    versionId: idSchema.optional(),
    external: z.strictObject({ source: slugSchema, id: z.string().min(1).max(200) }).optional(),
  })
  .refine((d) => (d.external === undefined) !== (d.projectId === undefined && d.versionId === undefined), {
    message: 'needs either projectId/versionId or external, not both',
  })
  .refine((d) => d.type !== 'embedded' || d.external !== undefined, {
    message: 'an embedded dependency names its external source',
    path: ['external'],
  })

/** `data/projects/<slug>/versions/<versionNumber>.json` */
export const sourceVersionSchema = z
  .strictObject({
    id: idSchema,
    projectId: idSchema,
    versionNumber: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/, 'must be 1–64 of A-Z a-z 0-9 . _ + -'),
    name: z.string().min(1).max(100),
    channel: channelSchema,
    status: z.enum(versionStatuses),
    gameVersions: z.array(z.string().min(1)).min(1),
    platforms: z.array(slugSchema).min(1),
    downloads: z.int().nonnegative().default(0),
    changelog: z.string().default(''),
    createdAt: dateTimeSchema,
    publishedAt: dateTimeSchema.nullable().default(null),
    files: z.array(sourceFileSchema).min(1),
    dependencies: z.array(sourceDependencySchema).default([]),
  })
  .refine((v) => v.status !== 'published' || v.publishedAt !== null, {
    message: 'a published version needs publishedAt',
    path: ['publishedAt'],
  })

export type SourceCatalog = z.infer<typeof sourceCatalogSchema>
export type SourceCategory = z.infer<typeof sourceCategorySchema>
export type SourceType = z.infer<typeof sourceTypeSchema>
export type SourceGameVersion = z.infer<typeof sourceGameVersionSchema>
export type SourceUser = z.infer<typeof sourceUserSchema>
export type SourceProject = z.infer<typeof sourceProjectSchema>
export type SourceFile = z.infer<typeof sourceFileSchema>
export type SourceDependency = z.infer<typeof sourceDependencySchema>
export type SourceVersion = z.infer<typeof sourceVersionSchema>
