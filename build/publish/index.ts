/**
 * Publishes the live release of a dist folder to an S3-compatible bucket, in an order that keeps
 * every pointer a reader can see whole: file objects, then the JSON that may name them, then the
 * mirror documents (manifest, change feed, snapshot, archive, catalog), each written and verified
 * before the next phase starts; the pointer last. Only names whose bytes differ from the bucket's
 * release are written; names the release dropped are deleted after their retention (retire.ts).
 * A run marks itself in progress in the bucket first, so a run after a kill resumes (put.ts).
 */
import { PublishError, createS3Client } from './client.ts'
import { CONTENT_PASSES, planMirrorDocs, uploadContent } from './content.ts'
import { loadLocalRelease, type PublishContext, type PublishCounts } from './context.ts'
import { POINTER_NAME, resolveHeaders, resolveKey } from './layout.ts'
import type { PublishOptions } from './options.ts'
import { createPool } from './pool.ts'
import { uploadBytes, uploadFile } from './put.ts'
import { loadRemoteRelease } from './remote.ts'
import { deleteDueNames, writeRetiredList } from './retire.ts'
import { readPublishState, writePublishState } from './state.ts'

/** Outcome of a publish. */
export interface PublishResult extends PublishCounts {
  status: 'published' | 'up-to-date'
  serial: number
  /** The serial the bucket served before, or null. */
  previous: number | null
}

/** Runs a publish; throws PublishError (naming the bucket and key) when it cannot complete. */
export async function runPublish(options: PublishOptions): Promise<PublishResult> {
  const started = Date.now()
  const release = loadLocalRelease(options.distDir)
  const client = createS3Client(options)
  const ctx: PublishContext = {
    client,
    bucket: options.bucket,
    options,
    release,
    resume: false,
    pool: createPool(options.concurrency),
    counts: { uploaded: 0, bytes: 0, unchanged: 0, resumed: 0, deleted: 0 },
    planned: 0,
    lastProgress: Date.now(),
  }
  try {
    const { pointer } = release
    const remote = await loadRemoteRelease(ctx)
    const state = await readPublishState(ctx)
    const stateBefore = JSON.stringify(state)
    if (remote && remote.pointer.serial > pointer.serial) {
      throw new PublishError(`s3://${options.bucket}/${options.prefix} serves release serial ${remote.pointer.serial}, newer than the local ${pointer.serial}; mirrors never go back, so it is not replaced`)
    }
    // A list whose pointer went up before a kill became live then; one whose pointer never did is dropped.
    for (const list of state.retired) if (list.liveAt === null && remote?.pointer.serial === list.serial) list.liveAt = new Date().toISOString()
    state.retired = state.retired.filter((l) => l.liveAt !== null)
    const where = `s3://${options.bucket}/${options.prefix}`
    if (remote && remote.pointerBytes.equals(release.pointerBytes)) {
      options.log(`${where} already serves release ${pointer.id} (serial ${pointer.serial}); nothing to upload`)
      state.inProgress = null
      if (JSON.stringify(state) !== stateBefore) await writePublishState(ctx, state)
      await deleteDueNames(ctx, state, Date.now())
      return { status: 'up-to-date', serial: pointer.serial, previous: remote.pointer.serial, ...ctx.counts }
    }
    ctx.resume = state.inProgress !== null
    options.log(
      `Publishing release ${pointer.id} (serial ${pointer.serial}, ${pointer.files} files) to ${where}${remote ? ` over release ${remote.pointer.id}` : ' (first publish)'}${ctx.resume ? '; resuming an interrupted run' : ''}`,
    )
    state.inProgress = { serial: pointer.serial, startedAt: new Date().toISOString() }
    await writePublishState(ctx, state)

    const retired: string[] = []
    for (const pass of CONTENT_PASSES) await uploadContent(ctx, remote, pass, retired)
    const docs = planMirrorDocs(ctx, remote)
    retired.push(...docs.retired)
    const catalog = docs.upload.filter((d) => d.name === `public${pointer.catalog.path}`)
    for (const doc of docs.upload) if (!catalog.includes(doc)) await ctx.pool.run(() => uploadFile(ctx, doc))
    await ctx.pool.drain()
    // The catalog keeps its name across releases: overwritten only now, just before the pointer.
    for (const doc of catalog) await uploadFile(ctx, doc)

    const list = await writeRetiredList(ctx, pointer.serial, retired)
    if (list) state.retired.push(list)
    await writePublishState(ctx, state)
    await uploadBytes(ctx, resolveKey(options.prefix, POINTER_NAME), release.pointerBytes, resolveHeaders(POINTER_NAME, options))
    ctx.counts.uploaded++
    ctx.counts.bytes += release.pointerBytes.length

    const now = new Date().toISOString()
    if (list) list.liveAt = now
    state.inProgress = null
    state.published = { serial: pointer.serial, manifestSha256: pointer.manifest.sha256, publishedAt: now }
    await writePublishState(ctx, state)
    await deleteDueNames(ctx, state, Date.now())
    const c = ctx.counts
    options.log(
      `Published release ${pointer.id} to ${where} in ${((Date.now() - started) / 1000).toFixed(1)}s: ${c.uploaded} uploaded (${(c.bytes / 1e6).toFixed(1)} MB), ${c.unchanged} unchanged, ${c.resumed} already there from an interrupted run, ${c.deleted} deleted; ${retired.length} names retired, kept ${options.retainSeconds}s`,
    )
    return { status: 'published', serial: pointer.serial, previous: remote?.pointer.serial ?? null, ...c }
  } finally {
    client.destroy()
  }
}
