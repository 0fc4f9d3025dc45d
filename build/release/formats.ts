/**
 * The mirror documents of a release, as zod schemas: the build writes them, the mirror command
 * parses what it downloads with them (a mirror never trusts a document it has not validated).
 * Layout, under the served tree of every release (`public/`, so URL = path without `public`):
 *   /mirror/pointer.json            this release (written last); same JSON as `release.json`
 *   /mirror/manifest/<id>.json      manifest index: 256 shards with their SHA-256
 *   /mirror/manifest/shards/<sha256>.tsv.gz   one shard, named by the SHA-256 of its uncompressed text
 *   /mirror/changes/<serial>.tsv.gz what changed from the previous release to <serial>
 *   /mirror/catalog.sqlite          the catalog database the shim serves dynamic routes from
 *   /mirror/snapshot-<id>.sqlite    offline snapshot; /mirror/tree-<id>.tar.gz the JSON tree
 */
import { z } from 'zod'

const sha256 = z.string().regex(/^[0-9a-f]{64}$/)
const mirrorPath = z.string().regex(/^\/mirror\/[A-Za-z0-9._/-]+$/).refine((p) => !p.split('/').includes('..'))

/** A file named by the pointer, with what it must hash to. */
export const fileRefSchema = z.object({ path: mirrorPath, sha256, size: z.number().int().nonnegative() })
export type FileRef = z.infer<typeof fileRefSchema>

/** Counts of a diff between two releases, by file name. */
export const diffCountsSchema = z.object({
  added: z.number().int().nonnegative(),
  changed: z.number().int().nonnegative(),
  removed: z.number().int().nonnegative(),
  unchanged: z.number().int().nonnegative(),
})
export type DiffCounts = z.infer<typeof diffCountsSchema>

/** One change file of the feed: `sha256` is of its uncompressed text, `size` its gzip bytes. */
export const feedEntrySchema = fileRefSchema.extend({
  serial: z.number().int().positive(),
  previous: z.number().int().positive().nullable(),
  createdAt: z.string(),
  counts: diffCountsSchema,
})
export type FeedEntry = z.infer<typeof feedEntrySchema>

/**
 * The pointer (`/mirror/pointer.json`, also `release.json` at the release root). `feed.oldest` is
 * the lowest serial a mirror can update from with the feed; below it the answer is "resync" (fetch
 * the manifest), as Packagist's changes.json answers when its log no longer covers `since`.
 */
export const pointerSchema = z.object({
  format: z.literal(1),
  serial: z.number().int().positive(),
  id: z.string().regex(/^\d{8}$/),
  previous: z.number().int().positive().nullable(),
  createdAt: z.string(),
  sourceRevision: z.string().nullable(),
  files: z.number().int().nonnegative(),
  bodies: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  changes: diffCountsSchema,
  manifest: fileRefSchema,
  catalog: fileRefSchema,
  snapshot: fileRefSchema.nullable(),
  archive: fileRefSchema.nullable(),
  feed: z.object({ oldest: z.number().int().positive(), changes: z.array(feedEntrySchema) }),
})
export type Pointer = z.infer<typeof pointerSchema>

/** One shard of the manifest index: `sha256` of its uncompressed text, `size` of its gzip file. */
export const shardRefSchema = z.object({
  shard: z.string().regex(/^[0-9a-f]{2}$/),
  sha256,
  files: z.number().int().nonnegative(),
  size: z.number().int().nonnegative(),
})
export type ShardRef = z.infer<typeof shardRefSchema>

/** The manifest index (`/mirror/manifest/<id>.json`). */
export const manifestIndexSchema = z.object({
  format: z.literal(1),
  serial: z.number().int().positive(),
  id: z.string().regex(/^\d{8}$/),
  files: z.number().int().nonnegative(),
  shards: z.array(shardRefSchema).length(256),
})
export type ManifestIndex = z.infer<typeof manifestIndexSchema>

/** A manifest entry: a release-relative file name (`public/...`), its SHA-256 and size. */
export interface ManifestEntry {
  path: string
  sha256: string
  size: number
}
