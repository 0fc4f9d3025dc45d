/**
 * The change feed: every release lists the change files of the last `retention` releases in its
 * pointer and carries those files (hard links to the previous release's, which never change once
 * written). A mirror at serial N fetches the change files with serial > N and applies them; when N
 * is below `oldest` the feed no longer covers it and the answer is "resync" (fetch the manifest).
 */
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { pointerSchema, type FeedEntry, type Pointer } from './formats.ts'
import { changeFile, MIRROR_DIR } from './manifest.ts'
import { linkOrCopy } from './writer.ts'

/** Default number of change files kept in the feed. */
export const DEFAULT_FEED_RETENTION = 100

/** The pointer of a release folder, or null when it has none (or an unreadable one). */
export function readPointer(releaseDir: string): Pointer | null {
  const file = path.join(releaseDir, MIRROR_DIR, 'pointer.json')
  if (!existsSync(file)) return null
  const parsed = pointerSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')))
  return parsed.success ? parsed.data : null
}

/** The feed of a new release: the previous feed plus `entry`, trimmed to `retention`; links the kept files. */
export function writeFeed(releaseDir: string, previousDir: string | null, entry: FeedEntry, retention: number): Pointer['feed'] {
  const before = previousDir ? (readPointer(previousDir)?.feed.changes ?? []) : []
  const kept = [...before.filter((e) => e.serial < entry.serial), entry].slice(-Math.max(1, retention))
  for (const e of kept) {
    if (e.serial === entry.serial) continue
    const name = changeFile(e.serial)
    const source = path.join(previousDir!, name)
    if (!existsSync(source)) return { oldest: entry.previous ?? entry.serial, changes: [entry] }
    linkOrCopy(source, path.join(releaseDir, name))
  }
  // The oldest change file starts from its `previous` release: a mirror there can still catch up.
  const first = kept[0]!
  return { oldest: first.previous ?? first.serial, changes: kept }
}
