/**
 * The mirror's folder: the same layout as a build's dist/ (`releases/<id>/`, a `current` symlink),
 * so `DIST_DIR=<folder> npm run serve` serves it. A sync stages the next release in
 * `releases/.sync` (kept across a kill -9 and reused by the next run) and switches `current` with
 * rename(2) only once every file verified; readers never see a mix of two releases.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { removeTree } from '../remove-tree.ts'
import { readPointer } from '../release/feed.ts'
import { manifestIndexSchema, type ManifestIndex, type Pointer } from '../release/formats.ts'
import { indexFile } from '../release/manifest.ts'
import { isAlive } from '../release/publish.ts'
import { syncFileSystem } from '../release/seal.ts'

/** The release the mirror serves now. */
export interface LocalRelease {
  dir: string
  pointer: Pointer
  index: ManifestIndex
}

/** The live local release, or null (first run, or a folder that is not a mirror). */
export function readLocalRelease(root: string): LocalRelease | null {
  const current = path.join(root, 'current')
  if (!existsSync(current)) return null
  const dir = realpathSync(current)
  const pointer = readPointer(dir)
  if (!pointer) return null
  const parsed = manifestIndexSchema.safeParse(JSON.parse(readFileSync(path.join(dir, indexFile(pointer.id)), 'utf8')))
  return parsed.success ? { dir, pointer, index: parsed.data } : null
}

/** Staging folders of a sync. */
export interface Staging {
  /** Where the next release is assembled. */
  dir: string
  /** An interrupted sync towards another release, whose verified files may be reused; null if none. */
  oldDir: string | null
  /** Downloads in flight. */
  partsDir: string
}

/**
 * Prepares `releases/.sync` for release `id`: an interrupted sync towards the same release is
 * continued as it is (every file in it was verified before it was renamed in); one towards another
 * release is moved aside to `.sync-old` so its files can be reused after re-verification.
 */
export function prepareStaging(root: string, id: string): Staging {
  const releases = path.join(root, 'releases')
  const dir = path.join(releases, '.sync')
  const oldDir = path.join(releases, '.sync-old')
  const partsDir = path.join(releases, '.parts')
  rmSync(partsDir, { recursive: true, force: true })
  const targetFile = path.join(dir, '.target')
  if (existsSync(dir) && (!existsSync(targetFile) || readFileSync(targetFile, 'utf8') !== id)) {
    removeTree(oldDir)
    renameSync(dir, oldDir)
  }
  mkdirSync(dir, { recursive: true })
  writeFileSync(targetFile, id)
  return { dir, oldDir: existsSync(oldDir) ? oldDir : null, partsDir }
}

/** Makes the staged release live: rename into releases/, swap `current`, prune; returns its folder. */
export function publishStaging(root: string, staging: Staging, id: string, keep: number): string {
  rmSync(path.join(staging.dir, '.target'), { force: true })
  rmSync(staging.partsDir, { recursive: true, force: true })
  syncFileSystem(staging.dir)
  const releases = path.join(root, 'releases')
  let name = id
  // The origin may rebuild a serial it already published (a wiped dist/): never overwrite a folder.
  for (let n = 1; existsSync(path.join(releases, name)); n++) name = `${id}.${n}`
  renameSync(staging.dir, path.join(releases, name))
  const tmpLink = path.join(root, `.current-${process.pid}`)
  rmSync(tmpLink, { force: true })
  symlinkSync(path.join('releases', name), tmpLink)
  renameSync(tmpLink, path.join(root, 'current'))
  syncFileSystem(root)
  if (staging.oldDir) removeTree(staging.oldDir)
  pruneLocal(root, keep)
  return path.join(releases, name)
}

/** Keeps the newest `keep` (at least 2) releases; never the live one. */
function pruneLocal(root: string, keep: number): void {
  const releases = path.join(root, 'releases')
  const live = path.basename(readlinkSync(path.join(root, 'current')))
  const names = readdirSync(releases).filter((n) => /^\d{8}(\.\d+)?$/.test(n))
  names.sort((a, b) => Number(b.split('.')[0]) - Number(a.split('.')[0]) || Number(b.split('.')[1] ?? 0) - Number(a.split('.')[1] ?? 0))
  for (const name of names.slice(Math.max(2, keep))) {
    if (name !== live) removeTree(path.join(releases, name))
  }
}

/** Takes the mirror lock (one sync per folder); a lock of a dead process is taken over. */
export function takeMirrorLock(root: string): () => void {
  mkdirSync(root, { recursive: true })
  const lock = path.join(root, '.mirror.lock')
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'))
    if (pid && pid !== process.pid && isAlive(pid)) throw new Error(`another mirror sync (pid ${pid}) is writing ${root}`)
  }
  writeFileSync(lock, String(process.pid))
  return () => rmSync(lock, { force: true })
}
