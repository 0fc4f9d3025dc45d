/**
 * Deterministic generator of large source catalogs (data/README.md format) for benchmarks.
 * It streams: one project and its versions are generated and written at a time, so memory stays
 * flat whatever the size. The same options write byte-identical files.
 */
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { removeTree } from './remove-tree.ts'
import { createGenerateContext } from './generate/context.ts'
import { planProject } from './generate/plan.ts'
import { renderProjectRecord } from './generate/project.ts'
import { loadReference, writeReference } from './generate/reference.ts'
import { renderUserRecord } from './generate/user.ts'
import { createVersionCursor, renderVersionRecord } from './generate/version.ts'
import { createFileWriter } from './generate/writer.ts'

/** Options of a generation run. */
export type GenerateOptions = {
  /** Number of projects; users are half as many (rounded up). */
  projects: number
  seed: string
  /** Output folder: created, or must be empty unless `force`. */
  out: string
  /** Source catalog whose catalog.json and reference/** are copied and used. */
  reference: string
  /** Write into a non-empty folder, first deleting its catalog.json, reference/, users/ and projects/. */
  force: boolean
  /** Writes in flight at once; 0 writes synchronously. */
  concurrency: number
  /** Generate and count without touching the disk. */
  dryRun: boolean
  /** Receives a progress line every `progressIntervalMs`. */
  onProgress?: (line: string) => void
  progressIntervalMs: number
}

/** Counts of a finished run. */
export type GenerateSummary = {
  projects: number
  versions: number
  files: number
  users: number
  /** Files written, including the copied reference data. */
  written: number
  /** Bytes of the generated JSON records. */
  bytes: number
  seconds: number
}

/** Defaults of every option but `out`. */
export const generateDefaults = {
  projects: 1000,
  seed: 'blockworks',
  reference: fileURLToPath(new URL('../data/', import.meta.url)),
  force: false,
  concurrency: 0,
  dryRun: false,
  progressIntervalMs: 3000,
} as const satisfies Omit<GenerateOptions, 'out'>

/** Fills in defaults and checks the options. */
export function resolveGenerateOptions(input: Partial<GenerateOptions> & { out: string }): GenerateOptions {
  const options: GenerateOptions = { ...generateDefaults, ...input, out: resolve(input.out) }
  options.reference = resolve(options.reference)
  if (!Number.isInteger(options.projects) || options.projects < 1 || options.projects > 100_000_000) {
    throw new Error(`--projects must be an integer from 1 to 100000000, got ${options.projects}`)
  }
  if (options.seed.length === 0) throw new Error('--seed must not be empty')
  if (!Number.isInteger(options.concurrency) || options.concurrency < 0) {
    throw new Error(`--concurrency must be a non-negative integer, got ${options.concurrency}`)
  }
  return options
}

/** Creates the output folder, refusing a non-empty one unless forced. */
function prepareOutDir(options: GenerateOptions): void {
  const { out } = options
  if (existsSync(out) && readdirSync(out).length > 0) {
    if (!options.force) throw new Error(`${out} is not empty; pass --force to replace the catalog in it`)
    // Only what a catalog consists of, so a mistyped --out cannot wipe an unrelated folder.
    for (const name of ['catalog.json', 'reference', 'users', 'projects']) {
      removeTree(join(out, name))
    }
  }
  mkdirSync(join(out, 'users'), { recursive: true })
  mkdirSync(join(out, 'projects'), { recursive: true })
}

const toJson = (record: unknown): string => JSON.stringify(record, null, 2) + '\n'

/** Renders a one-line summary of a run. */
export function formatGenerateSummary(s: GenerateSummary): string {
  const n = (x: number): string => x.toLocaleString('en-US')
  return (
    `Generated ${n(s.projects)} projects, ${n(s.versions)} versions, ${n(s.files)} files, ${n(s.users)} users ` +
    `(${n(s.written)} files written, ${(s.bytes / 1e6).toFixed(1)} MB) in ${s.seconds.toFixed(1)}s`
  )
}

/** Generates a catalog into `options.out` and returns its counts. */
export async function generateCatalog(options: GenerateOptions): Promise<GenerateSummary> {
  const started = performance.now()
  const reference = loadReference(options.reference)
  const ctx = createGenerateContext(options.seed, options.projects, reference)
  const writer = createFileWriter(options.concurrency, options.dryRun)
  let written = 0
  if (!options.dryRun) {
    prepareOutDir(options)
    written += writeReference(options.reference, options.out)
  }
  const usersDir = join(options.out, 'users')
  for (let u = 0; u < ctx.userCount; u++) {
    const user = renderUserRecord(ctx, u)
    await writer.write(join(usersDir, `${user.username}.json`), toJson(user))
  }
  let versions = 0
  let lastReport = performance.now()
  let lastFiles = 0
  for (let i = 0; i < options.projects; i++) {
    const plan = planProject(ctx, i)
    const versionsDir = join(options.out, 'projects', plan.slug, 'versions')
    if (!options.dryRun) mkdirSync(versionsDir, { recursive: true })
    await writer.write(join(options.out, 'projects', plan.slug, 'project.json'), toJson(renderProjectRecord(ctx, plan)))
    const cursor = createVersionCursor(plan.rng)
    for (let k = 0; k < plan.versionCount; k++) {
      const version = renderVersionRecord(ctx, plan, cursor, k)
      await writer.write(join(versionsDir, `${version.versionNumber}.json`), toJson(version))
    }
    versions += plan.versionCount
    const now = performance.now()
    if (options.onProgress && now - lastReport >= options.progressIntervalMs) {
      const rate = ((writer.stats.files - lastFiles) * 1000) / (now - lastReport)
      options.onProgress(
        `generate: ${(i + 1).toLocaleString('en-US')}/${options.projects.toLocaleString('en-US')} projects, ` +
          `${writer.stats.files.toLocaleString('en-US')} files, ${Math.round(rate).toLocaleString('en-US')} files/s`,
      )
      lastReport = now
      lastFiles = writer.stats.files
    }
  }
  await writer.flush()
  return {
    projects: options.projects,
    versions,
    files: ctx.counters.files,
    users: ctx.userCount,
    written: written + writer.stats.files,
    bytes: writer.stats.bytes,
    seconds: (performance.now() - started) / 1000,
  }
}
