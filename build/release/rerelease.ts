/**
 * Roll-back by roll-forward: an older kept release is published again as a new serial, with the same
 * bytes. Every consumer then moves forward as after any build — the shim and nginx swap `current`,
 * mirrors follow the change file (they refuse a serial lower than theirs, rightly: that is what a
 * stale CDN edge looks like), `publish:s3` uploads the difference — and what the change file lists
 * is exactly what the roll-back changed. Bodies come from the content store (links, nothing
 * rewritten); the catalog, snapshot and archive are reproducible, so they come back byte-identical.
 */
import { createReadStream, existsSync, linkSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { createInterface } from 'node:readline'
import type { BuildOptions } from '../context.ts'
import { parseEntry } from './manifest.ts'
import { abortRelease, prepareRelease, publishRelease, readReleaseInfo, resolveCurrentRelease, type ReleaseInfo } from './publish.ts'
import { sealRelease, type SealedRelease } from './seal.ts'
import { createReleaseWriter, type ReleaseWriter } from './writer.ts'

/** The outcome of a re-release. */
export interface Rerelease {
  /** The release whose bytes were published again. */
  from: ReleaseInfo
  /** The new live release. */
  release: ReleaseInfo
  releaseDir: string
  changes: SealedRelease['changes']
}

/** Raised when the asked release cannot be re-released (nothing live, not kept, already live). */
export class RereleaseError extends Error {}

/** Serials of the complete releases kept in `distDir/releases`, oldest first. */
export function listKeptReleases(distDir: string): number[] {
  const dir = path.join(distDir, 'releases')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((n) => /^\d+$/.test(n) && existsSync(path.join(dir, n, 'release.json')))
    .map(Number)
    .sort((a, b) => a - b)
}

/**
 * Publishes the kept release `serial` (default: the one the live release was built after) again as
 * a new serial, and makes it live. Options: the build's (dist, retention, snapshot/archive, log).
 */
export async function rereleaseRelease(options: Pick<BuildOptions, 'distDir' | 'keepReleases' | 'release' | 'log'>, serial?: number): Promise<Rerelease> {
  const liveDir = resolveCurrentRelease(options.distDir)
  if (!liveDir) throw new RereleaseError(`${options.distDir} has no live release to roll back from`)
  const live = readReleaseInfo(liveDir)
  const target = serial ?? live.previous
  const kept = listKeptReleases(options.distDir)
  if (target === null || target === undefined) throw new RereleaseError(`release ${live.id} was the first one: there is nothing to roll back to; kept: ${kept.join(', ') || 'none'}`)
  if (target === live.serial) throw new RereleaseError(`release ${live.id} is already live`)
  if (!kept.includes(target)) throw new RereleaseError(`release ${target} is not kept in ${path.join(options.distDir, 'releases')}; kept: ${kept.join(', ')}`)
  const sourceDir = path.join(options.distDir, 'releases', String(target).padStart(8, '0'))
  const from = readReleaseInfo(sourceDir)

  const started = Date.now()
  const pending = prepareRelease(options.distDir)
  let writer: ReleaseWriter | null = null
  try {
    writer = createReleaseWriter(pending.dir, (s) => options.log(`… ${s.files} names relinked`), path.join(options.distDir, 'store'), {
      packBodies: options.release.snapshot || options.release.archive,
    })
    await relinkNames(sourceDir, writer)
    const stats = await writer.finish()
    writer = null
    // The catalog is one file, not a served body: a link to the kept one (same bytes, same inode).
    linkSync(path.join(sourceDir, 'catalog.sqlite'), path.join(pending.dir, 'catalog.sqlite'))
    const sealed = await sealRelease({
      releaseDir: pending.dir,
      previousDir: pending.previousDir,
      serial: pending.serial,
      id: pending.id,
      sourceRevision: from.sourceRevision,
      stats,
      options: options.release,
      log: options.log,
    })
    const releaseDir = publishRelease(options.distDir, pending, options.keepReleases, { log: options.log })
    const c = sealed.changes
    options.log(
      `Re-released ${from.id} as ${pending.id} in ${((Date.now() - started) / 1000).toFixed(1)}s: ` +
        `${c.added} added, ${c.changed} changed, ${c.removed} removed, ${c.unchanged} unchanged`,
    )
    return { from, release: sealed.pointer, releaseDir, changes: sealed.changes }
  } catch (err) {
    await writer?.close()
    abortRelease(options.distDir, pending)
    throw err
  }
}

/**
 * Writes every name of the source release's manifest through the writer. The names of one body are
 * adjacent in manifest.tsv (the writer records them together), so each body is read once; the
 * writer finds it in the content store and links it. File objects keep their own copy path.
 */
async function relinkNames(sourceDir: string, writer: ReleaseWriter): Promise<void> {
  let sha256 = ''
  let names: string[] = []
  const flush = (): void => {
    const first = names[0]
    if (first === undefined) return
    if (first.startsWith('public/objects/')) for (const name of names) writer.copy(name, path.join(sourceDir, name))
    else writer.write(names, readFileSync(path.join(sourceDir, first)))
    names = []
  }
  const lines = createInterface({ input: createReadStream(path.join(sourceDir, 'manifest.tsv')), crlfDelay: Infinity })
  for await (const line of lines) {
    if (!line) continue
    const e = parseEntry(line)
    if (e.sha256 !== sha256) flush()
    sha256 = e.sha256
    names.push(e.path)
  }
  flush()
}
