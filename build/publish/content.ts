/**
 * The release's content (API bodies and file objects) against what the bucket holds, shard by
 * shard: a shard whose hash equals the bucket release's is skipped whole; otherwise the two are
 * diffed (build/release/manifest.ts diffShard) and only added or changed names are written. One
 * shard in memory at a time, so the plan never holds the whole catalog.
 */
import type { ManifestEntry } from '../release/formats.ts'
import { diffShard, listShards } from '../release/manifest.ts'
import type { PublishContext } from './context.ts'
import { listMirrorDocs, type MirrorDoc } from './layout.ts'
import { uploadFile } from './put.ts'
import { loadLocalShard, loadRemoteShard, type RemoteRelease } from './remote.ts'

/** Names of one pass (file objects first, then everything that may link to them). */
export type ContentPass = (name: string) => boolean

/** Content passes in upload order: a new version's JSON never names a file object not yet uploaded. */
export const CONTENT_PASSES: readonly ContentPass[] = [(name) => name.startsWith('public/objects/'), (name) => !name.startsWith('public/objects/')]

/** Writes the added and changed names of a pass; collects its removed names into `retired`. */
export async function uploadContent(ctx: PublishContext, remote: RemoteRelease | null, pass: ContentPass, retired: string[]): Promise<void> {
  const { dir, index } = ctx.release
  for (const i of listShards().keys()) {
    const local = loadLocalShard(dir, index, i)
    if (remote && remote.index.shards[i]!.sha256 === index.shards[i]!.sha256) {
      ctx.counts.unchanged += local.filter((e) => pass(e.path)).length
      continue
    }
    const before = remote ? await loadRemoteShard(ctx, remote, i) : []
    const writes: ManifestEntry[] = []
    const counts = diffShard(
      before.filter((e) => pass(e.path)),
      local.filter((e) => pass(e.path)),
      (change) => {
        if (change.kind === 'R') retired.push(change.path)
        else writes.push(change.entry)
      },
    )
    ctx.counts.unchanged += counts.unchanged
    ctx.planned += writes.length
    // run() waits only for a free slot: uploads of this shard overlap with the next shard's diff.
    for (const e of writes) await ctx.pool.run(() => uploadFile(ctx, { name: e.path, sha256: e.sha256 }))
  }
  await ctx.pool.drain()
}

/** Mirror documents to write (new or with other bytes than the bucket's) and names to retire. */
export function planMirrorDocs(ctx: PublishContext, remote: RemoteRelease | null): { upload: MirrorDoc[]; retired: string[] } {
  const next = listMirrorDocs(ctx.release.pointer, ctx.release.index)
  const before = new Map(remote ? listMirrorDocs(remote.pointer, remote.index).map((d) => [d.name, d.identity]) : [])
  const names = new Set(next.map((d) => d.name))
  const upload = next.filter((d) => before.get(d.name) !== d.identity)
  ctx.counts.unchanged += next.length - upload.length
  ctx.planned += upload.length
  return { upload, retired: [...before.keys()].filter((n) => !names.has(n)) }
}
