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
    loadWorker: overrides.loadWorker ?? env.BUILD_LOAD_WORKER !== '0',
    writeWorker: overrides.writeWorker ?? env.BUILD_WRITE_WORKER !== '0',
    release: resolveReleaseOptions(overrides.release, env),
    log: overrides.log ?? ((line) => process.stderr.write(line + '\n')),
  }
}
