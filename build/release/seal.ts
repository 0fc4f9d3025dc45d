/**
 * Seals a written release for mirrors and offline users, before it goes live: the catalog exposed
 * under /mirror, the manifest and the change file, the feed, the snapshot and the archive, then —
 * after everything else is on disk (syncfs) — the pointer, written last.
 */
import { execFileSync } from 'node:child_process'
import { linkSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { formatCpu } from '../cpu.ts'
import { writeArchive } from './archive.ts'
import { writeFeed, readPointer } from './feed.ts'
import type { FileRef, Pointer } from './formats.ts'
import { hashFile } from './hash-file.ts'
import { MIRROR_DIR, mirrorUrl } from './manifest.ts'
import type { ReleaseOptions } from './options.ts'
import { writeManifest } from './seal-manifest.ts'
import { writeSnapshot } from './snapshot.ts'
import type { WriteStats } from './writer.ts'

/** What sealing needs to know about the release. */
export interface SealInput {
  releaseDir: string
  previousDir: string | null
  serial: number
  id: string
  sourceRevision: string | null
  stats: WriteStats
  options: ReleaseOptions
  log: (line: string) => void
}

/** Writes the mirror documents, snapshot and archive of a release; returns its pointer. */
export async function sealRelease(input: SealInput): Promise<Pointer> {
  const { releaseDir, previousDir, serial, id } = input
  const createdAt = new Date().toISOString()
  const started = Date.now()
  const cpu = process.cpuUsage()
  mkdirSync(path.join(releaseDir, MIRROR_DIR), { recursive: true })
  const catalogName = `${MIRROR_DIR}/catalog.sqlite`
  linkSync(path.join(releaseDir, 'catalog.sqlite'), path.join(releaseDir, catalogName))
  const catalog = await describe(releaseDir, catalogName)

  const sealed = writeManifest(releaseDir, previousDir, { serial, id })
  input.log(`Wrote the manifest and change file after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
  const previous = previousDir ? (readPointer(previousDir)?.serial ?? null) : null
  const feed = writeFeed(releaseDir, previousDir, { ...sealed.change, serial, previous, createdAt, counts: sealed.counts }, input.options.feedRetention)

  let snapshot: FileRef | null = null
  if (input.options.snapshot) {
    const name = `${MIRROR_DIR}/snapshot-${id}.sqlite`
    await writeSnapshot(releaseDir, path.join(releaseDir, name), { serial, id, createdAt, sourceRevision: input.sourceRevision })
    snapshot = await describe(releaseDir, name)
    input.log(`Wrote the snapshot (${(snapshot.size / 1e6).toFixed(1)} MB) after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
  }
  let archive: FileRef | null = null
  if (input.options.archive) {
    const name = `${MIRROR_DIR}/tree-${id}.tar.gz`
    await writeArchive(releaseDir, path.join(releaseDir, name), Math.floor(Date.parse(createdAt) / 1000))
    archive = await describe(releaseDir, name)
    input.log(`Wrote the archive (${(archive.size / 1e6).toFixed(1)} MB) after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
  }

  const pointer: Pointer = {
    format: 1,
    serial,
    id,
    previous,
    createdAt,
    sourceRevision: input.sourceRevision,
    files: input.stats.files,
    bodies: input.stats.bodies,
    bytes: input.stats.bytes,
    changes: sealed.counts,
    manifest: sealed.manifest,
    catalog,
    snapshot,
    archive,
    feed,
  }
  syncFileSystem(releaseDir)
  input.log(`Synced the file system after ${seconds(started)}s of sealing${formatCpu(cpu)}`)
  const json = JSON.stringify(pointer, null, 2) + '\n'
  writeFileSync(path.join(releaseDir, 'release.json'), json)
  const tmp = path.join(releaseDir, MIRROR_DIR, '.pointer.tmp')
  writeFileSync(tmp, json)
  renameSync(tmp, path.join(releaseDir, MIRROR_DIR, 'pointer.json'))
  return pointer
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1)
}

async function describe(releaseDir: string, name: string): Promise<FileRef> {
  return { path: mirrorUrl(name), ...(await hashFile(path.join(releaseDir, name))) }
}

/**
 * Flushes the file system holding the release (`sync -f`: one syncfs(2) instead of an fsync per
 * file, which would cost hours at millions of files), so the pointer never names files that a
 * power loss could take back. Without the coreutils binary it is skipped: the rename still orders
 * the switch, only durability across power loss is lost.
 */
export function syncFileSystem(dir: string): void {
  try {
    execFileSync('sync', ['-f', dir], { stdio: 'ignore', timeout: 600_000 })
  } catch {
    // Not fatal: see above.
  }
}
