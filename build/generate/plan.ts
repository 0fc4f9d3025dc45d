/**
 * The plan of one project: everything its project.json and version records share (identity,
 * timeline, popularity, platforms, dependencies). It is small, so one project is held at a time.
 */
import {
  DAY_MS,
  END_MS,
  getProjectId,
  getProjectType,
  getUserJoinedMs,
  getVersionId,
  type GenerateContext,
} from './context.ts'
import { renderProjectName } from './names.ts'
import { createRandom, type Random } from './random.ts'
import type { ProjectType } from './reference.ts'
import { libraryNames } from './words.ts'
import type { projectStatuses, SourceDependency } from '../schema/source.ts'

/** A dependency every version of a project may declare. */
export type PlannedDependency = { dependency: SourceDependency; share: number; pinned?: string }

/** One project's shared facts; versions are rendered from it one by one. */
export type ProjectPlan = {
  index: number
  id: string
  type: ProjectType
  name: string
  slug: string
  words: readonly string[]
  rng: Random
  authorIndex: number
  status: (typeof projectStatuses)[number]
  versionCount: number
  /** createdAt and publishedAt of each version (ms), increasing. */
  created: Float64Array
  published: Float64Array
  /** Share of the project's downloads per version. */
  downloads: Float64Array
  projectCreatedMs: number
  platforms: string[]
  dependencies: PlannedDependency[]
}

const START_MS = Date.parse('2016-01-01T00:00:00Z')
const MIN_GAP_MS = 60_000
const PLATFORM_WEIGHTS: Record<string, number> = { fabric: 45, forge: 30, neoforge: 17, quilt: 8, java: 70, bedrock: 30, classic: 60, slim: 40 }

/** Number of versions: mostly 1–15, ~1% with 50–300, the planned huge ones 2,000–5,000. */
function planVersionCount(ctx: GenerateContext, rng: Random, index: number): number {
  if (ctx.hugeProjects.has(index)) return rng.int(2000, 5000)
  if (rng.chance(0.01)) return rng.int(50, 300)
  return Math.min(49, 1 + Math.floor(-Math.log(1 - rng.next()) * 7.1))
}

/** Zipf by index (popular projects come first, and are the ones others depend on), with noise. */
function planDownloads(rng: Random, index: number): number {
  return Math.floor((6e7 / Math.pow(index + 1, 1.25)) * Math.exp(0.5 * rng.normal()))
}

/** Picks earlier mods for dependencies, biased towards the popular (low-index) ones. */
function pickEarlierMods(ctx: GenerateContext, rng: Random, index: number, count: number, taken: Set<number>): number[] {
  const found: number[] = []
  for (let attempt = 0; attempt < count * 6 && found.length < count && index > 0; attempt++) {
    const j = Math.floor(index * Math.pow(rng.next(), 3))
    if (!taken.has(j) && getProjectType(ctx, j) === 'mod') {
      taken.add(j)
      found.push(j)
    }
  }
  return found
}

/** Plans the dependencies of a project; versions each keep a share of them. */
function planDependencies(ctx: GenerateContext, rng: Random, index: number, type: ProjectType): PlannedDependency[] {
  const planned: PlannedDependency[] = []
  const taken = new Set<number>()
  const isMod = type === 'mod'
  const kinds = [
    ['required', isMod && rng.chance(0.45) ? rng.int(1, 3) : rng.chance(0.03) ? 1 : 0, 0.95],
    ['optional', isMod && rng.chance(0.2) ? rng.int(1, 2) : 0, 0.8],
    ['incompatible', isMod && rng.chance(0.05) ? 1 : 0, 0.9],
  ] as const
  for (const [kind, count, share] of kinds) {
    for (const j of pickEarlierMods(ctx, rng, index, count, taken)) {
      const pinned = kind === 'required' && rng.chance(0.1) ? getVersionId(ctx, j, 0) : undefined
      planned.push({ dependency: { type: kind, projectId: getProjectId(ctx, j) }, share, pinned })
    }
  }
  if (isMod && rng.chance(0.15)) {
    for (const lib of [rng.pick(libraryNames), ...(rng.chance(0.3) ? [rng.pick(libraryNames)] : [])]) {
      const id = `io.github.${lib}:${lib}:${rng.int(1, 4)}.${rng.int(0, 12)}.${rng.int(0, 9)}`
      if (!planned.some((p) => p.dependency.external?.id === id)) {
        planned.push({ dependency: { type: 'embedded', external: { source: 'maven', id } }, share: 0.9 })
      }
    }
  }
  if (isMod && rng.chance(0.03)) {
    const external = { source: 'curseforge', id: String(rng.int(200_000, 1_199_999)) }
    planned.push({ dependency: { type: 'required', external }, share: 0.9 })
  }
  return planned
}

/** Picks the project's platforms (loaders, editions or models) among those its type allows. */
function planPlatforms(ctx: GenerateContext, rng: Random, type: ProjectType): string[] {
  const allowed = ctx.reference.types.get(type)?.platforms ?? []
  const weighted = allowed.map((p) => [p, PLATFORM_WEIGHTS[p] ?? 10] as const)
  const chosen = new Set([rng.pickWeighted(weighted)])
  if (allowed.length > 1 && rng.chance(0.3)) chosen.add(rng.pickWeighted(weighted))
  return allowed.filter((p) => chosen.has(p))
}

/** Spreads the versions over the project's active period: increasing, each published before the next. */
function planTimeline(ctx: GenerateContext, rng: Random, plan: ProjectPlan): void {
  const n = plan.versionCount
  const firstRelease = (ctx.reference.releases[0]?.releasedMs ?? START_MS) + DAY_MS
  const lower = Math.max(START_MS, firstRelease, getUserJoinedMs(ctx, plan.authorIndex) + DAY_MS)
  const upper = END_MS - 7 * DAY_MS - n * MIN_GAP_MS
  const early = n >= 50 ? 0.4 : 1
  const start = Math.min(upper, lower + rng.next() * early * Math.max(0, upper - lower))
  const end = start + (upper - start) * (n === 1 ? 0 : 0.15 + 0.85 * rng.next())
  const created = plan.created
  for (let k = 0; k < n; k++) created[k] = k === 0 ? start : start + rng.next() * (end - start)
  created.sort()
  for (let k = 0; k < n; k++) {
    const t = Math.floor((created[k] as number) / 1000) * 1000
    created[k] = k === 0 ? t : Math.max(t, (created[k - 1] as number) + MIN_GAP_MS)
  }
  for (let k = 0; k < n; k++) {
    const t = created[k] as number
    const gap = (k + 1 < n ? (created[k + 1] as number) : END_MS) - t
    plan.published[k] = t + Math.floor((rng.next() * Math.min(2 * 3600_000, gap / 2)) / 1000) * 1000
  }
  plan.projectCreatedMs = Math.max(lower - DAY_MS / 2, (created[0] as number) - Math.floor(rng.next() * 14 * DAY_MS / 1000) * 1000)
}

/** Plans project `index`; advances the per-type name counter of the context. */
export function planProject(ctx: GenerateContext, index: number): ProjectPlan {
  const rng = createRandom(`${ctx.seed}\u0000project\u0000${index}`)
  const type = getProjectType(ctx, index)
  const { name, slug, words } = renderProjectName(ctx.projectNames[type], ctx.counters.names[type]++)
  const versionCount = planVersionCount(ctx, rng, index)
  const plan: ProjectPlan = {
    index,
    id: getProjectId(ctx, index),
    type,
    name,
    slug,
    words,
    rng,
    authorIndex: Math.floor(ctx.developerCount * Math.pow(rng.next(), 1.6)),
    status: rng.pickWeighted([['published', 96], ['draft', 1], ['private', 1], ['archived', 1], ['withheld', 1]]),
    versionCount,
    created: new Float64Array(versionCount),
    published: new Float64Array(versionCount),
    downloads: new Float64Array(versionCount),
    projectCreatedMs: 0,
    platforms: planPlatforms(ctx, rng, type),
    dependencies: planDependencies(ctx, rng, index, type),
  }
  planTimeline(ctx, rng, plan)
  const total = planDownloads(rng, index)
  let weightSum = 0
  for (let k = 0; k < versionCount; k++) {
    const w = Math.exp(0.8 * rng.normal()) * (1 + k / versionCount)
    plan.downloads[k] = w
    weightSum += w
  }
  for (let k = 0; k < versionCount; k++) plan.downloads[k] = Math.floor((total * (plan.downloads[k] as number)) / weightSum)
  return plan
}
