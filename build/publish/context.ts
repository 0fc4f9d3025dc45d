/** The one context of a publish: options, the bucket, the local release, the pool and the counts. */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import type { S3Client } from '@aws-sdk/client-s3'
import { readPointer } from '../release/feed.ts'
import { manifestIndexSchema, type ManifestIndex, type Pointer } from '../release/formats.ts'
import { indexFile, MIRROR_DIR } from '../release/manifest.ts'
import { resolveCurrentRelease } from '../release/publish.ts'
import { PublishError, type BucketRef } from './client.ts'
import type { PublishOptions } from './options.ts'
import type { Pool } from './pool.ts'

/** The local release being published. */
export interface LocalRelease {
  dir: string
  pointer: Pointer
  /** The pointer's bytes, published as they are (a mirror compares them byte for byte). */
  pointerBytes: Buffer
  index: ManifestIndex
}

/** What a publish did. */
export interface PublishCounts {
  /** Objects written (PUT and verified). */
  uploaded: number
  /** Bytes written. */
  bytes: number
  /** Names the bucket already held from the previous publish (not even looked at). */
  unchanged: number
  /** Names an interrupted run had already written and verified (HEAD), not written again. */
  resumed: number
  /** Objects deleted (removed names past their retention). */
  deleted: number
}

/** State of a running publish. */
export interface PublishContext extends BucketRef {
  client: S3Client
  options: PublishOptions
  release: LocalRelease
  /** A previous run was interrupted: HEAD each object before writing it. */
  resume: boolean
  pool: Pool
  counts: PublishCounts
  /** Objects this run plans to look at, for the progress line. */
  planned: number
  lastProgress: number
}

/** The live release of a dist folder, with its pointer and manifest index. */
export function loadLocalRelease(distDir: string): LocalRelease {
  const dir = resolveCurrentRelease(distDir)
  const pointer = dir ? readPointer(dir) : null
  if (!dir || !pointer) throw new PublishError(`${distDir} has no sealed live release to publish (run npm run build first)`)
  const pointerBytes = readFileSync(path.join(dir, MIRROR_DIR, 'pointer.json'))
  const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(dir, indexFile(pointer.id)), 'utf8')))
  return { dir, pointer, pointerBytes, index }
}

/** Logs a progress line at most every 5 s. */
export function reportProgress(ctx: PublishContext): void {
  if (Date.now() - ctx.lastProgress < 5000) return
  ctx.lastProgress = Date.now()
  const c = ctx.counts
  ctx.options.log(`… ${c.uploaded + c.resumed}/${ctx.planned} objects: ${c.uploaded} uploaded (${(c.bytes / 1e6).toFixed(1)} MB), ${c.resumed} already there`)
}
