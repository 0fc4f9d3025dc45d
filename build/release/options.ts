/** Options of the release step (mirror documents, snapshot, archive) and the source revision. */
import { execFileSync } from 'node:child_process'
import { envInt, envSwitch } from '../env.ts'
import { DEFAULT_FEED_RETENTION } from './feed.ts'

/** What a release publishes beside the served tree. */
export interface ReleaseOptions {
  /** Write the offline SQLite snapshot (RELEASE_SNAPSHOT=0 skips it). */
  snapshot: boolean
  /** Write the tar.gz of the JSON tree (RELEASE_ARCHIVE=0 skips it). */
  archive: boolean
  /** Change files kept in the feed (FEED_RETENTION). */
  feedRetention: number
  /** Write the archive in a second process, on the second core (BUILD_ARCHIVE_WORKER=0: in the build's own). */
  archiveWorker: boolean
  /** Write the snapshot in a second process, beside the manifest (BUILD_SNAPSHOT_WORKER=0: in the build's own). */
  snapshotWorker: boolean
}

/** Resolves release options from overrides and an environment map (README, "Configuration"); throws ConfigError on a bad value. */
export function resolveReleaseOptions(overrides: Partial<ReleaseOptions> = {}, env: Record<string, string | undefined> = {}): ReleaseOptions {
  return {
    snapshot: overrides.snapshot ?? envSwitch(env, 'RELEASE_SNAPSHOT'),
    archive: overrides.archive ?? envSwitch(env, 'RELEASE_ARCHIVE'),
    feedRetention: overrides.feedRetention ?? envInt(env, 'FEED_RETENTION', DEFAULT_FEED_RETENTION, 1),
    archiveWorker: overrides.archiveWorker ?? envSwitch(env, 'BUILD_ARCHIVE_WORKER'),
    snapshotWorker: overrides.snapshotWorker ?? envSwitch(env, 'BUILD_SNAPSHOT_WORKER'),
  }
}

/** The given revision, else the git commit of the data folder, else null (not a git checkout). */
export function resolveSourceRevision(given: string | null, dataDir: string): string | null {
  if (given) return given
  try {
    const out = execFileSync('git', ['-C', dataDir, 'rev-parse', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 })
    const rev = out.toString().trim()
    return /^[0-9a-f]{7,64}$/.test(rev) ? rev : null
  } catch {
    return null
  }
}
