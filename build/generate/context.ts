/**
 * The generator's context: options, reference data and the few counters that run across
 * projects. Everything else about a project is re-derived from (seed, index) when needed, e.g.
 * the type and id of an earlier project a version depends on.
 */
import { createIdKey, idKinds, renderId, VERSION_SLOTS, type IdKey, type IdKind } from './ids.ts'
import { createProjectNameSchemes, createUserNameScheme, type NameScheme } from './names.ts'
import { createRandom, hashString, hashUnit } from './random.ts'
import type { ProjectType, Reference } from './reference.ts'

/** Fixed "now" of every generated catalog: dates never depend on the clock. */
export const END_MS = Date.parse('2025-09-30T00:00:00Z')
/** Earliest join date of a user. */
const FIRST_JOIN_MS = Date.parse('2013-01-01T00:00:00Z')
const LAST_JOIN_MS = Date.parse('2025-06-01T00:00:00Z')
const DAY_MS = 86_400_000
/** Share of each type among projects (normalised over the enabled types). */
const TYPE_WEIGHTS: Record<ProjectType, number> = { mod: 0.75, map: 0.12, skin: 0.13 }
/** Salts of `hashUnit` for traits that must be re-derivable. */
const SALT_TYPE = 1
const SALT_JOINED = 2

/** Generator state shared by all steps. */
export type GenerateContext = {
  seed: string
  projectCount: number
  userCount: number
  /** Users 0..developerCount-1 may own projects; the rest only browse. */
  developerCount: number
  reference: Reference
  idKeys: Record<IdKind, IdKey>
  projectNames: Record<ProjectType, NameScheme>
  userNames: NameScheme
  /** Indexes of the few projects with thousands of versions. */
  hugeProjects: ReadonlySet<number>
  traitKey: number
  typeTable: readonly (readonly [ProjectType, number])[]
  /** Running counters: per-type name ordinals and global file/screenshot counters. */
  counters: { names: Record<ProjectType, number>; files: number; screenshots: number }
}

/** Creates the context of one generation run. */
export function createGenerateContext(seed: string, projectCount: number, reference: Reference): GenerateContext {
  const userCount = Math.ceil(projectCount / 2)
  const rng = createRandom(`${seed}\u0000plan`)
  const hugeCount = projectCount >= 1000 ? Math.max(1, Math.round(projectCount * 0.0002)) : 0
  // Huge projects are among the popular (low-index) ones, like a loader API with nightly builds.
  const hugePool = Math.max(hugeCount, Math.ceil(projectCount * 0.05))
  const hugeProjects = new Set<number>()
  while (hugeProjects.size < hugeCount) hugeProjects.add(Math.floor(rng.next() * hugePool))
  let total = 0
  const typeTable: [ProjectType, number][] = []
  for (const type of reference.types.keys()) {
    total += TYPE_WEIGHTS[type]
    typeTable.push([type, total])
  }
  for (const row of typeTable) row[1] /= total
  const idKeys = Object.fromEntries(idKinds.map((kind) => [kind, createIdKey(seed, kind)])) as Record<IdKind, IdKey>
  return {
    seed,
    projectCount,
    userCount,
    developerCount: Math.max(1, Math.floor(userCount * 0.6)),
    reference,
    idKeys,
    projectNames: createProjectNameSchemes(seed),
    userNames: createUserNameScheme(seed),
    hugeProjects,
    traitKey: hashString(`${seed}\u0000traits`)[0],
    typeTable,
    counters: { names: { mod: 0, map: 0, skin: 0 }, files: 0, screenshots: 0 },
  }
}

/** The type of project `index`, re-derivable at any time. */
export function getProjectType(ctx: GenerateContext, index: number): ProjectType {
  if (ctx.hugeProjects.has(index) && ctx.reference.types.has('mod')) return 'mod'
  const u = hashUnit(ctx.traitKey, SALT_TYPE, index)
  for (const [type, upTo] of ctx.typeTable) if (u < upTo) return type
  return (ctx.typeTable[ctx.typeTable.length - 1] as [ProjectType, number])[0]
}

/** The id of project `index`. */
export function getProjectId(ctx: GenerateContext, index: number): string {
  return renderId(ctx.idKeys.project, index)
}

/** The id of the `k`-th version of project `index`. */
export function getVersionId(ctx: GenerateContext, index: number, k: number): string {
  return renderId(ctx.idKeys.version, index * VERSION_SLOTS + k)
}

/** The id of user `index`. */
export function getUserId(ctx: GenerateContext, index: number): string {
  return renderId(ctx.idKeys.user, index)
}

/** When user `index` joined (ms), re-derivable so projects can start after their owner joined. */
export function getUserJoinedMs(ctx: GenerateContext, index: number): number {
  const u = hashUnit(ctx.traitKey, SALT_JOINED, index)
  // Skewed towards recent years, as the user base grows.
  const t = FIRST_JOIN_MS + Math.sqrt(u) * (LAST_JOIN_MS - FIRST_JOIN_MS)
  return Math.floor(t / 1000) * 1000
}

/** Rounds a time to whole seconds and renders it as `2024-03-01T12:00:00Z`. */
export function renderDate(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z')
}

export { DAY_MS }
