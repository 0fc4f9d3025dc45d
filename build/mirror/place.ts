/**
 * Puts the files of one manifest shard into the staging folder: a file already there from an
 * interrupted run is kept if it verifies, an unchanged file is hard-linked from the live local
 * release, anything else is downloaded (bounded concurrency) and verified before it is renamed in.
 */
import { existsSync, mkdirSync, statSync, unlinkSync } from 'node:fs'
import path from 'node:path'
import { hasContentMtime, stampContentMtime } from '../release/content-mtime.ts'
import type { ManifestEntry } from '../release/formats.ts'
import { hashFile } from '../release/hash-file.ts'
import { fileUrl } from '../release/manifest.ts'
import { linkOrCopy } from '../release/writer.ts'
import type { Pool } from '../publish/pool.ts'
import { downloadTo, VerifyError, type FetchSettings } from './fetch.ts'

/** State of a sync across shards. */
export interface PlaceContext {
  settings: FetchSettings
  stagingDir: string
  /** Interrupted sync towards another release (files re-verified before reuse). */
  oldStagingDir: string | null
  /** Live local release, or null. */
  localDir: string | null
  /** Bounded downloads in flight (build/publish/pool.ts); a download's failure is listed in `failures`, never thrown, so one failure does not stop the others. */
  downloads: Pool
  /** Folders of the staging tree known to exist. */
  madeDirs: Set<string>
  counts: { placed: number; linked: number; resumed: number; downloaded: number; bytes: number }
  failures: string[]
}

/** Places every entry of a shard; `before` is the same shard of the live local release. */
export async function placeShard(ctx: PlaceContext, entries: ManifestEntry[], before: ManifestEntry[]): Promise<void> {
  const old = new Map(before.map((e) => [e.path, e]))
  for (const e of entries) {
    const target = path.join(ctx.stagingDir, e.path)
    const prev = old.get(e.path)
    const unchanged = prev !== undefined && prev.sha256 === e.sha256 && prev.size === e.size && ctx.localDir !== null
    const source = unchanged ? path.join(ctx.localDir!, e.path) : null
    if (await isInPlace(target, e, source)) {
      ctx.counts.resumed++
    } else if (source && existsSync(source)) {
      ensureParent(ctx, target)
      linkOrCopy(source, target)
      ctx.counts.linked++
    } else if (ctx.oldStagingDir && (await isInPlace(path.join(ctx.oldStagingDir, e.path), e, null))) {
      ensureParent(ctx, target)
      linkOrCopy(path.join(ctx.oldStagingDir, e.path), target)
      ctx.counts.resumed++
    } else {
      await startDownload(ctx, e, target)
      continue
    }
    ensureContentMtime(target, e.sha256)
    ctx.counts.placed++
  }
}

/** Whether `file` holds the entry: same inode as the verified local file, or same size and hash. */
async function isInPlace(file: string, e: ManifestEntry, source: string | null): Promise<boolean> {
  const st = statSync(file, { throwIfNoEntry: false })
  if (!st) return false
  if (st.size === e.size) {
    if (source && statSync(source, { throwIfNoEntry: false })?.ino === st.ino) return true
    if ((await hashFile(file)).sha256 === e.sha256) return true
  }
  unlinkSync(file)
  return false
}

function startDownload(ctx: PlaceContext, e: ManifestEntry, target: string): Promise<void> {
  return ctx.downloads.run(async () => {
    try {
      ctx.counts.bytes += await downloadWithOneRetry(ctx.settings, e, target)
      stampContentMtime(target, e.sha256)
      ctx.counts.downloaded++
      ctx.counts.placed++
    } catch (err) {
      ctx.failures.push(err instanceof Error ? err.message : String(err))
    }
  })
}

/** A mismatch is tried once more: the origin may have been switching releases at that instant. */
async function downloadWithOneRetry(settings: FetchSettings, e: ManifestEntry, target: string): Promise<number> {
  try {
    return await downloadTo(settings, fileUrl(e.path), target, e)
  } catch (err) {
    if (!(err instanceof VerifyError)) throw err
    return await downloadTo(settings, fileUrl(e.path), target, e)
  }
}

/**
 * The mirror serves what the origin serves, ETags included: a body's mtime is its content mtime
 * (build/render/etag.ts), which a file linked or resumed from a tree written before that rule may lack.
 */
function ensureContentMtime(file: string, sha256: string): void {
  const st = statSync(file, { throwIfNoEntry: false })
  if (st && !hasContentMtime(st, sha256)) stampContentMtime(file, sha256)
}

function ensureParent(ctx: PlaceContext, file: string): void {
  const dir = path.dirname(file)
  if (ctx.madeDirs.has(dir)) return
  mkdirSync(dir, { recursive: true })
  ctx.madeDirs.add(dir)
}
