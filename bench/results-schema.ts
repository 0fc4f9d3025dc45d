/**
 * The shape of bench/results/serve.json: the single source of what the Markdown report and the SVG
 * chart read, and what a re-run is compared with.
 */
import { z } from 'zod'
import { wrkRunSchema } from './wrk.ts'

const range = z.object({ median: z.number(), min: z.number(), max: z.number(), spreadPct: z.number() })

/** One server in one scenario: every repetition plus the summaries. */
export const serverRowSchema = z.object({
  server: z.string(),
  reps: z.array(wrkRunSchema.extend({ serverCpuPct: z.number(), ratioVsRaw: z.number().nullable() })),
  rps: range,
  /** Median of the per-repetition ratios rps(server) / rps(raw node) of the same repetition. */
  ratioVsRaw: range.nullable(),
  p50Ms: z.number(),
  p99Ms: range,
  serverCpuPct: z.number(),
  /** Server CPU time per request in µs (median of repetitions): steadier than req/s on a busy machine. */
  serverCpuUsPerRequest: z.number(),
  wrkCpuPct: z.number(),
  errors: z.number(),
  bytesPerResponse: z.number(),
})
export type ServerRow = z.infer<typeof serverRowSchema>

/** A scenario (same URLs, one request shape) measured on one or more servers. */
export const scenarioSchema = z.object({
  name: z.string(),
  description: z.string(),
  connections: z.number(),
  durationSeconds: z.number(),
  rows: z.array(serverRowSchema),
})
export type Scenario = z.infer<typeof scenarioSchema>

/** A goal and whether the figures meet it. */
export const goalSchema = z.object({ goal: z.string(), measured: z.string(), met: z.boolean() })
export type Goal = z.infer<typeof goalSchema>

/** Memory and start-up of the shim. */
export const memorySchema = z.object({
  startMs: range,
  rssAfterStartMb: z.number(),
  /** Largest RSS sampled during the static reads alone (null when they did not run). */
  rssStaticMaxMb: z.number().nullable().default(null),
  rssUnderLoadMaxMb: z.number(),
  peakRssMb: z.number(),
  cacheBytes: z.number(),
})

/** The whole results file. */
export const serveResultsSchema = z.object({
  date: z.string(),
  catalog: z.object({ distDir: z.string(), release: z.string(), projects: z.number(), versions: z.number(), files: z.number(), users: z.number() }),
  machine: z.object({ nproc: z.number(), memoryGb: z.number(), cpuModel: z.string(), kernel: z.string() }),
  versions: z.object({ node: z.string(), nginx: z.string(), wrk: z.string(), h3: z.string() }),
  method: z.object({
    repetitions: z.number(),
    durationSeconds: z.number(),
    connections: z.number(),
    wrkThreads: z.number(),
    zipfExponent: z.number(),
    notes: z.array(z.string()),
  }),
  staticWorkload: z.object({
    requests: z.number(),
    kinds: z.record(z.string(), z.number()),
    distinctUrls: z.number(),
    distinctBytes: z.number(),
    top1PctShare: z.number(),
  }),
  scenarios: z.array(scenarioSchema),
  memory: memorySchema.nullable(),
  goals: z.array(goalSchema),
})
export type ServeResults = z.infer<typeof serveResultsSchema>
