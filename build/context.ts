/**
 * The build context: resolved options, the problem list and the staging/catalog databases,
 * passed explicitly to every build step.
 */
import type { NamedSource } from './list-sources.ts'
import type { Db } from './db/sqlite.ts'
import type { ReleaseOptions } from './release/options.ts'

/** Options of a build (see resolveBuildOptions for defaults and README for the env vars). */
export interface BuildOptions {
  /** Source catalog folder. */
  dataDir: string
  /** Output folder holding `releases/` and the `current` pointer. */
  distDir: string
  /** Public origin used in absolute URLs (file download URLs). */
  baseUrl: string
  /** Where download redirects point: the content-addressed objects. */
  filesBaseUrl: string
  /** How many releases to keep (the live one and the one before it are always kept). */
  keepReleases: number
  /** Download counter database to fold into `downloads`, if it exists. */
  countersFile: string | null
  /** Source revision recorded in the release (e.g. a git commit); null: the data folder's git HEAD, if any. */
  sourceRevision: string | null
  /** Load workers (load-pool.ts) parsing source records beside the main thread; 0: the main thread alone. */
  loadWorkers: number
  /** Write the release tree in a second process (release/write-pool.ts) while this one renders. */
  writeWorker: boolean
  /** Build the search index in a process of its own (search-worker.ts) beside the catalog and the render. */
  searchWorker: boolean
  /** Keep staging between builds so a rebuild reads only changed source files (staging-cache.ts). */
  stagingCache: boolean
  /**
   * The record files changed since the last build, from BUILD_CHANGED_FILES (list-sources.ts
   * readChangedFiles): with staging kept, the load looks at these alone instead of listing the
   * data folder. null: the folder is listed.
   */
  changedFiles: NamedSource[] | null
  /** Start the release from the tree of a release this build would prune (release/recycle.ts). */
  recycle: boolean
  /** Snapshot, archive and feed retention of the release. */
  release: ReleaseOptions
  /** Print progress and the summary line. */
  log: (line: string) => void
}

/** One thing wrong with the source catalog. */
export interface Problem {
  file: string
  path: string
  message: string
}

/** State shared by the steps of one build. */
export interface BuildContext {
  options: BuildOptions
  problems: Problem[]
  staging: Db
  /** Folder of the release being written (not yet live). */
  releaseDir: string
}

/** Formats a zod-style path (`['files', 0, 'sha1']`) as `files[0].sha1`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`
    else out += out === '' ? String(key) : `.${String(key)}`
  }
  return out === '' ? '(record)' : out
}

/** Records a problem. */
export function addProblem(ctx: BuildContext, file: string, path: string, message: string): void {
  ctx.problems.push({ file, path, message })
}
