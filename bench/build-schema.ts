/** The shape of bench/results/build.json: what build.md is rendered from and a re-run is compared with. */
import { z } from 'zod'
import { goalSchema } from './results-schema.ts'

/** Seconds spent in each phase of one build, from its progress lines (null: the line was not printed). */
export const phasesSchema = z.object({
  load: z.number().nullable(),
  /** Staging indexes, cross-record validation, the catalog database and its search index. */
  catalog: z.number().nullable(),
  /** Rendering and writing the static tree (bodies, hard links, content store, manifest lines). */
  render: z.number().nullable(),
  manifest: z.number().nullable(),
  snapshot: z.number().nullable(),
  archive: z.number().nullable(),
  sync: z.number().nullable(),
  /** Pointer, rename, pruning of old releases and of the store. */
  publish: z.number().nullable(),
})
export type Phases = z.infer<typeof phasesSchema>

/**
 * One measured build. `incremental`: the first rebuild of a fresh dist (release 2, nothing to
 * recycle); `recycled`: the next one (release 3, written over the tree of release 1, which
 * KEEP_RELEASES=2 would remove: build/release/recycle.ts), as every later rebuild is.
 */
export const buildRunSchema = z.object({
  kind: z.enum(['full', 'incremental', 'recycled']),
  wallSeconds: z.number(),
  /** User + system CPU of the build process and the children it waited for. */
  cpuSeconds: z.number(),
  /** VmHWM of the build process. */
  peakRssMb: z.number(),
  /** Largest sum of VmRSS over the build process and its descendants (workers, sort), sampled every 200 ms; 0 in results from before it was measured. */
  peakTreeRssMb: z.number().default(0),
  /** When peakTreeRssMb was sampled: seconds from the start, and the build's last progress line before it; absent in results from before it was recorded. */
  peakTreeRssAt: z.object({ seconds: z.number(), afterLine: z.string() }).nullable().optional(),
  phases: phasesSchema,
  /** CPU seconds (user + system, all threads) of each phase, from the same lines. */
  phasesCpu: phasesSchema,
  release: z.string(),
  /** Names in the release (URLs), distinct bodies, their bytes, and bodies this build wrote. */
  files: z.number(),
  bodies: z.number(),
  bodyBytes: z.number(),
  bodiesWritten: z.number().nullable(),
  /** Source record files the load read: null when it read them all (no staging kept, build/staging-cache.ts); optional in results of older commits. */
  recordFilesRead: z.number().nullable().optional(),
  /** Whether the load took the changed files from a list (BUILD_CHANGED_FILES) instead of listing the data folder; optional in results of older commits. */
  changedFilesNamed: z.boolean().optional(),
  changes: z.object({ added: z.number(), changed: z.number(), removed: z.number(), unchanged: z.number() }),
  /** Names per second of the render phase (each a new file or hard link). */
  filesPerSecond: z.number().nullable(),
  /** `du` of the new release folder alone, and of the whole dist (hard links counted once). */
  releaseDiskMb: z.number().nullable(),
  distDiskMb: z.number().nullable(),
  catalogSqliteMb: z.number(),
  snapshotMb: z.number().nullable(),
  archiveMb: z.number().nullable(),
})
export type BuildRun = z.infer<typeof buildRunSchema>

/** The whole results file. */
export const buildResultsSchema = z.object({
  date: z.string(),
  machine: z.object({ nproc: z.number(), memoryGb: z.number(), cpuModel: z.string(), kernel: z.string(), loadAverage: z.array(z.number()) }),
  versions: z.object({ node: z.string(), sqlite: z.string(), commit: z.string().nullable() }),
  catalog: z.object({
    dir: z.string(),
    projects: z.number(),
    versions: z.number(),
    files: z.number(),
    users: z.number(),
    sourceFiles: z.number(),
    /** Seconds to generate it, when this run generated it. */
    generatedSeconds: z.number().nullable(),
  }),
  mutation: z.object({ percent: z.number(), seed: z.string(), editedProjects: z.number(), editedVersions: z.number() }).nullable(),
  runs: z.array(buildRunSchema),
  /** decided false: measured on a smaller catalog than the goal is for, so neither met nor missed. */
  goals: z.array(goalSchema.extend({ decided: z.boolean().default(true) })),
  notes: z.array(z.string()),
})
export type BuildResults = z.infer<typeof buildResultsSchema>
