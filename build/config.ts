/** Defaults of a build and their resolution from the environment (read only by build/cli.ts). */
import path from 'node:path'
import type { BuildOptions } from './context.ts'
import { ConfigError, envInt, envSwitch, envText } from './env.ts'
import { readChangedFiles, type NamedSource } from './list-sources.ts'
import { recordPatterns } from './load-records.ts'
import { resolveReleaseOptions } from './release/options.ts'

/** Default build options. */
export const buildDefaults = {
  dataDir: 'data',
  distDir: 'dist',
  baseUrl: 'http://localhost:3000',
  keepReleases: 3,
  /** Two: file reads and parsing keep both cores busy beside the main thread's inserts (bench/results/BUILD-PROFILE.md). */
  loadWorkers: 2,
} as const

/**
 * Resolves build options from overrides and an environment map (see README, "Configuration");
 * throws ConfigError naming the variable when a setting is not one of its allowed values.
 */
export function resolveBuildOptions(
  overrides: Partial<BuildOptions> = {},
  env: Record<string, string | undefined> = {},
): BuildOptions {
  const baseUrl = (overrides.baseUrl ?? envText(env, 'BASE_URL') ?? buildDefaults.baseUrl).replace(/\/+$/, '')
  const distDir = path.resolve(overrides.distDir ?? envText(env, 'DIST_DIR') ?? buildDefaults.distDir)
  const dataDir = path.resolve(overrides.dataDir ?? envText(env, 'DATA_DIR') ?? buildDefaults.dataDir)
  return {
    dataDir,
    distDir,
    baseUrl,
    filesBaseUrl: (overrides.filesBaseUrl ?? envText(env, 'FILES_BASE_URL') ?? '/objects').replace(/\/+$/, ''),
    keepReleases: overrides.keepReleases ?? envInt(env, 'KEEP_RELEASES', buildDefaults.keepReleases, 1),
    countersFile: overrides.countersFile !== undefined ? overrides.countersFile : path.resolve(envText(env, 'COUNTERS_FILE') ?? path.join(distDir, 'counters.sqlite')),
    sourceRevision: overrides.sourceRevision ?? envText(env, 'SOURCE_REVISION') ?? null,
    loadWorkers: overrides.loadWorkers ?? envInt(env, 'BUILD_LOAD_WORKER', buildDefaults.loadWorkers, 0, 4),
    writeWorker: overrides.writeWorker ?? envSwitch(env, 'BUILD_WRITE_WORKER'),
    searchWorker: overrides.searchWorker ?? envSwitch(env, 'BUILD_SEARCH_WORKER'),
    stagingCache: overrides.stagingCache ?? envSwitch(env, 'BUILD_STAGING_CACHE'),
    changedFiles: overrides.changedFiles !== undefined ? overrides.changedFiles : changedFilesFrom(env, dataDir),
    recycle: overrides.recycle ?? envSwitch(env, 'BUILD_RECYCLE'),
    release: resolveReleaseOptions(overrides.release, env),
    log: overrides.log ?? ((line) => process.stderr.write(line + '\n')),
  }
}

/** The record files BUILD_CHANGED_FILES names (list-sources.ts readChangedFiles), or null when unset. */
function changedFilesFrom(env: Record<string, string | undefined>, dataDir: string): NamedSource[] | null {
  const file = env.BUILD_CHANGED_FILES
  if (file === undefined || file === '') return null
  try {
    return readChangedFiles(path.resolve(file), dataDir, recordPatterns)
  } catch (err) {
    throw new ConfigError(`BUILD_CHANGED_FILES: ${(err as Error).message}`)
  }
}
