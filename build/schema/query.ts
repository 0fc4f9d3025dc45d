/**
 * Query parameters of every endpoint (SPEC.md §4), as zod schemas over the raw strings of the query.
 * List parameters arrive already split (`a,b,c` or a JSON array, see shim/query.ts) as string arrays.
 * The shim validates with these and the OpenAPI document describes them, so the two cannot drift.
 */
import { z } from 'zod'
import { channels, projectTypes } from './source.ts'

/** A positive integer given as decimal digits. */
function intParam(min: number, max: number, fallback: number): z.ZodType<number> {
  return z
    .string()
    .regex(/^\d{1,9}$/, 'must be an integer')
    .transform(Number)
    .pipe(z.int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    // prefault, not default: zod 4 returns a default as the output unparsed (the string '20').
    .prefault(String(fallback))
    .meta({ description: `Integer from ${min} to ${max}; default ${fallback}.` }) as unknown as z.ZodType<number>
}

/** A boolean given as true/false (or 1/0). */
function boolParam(fallback: boolean): z.ZodType<boolean> {
  return z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .transform((v) => v === 'true' || v === '1')
    .prefault(fallback ? 'true' : 'false')
    .meta({ description: `true or false; default ${fallback}.` }) as unknown as z.ZodType<boolean>
}

/** A list parameter: comma-separated values or a JSON array of strings (SPEC §4). */
function listParam<T extends z.ZodType<string>>(item: T, max: number): z.ZodArray<T> {
  return z
    .array(item)
    .min(1, 'must list at least one value')
    .max(max, `must list at most ${max} values`)
    .meta({ description: `Comma-separated values or a JSON array of strings; at most ${max}.`, example: ['a', 'b'] })
}

const MAX_FILTER_VALUES = 100
const token = z.string().min(1).max(100)
const channel = z.enum(channels, { error: `must be one of ${channels.join(', ')}` })

/** A SHA-1 (40 hex) or SHA-256 (64 hex), any case; normalised to lowercase. */
export const hashParam = z
  .string()
  .regex(/^[0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?$/, 'must be a SHA-1 (40 hex characters) or a SHA-256 (64 hex characters)')
  .transform((h) => h.toLowerCase())

export const algorithmParam = z.enum(['sha1', 'sha256'], { error: 'must be sha1 or sha256' })

export const pageParams = {
  page: intParam(1, 1_000_000, 1),
  limit: intParam(1, 100, 20),
}

export const sortValues = ['relevance', 'downloads', 'favorites', 'updated', 'newest', 'name'] as const

/** GET /projects and /search. */
export const projectsQuerySchema = z.object({
  ids: listParam(token, 50).optional(),
  q: z.string().max(500, 'must be at most 500 characters').optional(),
  type: z.enum(projectTypes, { error: `must be one of ${projectTypes.join(', ')}` }).optional(),
  category: listParam(token, MAX_FILTER_VALUES).optional(),
  gameVersion: listParam(token, MAX_FILTER_VALUES).optional(),
  platform: listParam(token, MAX_FILTER_VALUES).optional(),
  tag: listParam(token, MAX_FILTER_VALUES).optional(),
  author: z.string().min(1).max(100).optional(),
  sort: z.enum(sortValues, { error: `must be one of ${sortValues.join(', ')}` }).default('relevance'),
  ...pageParams,
})

/** GET /projects/{idOrSlug}/versions. */
export const versionsListQuerySchema = z.object({
  channel: listParam(channel, 3).optional(),
  gameVersion: listParam(token, MAX_FILTER_VALUES).optional(),
  platform: listParam(token, MAX_FILTER_VALUES).optional(),
  includeChangelog: boolParam(true),
  ...pageParams,
})

/** GET /versions. */
export const versionsBulkQuerySchema = z.object({
  ids: listParam(token, 100),
  includeChangelog: boolParam(true),
})

/** GET /projects/{idOrSlug}/files. */
export const filesQuerySchema = z.object({ all: boolParam(false) })

/** Checks that every hash has the length of the given algorithm. */
function checkAlgorithm(value: { hashes?: string[]; algorithm?: 'sha1' | 'sha256' }, ctx: z.RefinementCtx): void {
  if (!value.algorithm || !value.hashes) return
  const length = value.algorithm === 'sha1' ? 40 : 64
  for (const [i, h] of value.hashes.entries()) {
    if (h.length !== length) {
      ctx.addIssue({ code: 'custom', path: ['hashes', i], message: `is not a ${value.algorithm} hash (${length} hex characters) as algorithm says` })
    }
  }
}

/** The most hashes a bulk lookup or update check names (SPEC: 100). */
export const MAX_BULK_HASHES = 100

/** GET /version-files. */
export const versionFilesQuerySchema = z
  .object({ hashes: listParam(hashParam as unknown as z.ZodType<string>, MAX_BULK_HASHES), algorithm: algorithmParam.optional() })
  .superRefine(checkAlgorithm)

/** GET /version-files without its `hashes` (shim/query.ts, readPlainHashQuery). */
export const versionFilesOtherParamsSchema = z.object({ algorithm: algorithmParam.optional() })

/** Filters of update matching. */
export const updateFilterParams = {
  channel: listParam(channel, 3).optional(),
  gameVersion: listParam(token, MAX_FILTER_VALUES).optional(),
  platform: listParam(token, MAX_FILTER_VALUES).optional(),
}

/** GET /version-files/update. */
export const versionFilesUpdateQuerySchema = z
  .object({ hashes: listParam(hashParam as unknown as z.ZodType<string>, MAX_BULK_HASHES), algorithm: algorithmParam.optional(), ...updateFilterParams })
  .superRefine(checkAlgorithm)

/** GET /version-files/update without its `hashes` (shim/query.ts, readPlainHashQuery). */
export const versionFilesUpdateOtherParamsSchema = z.object({ algorithm: algorithmParam.optional(), ...updateFilterParams })

/** GET /version-files/{hash}. */
export const versionFileQuerySchema = z.object({ algorithm: algorithmParam.optional() })

/** GET /version-files/{hash}/update. */
export const versionFileUpdateQuerySchema = z.object({ algorithm: algorithmParam.optional(), ...updateFilterParams })

/** GET /users. */
export const usersQuerySchema = z.object({ ids: listParam(token, 50) })

/** GET /categories. */
export const categoriesQuerySchema = z.object({ type: z.enum(projectTypes, { error: `must be one of ${projectTypes.join(', ')}` }).optional() })

/** GET /{game}/versions. */
export const gameVersionsQuerySchema = z.object({ snapshots: boolParam(false) })

/** Endpoints without parameters (unknown parameters are ignored everywhere). */
export const emptyQuerySchema = z.object({})

/** Names of list parameters (they are split before validation); `loader` is an alias of `platform`. */
export const listParamNames = new Set(['ids', 'hashes', 'category', 'gameVersion', 'platform', 'tag', 'channel'])
export const paramAliases: Record<string, string> = { loader: 'platform' }
