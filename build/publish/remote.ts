/**
 * What the bucket holds from the last publish: its pointer and manifest, read from the bucket
 * itself (so a publish from another machine, or after dist/ was pruned, still uploads only what
 * changed). A manifest shard is read from any local release that has it (shards are named by the
 * hash of their text) and fetched from the bucket otherwise; both are verified.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { manifestIndexSchema, pointerSchema, type ManifestEntry, type ManifestIndex, type Pointer } from '../release/formats.ts'
import { hashBytes, parseShard, readGzipText, shardFile } from '../release/manifest.ts'
import { getObjectBytes, PublishError } from './client.ts'
import type { PublishContext } from './context.ts'
import { POINTER_NAME, resolveKey } from './layout.ts'

/** The release the bucket's pointer names. */
export interface RemoteRelease {
  pointer: Pointer
  pointerBytes: Buffer
  index: ManifestIndex
}

/**
 * The bucket's release, or null when it has none (first publish) or one that cannot be read (an
 * unparsable pointer or a missing manifest: everything is then uploaded, as for a first publish).
 */
export async function loadRemoteRelease(ctx: PublishContext): Promise<RemoteRelease | null> {
  const pointerBytes = await getObjectBytes(ctx, resolveKey(ctx.options.prefix, POINTER_NAME))
  if (!pointerBytes) return null
  const parsed = pointerSchema.safeParse(safeJson(pointerBytes))
  if (!parsed.success) {
    ctx.options.log(`The bucket's pointer is not a valid pointer; publishing everything as for a first release`)
    return null
  }
  const pointer = parsed.data
  const indexBytes = await getObjectBytes(ctx, resolveKey(ctx.options.prefix, `public${pointer.manifest.path}`))
  if (!indexBytes || indexBytes.length !== pointer.manifest.size || hashBytes(indexBytes) !== pointer.manifest.sha256) {
    ctx.options.log(`The manifest of the bucket's release ${pointer.id} is missing or does not verify; publishing everything as for a first release`)
    return null
  }
  return { pointer, pointerBytes, index: manifestIndexSchema.parse(JSON.parse(indexBytes.toString('utf8'))) }
}

/** Entries of shard `i` of the bucket's release. */
export async function loadRemoteShard(ctx: PublishContext, remote: RemoteRelease, i: number): Promise<ManifestEntry[]> {
  const sha256 = remote.index.shards[i]!.sha256
  const name = shardFile(sha256)
  for (const dir of listLocalReleases(ctx.options.distDir)) {
    const file = path.join(dir, name)
    if (!existsSync(file)) continue
    const text = readGzipText(readFileSync(file))
    if (hashBytes(text) === sha256) return parseShard(text)
  }
  const gz = await getObjectBytes(ctx, resolveKey(ctx.options.prefix, name))
  const text = gz ? readGzipText(gz) : null
  if (text === null || hashBytes(text) !== sha256) throw new PublishError(`manifest shard ${name} of the bucket's release ${remote.pointer.id} is missing or does not verify`)
  return parseShard(text)
}

/** Entries of shard `i` of a local release. */
export function loadLocalShard(releaseDir: string, index: ManifestIndex, i: number): ManifestEntry[] {
  return parseShard(readGzipText(readFileSync(path.join(releaseDir, shardFile(index.shards[i]!.sha256)))))
}

function listLocalReleases(distDir: string): string[] {
  const releases = path.join(distDir, 'releases')
  if (!existsSync(releases)) return []
  return readdirSync(releases)
    .filter((n) => /^\d+$/.test(n))
    .sort()
    .reverse()
    .map((n) => path.join(releases, n))
}

function safeJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'))
  } catch {
    return null
  }
}
