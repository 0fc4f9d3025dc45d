/**
 * Deferred deletion. Names a release no longer has are not deleted when its pointer goes up: a
 * reader that fetched the previous pointer (a mirror mid-sync), or a CDN serving the previous
 * JSON for up to max-age + stale-while-revalidate, may still ask for them. Each publish stores the
 * list of names it retired; a later publish (or the same one with a zero retention) deletes the
 * names of every list whose pointer went live at least `retainSeconds` ago, except names the live
 * release has again (a project removed and then restored).
 */
import { gunzipSync, gzipSync } from 'node:zlib'
import { DeleteObjectCommand } from '@aws-sdk/client-s3'
import { listShards, MIRROR_DIR, shardOf } from '../release/manifest.ts'
import { describeS3Error, getObjectBytes, isMissingKey } from './client.ts'
import type { PublishContext } from './context.ts'
import { listMirrorDocs, POINTER_NAME, resolveKey } from './layout.ts'
import { uploadBytes } from './put.ts'
import { loadLocalShard } from './remote.ts'
import { retiredKey, writePublishState, type PublishState, type RetiredList } from './state.ts'

/** Stores the names retired by the publish of `serial`; null when there are none. */
export async function writeRetiredList(ctx: PublishContext, serial: number, names: string[]): Promise<RetiredList | null> {
  if (names.length === 0) return null
  const key = retiredKey(ctx.options.prefix, serial)
  await uploadBytes(ctx, key, gzipSync(names.join('\n') + '\n'), { contentType: 'application/gzip', cacheControl: 'no-store', contentDisposition: null })
  return { serial, key, names: names.length, liveAt: null }
}

/** Deletes the names of every list past its retention; the state is written after each list. */
export async function deleteDueNames(ctx: PublishContext, state: PublishState, now: number): Promise<void> {
  const isDue = (list: RetiredList): boolean => list.liveAt !== null && Date.parse(list.liveAt) + ctx.options.retainSeconds * 1000 <= now
  if (!state.retired.some(isDue)) return
  const isLive = createLiveCheck(ctx)
  // A name retired again by a younger list (removed, restored, removed) was live in a release
  // retired less than the retention ago: that list deletes it when its own time comes.
  const younger = new Set<string>()
  for (const list of state.retired) if (!isDue(list)) for (const name of await readNames(ctx, list)) younger.add(name)
  for (const list of state.retired.filter(isDue)) {
    const names = await readNames(ctx, list)
    const before = ctx.counts.deleted
    for (const name of names) {
      if (isLive(name) || younger.has(name)) continue
      await ctx.pool.run(() => deleteKey(ctx, resolveKey(ctx.options.prefix, name)))
    }
    await ctx.pool.drain()
    await deleteKey(ctx, list.key, false)
    state.retired = state.retired.filter((l) => l !== list)
    await writePublishState(ctx, state)
    ctx.options.log(`Deleted ${ctx.counts.deleted - before} of the ${names.length} names release ${list.serial} retired (its pointer went live at ${list.liveAt}); the others are live again or retired later`)
  }
}

async function readNames(ctx: PublishContext, list: RetiredList): Promise<string[]> {
  const bytes = await getObjectBytes(ctx, list.key)
  return bytes ? gunzipSync(bytes).toString('utf8').split('\n').filter(Boolean) : []
}

/** A membership test against the local release being published (one shard loaded at a time, cached). */
function createLiveCheck(ctx: PublishContext): (name: string) => boolean {
  const { dir, pointer, index } = ctx.release
  const mirror = new Set([POINTER_NAME, ...listMirrorDocs(pointer, index).map((d) => d.name)])
  const shards = new Map<string, Set<string>>()
  const order = listShards()
  return (name) => {
    if (name.startsWith(`${MIRROR_DIR}/`)) return mirror.has(name)
    const shard = shardOf(name)
    let names = shards.get(shard)
    if (!names) {
      names = new Set(loadLocalShard(dir, index, order.indexOf(shard)).map((e) => e.path))
      shards.set(shard, names)
    }
    return names.has(name)
  }
}

async function deleteKey(ctx: PublishContext, key: string, count = true): Promise<void> {
  try {
    await ctx.client.send(new DeleteObjectCommand({ Bucket: ctx.bucket, Key: key }))
    if (count) ctx.counts.deleted++
  } catch (err) {
    if (!isMissingKey(err)) throw describeS3Error(err, 'DELETE', ctx.bucket, key)
  }
}
