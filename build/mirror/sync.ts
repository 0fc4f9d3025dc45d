/**
 * The mirror command: brings a local folder to the origin's latest release over HTTP. With a local
 * release the feed tells what changed and only that is fetched (every shard rebuilt from it must
 * hash as the origin's manifest says, else that shard is fetched); without one, or when the feed no
 * longer reaches it, the manifest is fetched ("resync"). Every file is verified; one that does not
 * verify refuses the whole release and the local copy stays on the release it had.
 */
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createPool } from '../publish/pool.ts'
import { manifestIndexSchema, pointerSchema, type FileRef, type ManifestEntry, type Pointer } from '../release/formats.ts'
import { hashFile } from '../release/hash-file.ts'
import { changeFile, formatEntry, hashBytes, indexFile, joinShard, listShards, MIRROR_DIR, parseShard, readGzipText, shardFile, type Change } from '../release/manifest.ts'
import { gzipShard } from '../release/shard-gzip.ts'
import { linkOrCopy } from '../release/writer.ts'
import { downloadTo, fetchBytes, VerifyError, type FetchSettings } from './fetch.ts'
import { fetchChangeFile, loadFeedChanges, type FeedChanges } from './feed.ts'
import { prepareStaging, publishStaging, readLocalRelease, takeMirrorLock, type LocalRelease } from './local.ts'
import { placeShard, type PlaceContext } from './place.ts'

/** Options of a sync (README, "Mirrors and snapshots"). */
export interface MirrorOptions {
  from: string
  to: string
  keep: number
  concurrency: number
  retries: number
  /** Also fetch the release's snapshot and archive. */
  withSnapshot: boolean
  log: (line: string) => void
}

/** Outcome of a sync. */
export interface MirrorResult {
  status: 'up-to-date' | 'updated'
  serial: number
  mode: 'feed' | 'manifest' | 'none'
  downloaded: number
  linked: number
  resumed: number
  requests: number
}

/** Raised when the origin's release does not verify; the local copy is unchanged. */
export class MirrorRefused extends Error {}

/** Runs a sync, starting over (keeping verified downloads) if the origin publishes meanwhile. */
export async function runMirror(options: MirrorOptions): Promise<MirrorResult> {
  const unlock = takeMirrorLock(options.to)
  const settings: FetchSettings = { base: options.from.replace(/\/+$/, ''), retries: options.retries, partsDir: path.join(options.to, 'releases', '.parts'), requests: 0 }
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      const seen: { serial: number | null } = { serial: null }
      const result = await syncOnce(options, settings, seen).catch(async (err: unknown) => {
        // A 404 or a mismatch while the origin switched releases is not a refusal: start over.
        if (seen.serial !== null && (await fetchPointer(settings).catch(() => null))?.pointer.serial !== seen.serial) return 'moved' as const
        throw err
      })
      if (result !== 'moved') return result
      options.log('The origin published a new release during the sync; continuing with it (verified files are kept)')
    }
    throw new MirrorRefused('the origin kept publishing new releases during the sync; try again later')
  } finally {
    unlock()
  }
}

async function fetchPointer(settings: FetchSettings): Promise<{ pointer: Pointer; bytes: Buffer }> {
  const bytes = await fetchBytes(settings, `/${MIRROR_DIR.slice('public/'.length)}/pointer.json`)
  const parsed = pointerSchema.safeParse(JSON.parse(bytes.toString('utf8')))
  if (!parsed.success) throw new MirrorRefused(`the origin's pointer is not valid: ${parsed.error.message.slice(0, 300)}`)
  return { pointer: parsed.data, bytes }
}

async function syncOnce(options: MirrorOptions, settings: FetchSettings, seen: { serial: number | null }): Promise<MirrorResult | 'moved'> {
  const log = options.log
  const local = readLocalRelease(options.to)
  let { pointer, bytes: pointerBytes } = await fetchPointer(settings)
  // A lower serial than ours is a stale cache in front of the origin: ask again, never go back.
  for (let i = 0; local && pointer.serial < local.pointer.serial && i < options.retries; i++) {
    await new Promise((r) => setTimeout(r, 500 * 2 ** i))
    ;({ pointer, bytes: pointerBytes } = await fetchPointer(settings))
  }
  seen.serial = pointer.serial
  const result = (mode: MirrorResult['mode'], c = { downloaded: 0, linked: 0, resumed: 0 }): MirrorResult => ({ status: mode === 'none' ? 'up-to-date' : 'updated', serial: pointer.serial, mode, ...c, requests: settings.requests })
  if (local && pointer.serial < local.pointer.serial) throw new MirrorRefused(`the origin serves serial ${pointer.serial}, older than the local ${local.pointer.serial}`)
  if (local && pointer.serial === local.pointer.serial && pointer.manifest.sha256 === local.pointer.manifest.sha256) {
    log(`Up to date at release ${pointer.id} (serial ${pointer.serial})`)
    return result('none')
  }
  const indexBytes = await fetchVerified(settings, pointer.manifest)
  const index = manifestIndexSchema.parse(JSON.parse(indexBytes.toString('utf8')))
  const feed = local ? await loadFeedChanges(settings, pointer, local.pointer.serial) : null
  const mode = feed ? 'feed' : 'manifest'
  log(`Syncing release ${pointer.id} (serial ${pointer.serial}, ${pointer.files} files) from ${settings.base} by ${mode === 'feed' ? `the feed (${feed!.count} changed names since serial ${local!.pointer.serial})` : local ? 'the manifest (resync)' : 'the manifest (first run)'}`)

  const staging = prepareStaging(options.to, pointer.id)
  for (const name of [shardFile('x'), changeFile(1)]) mkdirSync(path.dirname(path.join(staging.dir, name)), { recursive: true })
  const ctx: PlaceContext = {
    settings,
    stagingDir: staging.dir,
    oldStagingDir: staging.oldDir,
    localDir: local?.dir ?? null,
    downloads: createPool(options.concurrency),
    madeDirs: new Set(),
    counts: { placed: 0, linked: 0, resumed: 0, downloaded: 0, bytes: 0 },
    failures: [],
  }
  let lastLog = Date.now()
  for (const [i, shard] of listShards().entries()) {
    const ref = index.shards[i]!
    const before = local ? readLocalShard(local, i) : []
    const localSha = local?.index.shards[i]?.sha256 ?? null
    const { entries, gz } = await resolveShard(settings, ref, localSha, before, feed?.byShard.get(shard) ?? null, local !== null)
    const shardTarget = path.join(staging.dir, shardFile(ref.sha256))
    if (!gzipTextMatches(shardTarget, ref.sha256, null)) {
      rmSync(shardTarget, { force: true })
      if (gz) writeWhole(shardTarget, gz)
      else linkOrCopy(path.join(local!.dir, shardFile(ref.sha256)), shardTarget)
    }
    await placeShard(ctx, entries, before)
    if (Date.now() - lastLog > 2000) {
      lastLog = Date.now()
      log(`… shard ${i + 1}/256: ${ctx.counts.placed}/${pointer.files} files in place, ${ctx.counts.downloaded} downloaded (${(ctx.counts.bytes / 1e6).toFixed(1)} MB)`)
    }
  }
  await ctx.downloads.drain()
  await placeExtras(options, settings, pointer, local, feed, staging.dir, ctx)
  if (ctx.failures.length > 0) {
    const now = await fetchPointer(settings)
    if (now.pointer.serial !== pointer.serial || now.pointer.manifest.sha256 !== pointer.manifest.sha256) return 'moved'
    throw new MirrorRefused(
      `${ctx.failures.length} file(s) of release ${pointer.id} did not verify; the local copy stays on ${local ? `release ${local.pointer.id}` : 'nothing'}:\n  ${ctx.failures.slice(0, 10).join('\n  ')}`,
    )
  }
  if (ctx.counts.placed !== pointer.files) throw new MirrorRefused(`placed ${ctx.counts.placed} files but the pointer announces ${pointer.files}`)
  writeFileSync(path.join(staging.dir, indexFile(pointer.id)), indexBytes)
  writeFileSync(path.join(staging.dir, 'release.json'), pointerBytes)
  // The pointer goes in last: a staging folder without it is never a release.
  writeFileSync(path.join(staging.dir, MIRROR_DIR, 'pointer.json'), pointerBytes)
  publishStaging(options.to, staging, pointer.id, options.keep)
  const c = ctx.counts
  log(`Release ${pointer.id} is live in ${options.to}: ${c.downloaded} files downloaded (${(c.bytes / 1e6).toFixed(1)} MB), ${c.linked} linked from the previous release, ${c.resumed} kept from an interrupted run; ${settings.requests} requests`)
  return result(mode, { downloaded: c.downloaded, linked: c.linked, resumed: c.resumed })
}

/**
 * Writes a file under its name only once it is whole (a `.part` file renamed), so a sync killed
 * mid-write leaves no truncated shard or change file for the resumed run to keep.
 */
function writeWhole(target: string, bytes: Uint8Array): void {
  const part = `${target}.part`
  writeFileSync(part, bytes)
  renameSync(part, target)
}

/**
 * Whether a staged gzip file (a manifest shard, a change file) is there and its text has the
 * expected SHA-256 (and the file the expected size): what a resumed sync keeps. A truncated or
 * foreign file is not kept, whoever left it.
 */
function gzipTextMatches(file: string, sha256: string, size: number | null): boolean {
  if (!existsSync(file)) return false
  try {
    const bytes = readFileSync(file)
    return (size === null || bytes.length === size) && hashBytes(readGzipText(bytes)) === sha256
  } catch {
    return false
  }
}

/** Fetches a small file named by the pointer and checks its SHA-256 and size. */
async function fetchVerified(settings: FetchSettings, ref: FileRef): Promise<Buffer> {
  const bytes = await fetchBytes(settings, ref.path)
  if (bytes.length !== ref.size || hashBytes(bytes) !== ref.sha256) throw new MirrorRefused(`${ref.path} does not match the pointer`)
  return bytes
}

/** Entries of the local release's shard i. */
function readLocalShard(local: LocalRelease, i: number): ManifestEntry[] {
  const ref = local.index.shards[i]!
  return parseShard(readGzipText(readFileSync(path.join(local.dir, shardFile(ref.sha256)))))
}

/** The new entries of a shard: unchanged, rebuilt from the feed (when it hashes right), or fetched. */
async function resolveShard(
  settings: FetchSettings,
  ref: { sha256: string; size: number },
  localSha: string | null,
  before: ManifestEntry[],
  changes: Change[] | null,
  feedMode: boolean,
): Promise<{ entries: ManifestEntry[]; gz: Buffer | null }> {
  // Unchanged: the local shard file is linked (gz null).
  if (localSha === ref.sha256) return { entries: before, gz: null }
  if (feedMode && changes) {
    const next = new Map(before.map((e) => [e.path, e]))
    for (const c of changes) {
      if (c.kind === 'R') next.delete(c.path)
      else next.set(c.entry.path, c.entry)
    }
    const text = joinShard([...next.values()].map(formatEntry))
    if (hashBytes(text) === ref.sha256) return { entries: parseShard(text), gz: gzipShard(Buffer.from(text)) }
  }
  const gz = await fetchBytes(settings, `/mirror/manifest/shards/${ref.sha256}.tsv.gz`)
  const text = readGzipText(gz)
  if (hashBytes(text) !== ref.sha256) throw new MirrorRefused(`manifest shard ${ref.sha256} does not match the manifest index`)
  return { entries: parseShard(text), gz }
}

/** The catalog, the retained change files and (on request) the snapshot and archive. */
async function placeExtras(options: MirrorOptions, settings: FetchSettings, pointer: Pointer, local: LocalRelease | null, feed: FeedChanges | null, dir: string, ctx: PlaceContext): Promise<void> {
  const catalog = path.join(dir, MIRROR_DIR, 'catalog.sqlite')
  await placeFile(settings, pointer.catalog, catalog, local && local.pointer.catalog.sha256 === pointer.catalog.sha256 ? path.join(local.dir, MIRROR_DIR, 'catalog.sqlite') : null, ctx)
  if (existsSync(catalog) && !existsSync(path.join(dir, 'catalog.sqlite'))) linkSync(catalog, path.join(dir, 'catalog.sqlite'))
  for (const entry of pointer.feed.changes) {
    const target = path.join(dir, changeFile(entry.serial))
    if (gzipTextMatches(target, entry.sha256, entry.size)) continue
    rmSync(target, { force: true })
    const fetched = feed?.files.get(entry.serial)
    const kept = local ? path.join(local.dir, changeFile(entry.serial)) : null
    if (fetched) writeWhole(target, fetched)
    else if (kept && local!.pointer.feed.changes.some((e) => e.serial === entry.serial && e.sha256 === entry.sha256) && existsSync(kept)) linkOrCopy(kept, target)
    else {
      try {
        writeWhole(target, await fetchChangeFile(settings, entry))
      } catch (err) {
        ctx.failures.push(err instanceof Error ? err.message : String(err))
      }
    }
  }
  if (options.withSnapshot) {
    for (const [ref, old] of [[pointer.snapshot, local?.pointer.snapshot], [pointer.archive, local?.pointer.archive]] as const) {
      // An unchanged rebuild keeps the bytes (under the new release's name): linked, not fetched.
      if (ref) await placeFile(settings, ref, path.join(dir, 'public', ref.path), old?.sha256 === ref.sha256 ? path.join(local!.dir, 'public', old.path) : null, ctx)
    }
  }
}

/** Places one big file: already there and verified, linked from the local release, or downloaded. */
async function placeFile(settings: FetchSettings, ref: FileRef, target: string, localCopy: string | null, ctx: PlaceContext): Promise<void> {
  if (existsSync(target) && (await hashFile(target)).sha256 === ref.sha256) return
  if (localCopy && existsSync(localCopy)) {
    linkOrCopy(localCopy, target)
    return
  }
  try {
    await downloadTo(settings, ref.path, target, ref)
  } catch (err) {
    if (!(err instanceof VerifyError) && !(err instanceof Error)) throw err
    ctx.failures.push(err.message)
  }
}
