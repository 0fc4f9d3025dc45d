/** Defaults of a build and their resolution from the environment (read only by build/cli.ts). */
import path from 'node:path'
import type { BuildOptions } from './context.ts'
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

/** Resolves build options from overrides and an environment map (see README, "Configuration"). */
export function resolveBuildOptions(
  overrides: Partial<BuildOptions> = {},
  env: Record<string, string | undefined> = {},
): BuildOptions {
  const baseUrl = (overrides.baseUrl ?? env.BASE_URL ?? buildDefaults.baseUrl).replace(/\/+$/, '')
  const distDir = path.resolve(overrides.distDir ?? env.DIST_DIR ?? buildDefaults.distDir)
  const keep = Number(env.KEEP_RELEASES ?? buildDefaults.keepReleases)
  return {
    dataDir: path.resolve(overrides.dataDir ?? env.DATA_DIR ?? buildDefaults.dataDir),
    distDir,
    baseUrl,
    filesBaseUrl: (overrides.filesBaseUrl ?? env.FILES_BASE_URL ?? '/objects').replace(/\/+$/, ''),
    keepReleases: overrides.keepReleases ?? (Number.isInteger(keep) && keep > 0 ? keep : buildDefaults.keepReleases),
    countersFile: overrides.countersFile !== undefined ? overrides.countersFile : path.resolve(env.COUNTERS_FILE ?? path.join(distDir, 'counters.sqlite')),
    sourceRevision: overrides.sourceRevision ?? env.SOURCE_REVISION ?? null,
    loadWorkers: overrides.loadWorkers ?? resolveLoadWorkers(env.BUILD_LOAD_WORKER),
    writeWorker: overrides.writeWorker ?? env.BUILD_WRITE_WORKER !== '0',
    release: resolveReleaseOptions(overrides.release, env),
    log: overrides.log ?? ((line) => process.stderr.write(line + '\n')),
  }
}

/** Load workers from BUILD_LOAD_WORKER: a count from 0 to 4, else the default. */
function resolveLoadWorkers(value: string | undefined): number {
  const n = Number(value)
  return value !== undefined && value !== '' && Number.isInteger(n) && n >= 0 && n <= 4 ? n : buildDefaults.loadWorkers
}
