/** Options of `npm run publish:s3` and their resolution from an environment map (README, "Publishing to S3-compatible storage"). */
import path from 'node:path'
import { z } from 'zod'
import { envInt, envSwitch, envText } from '../env.ts'

/** Defaults of a publish. */
export const publishDefaults = {
  distDir: 'dist',
  region: 'us-east-1',
  concurrency: 16,
  retries: 5,
  /** Removed objects stay this long after the pointer stopped naming them (see retire.ts). */
  retainSeconds: 3600,
  /** Files above this size go up in parts of this size (S3's minimum part is 5 MiB). */
  partSize: 16 * 1024 * 1024,
  rateLimit: 120,
  maxAge: 60,
  staleWhileRevalidate: 600,
} as const

const count = z.number().int().nonnegative()

/** A resolved publish configuration. */
export const publishOptionsSchema = z.object({
  distDir: z.string().min(1),
  bucket: z.string().min(1, 'S3_BUCKET is required'),
  /** Key prefix, empty or ending in `/`. */
  prefix: z.string().regex(/^$|^[^/].*\/$/, 'S3_PREFIX must not start with /'),
  /** Endpoint of a non-AWS store (null: AWS). */
  endpoint: z.url({ protocol: /^https?$/, error: 'S3_ENDPOINT must be an http(s) URL such as http://127.0.0.1:9000' }).nullable(),
  region: z.string().min(1),
  forcePathStyle: z.boolean(),
  /** Explicit credentials (tests); null uses the SDK's default chain (AWS_ACCESS_KEY_ID, profiles, roles). */
  credentials: z.object({ accessKeyId: z.string(), secretAccessKey: z.string() }).nullable(),
  concurrency: z.number().int().positive(),
  retries: count,
  retainSeconds: count,
  partSize: z.number().int().positive(),
  rateLimit: z.number().int().positive(),
  maxAge: count,
  staleWhileRevalidate: count,
})
/** A resolved publish configuration. */
export type PublishSettings = z.infer<typeof publishOptionsSchema>

/** A publish configuration plus its log sink. */
export type PublishOptions = PublishSettings & { log: (line: string) => void }

/** Options given on the command line, which win over the environment. */
export interface PublishOverrides {
  distDir?: string
  concurrency?: number
  retainSeconds?: number
  partSize?: number
}

/**
 * Resolves a publish configuration from overrides and an environment map; throws a readable
 * message naming the variable when one is missing or malformed.
 */
export function resolvePublishOptions(overrides: PublishOverrides, env: Record<string, string | undefined>, log: (line: string) => void): PublishOptions {
  const endpoint = env.S3_ENDPOINT?.trim() || null
  const parsed = publishOptionsSchema.safeParse({
    distDir: path.resolve(overrides.distDir ?? envText(env, 'DIST_DIR') ?? publishDefaults.distDir),
    bucket: env.S3_BUCKET?.trim() ?? '',
    prefix: normalizePrefix(env.S3_PREFIX ?? ''),
    endpoint: endpoint?.replace(/\/+$/, '') ?? null,
    region: env.S3_REGION || env.AWS_REGION || publishDefaults.region,
    // Stores other than AWS (MinIO, s3rver, Ceph) mostly answer on one host: path style by default.
    forcePathStyle: envSwitch(env, 'S3_FORCE_PATH_STYLE', endpoint !== null),
    credentials: null,
    concurrency: overrides.concurrency ?? publishDefaults.concurrency,
    retries: envInt(env, 'S3_RETRIES', publishDefaults.retries, 0),
    retainSeconds: overrides.retainSeconds ?? publishDefaults.retainSeconds,
    partSize: overrides.partSize ?? publishDefaults.partSize,
    rateLimit: envInt(env, 'RATE_LIMIT', publishDefaults.rateLimit, 1),
    maxAge: envInt(env, 'MAX_AGE', publishDefaults.maxAge, 0),
    staleWhileRevalidate: envInt(env, 'STALE_WHILE_REVALIDATE', publishDefaults.staleWhileRevalidate, 0),
  })
  // A message that names its variable stands alone; another is prefixed with the option's name.
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => (/^[A-Z][A-Z0-9_]+ /.test(i.message) ? i.message : `${i.path.join('.')}: ${i.message}`)).join('; '))
  return { ...parsed.data, log }
}

/** `a/b`, `/a/b/` and `a/b/` all become `a/b/`; empty stays empty (the bucket's root). */
export function normalizePrefix(prefix: string): string {
  const trimmed = prefix.trim().replace(/^\/+|\/+$/g, '')
  return trimmed === '' ? '' : `${trimmed}/`
}
