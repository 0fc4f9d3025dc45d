/**
 * Renders a project's version records, one at a time, with their files and dependencies.
 */
import { createHash } from 'node:crypto'
import type { SourceDependency, SourceFile, SourceVersion } from '../schema/source.ts'
import { getVersionId, renderDate, type GenerateContext } from './context.ts'
import { renderId } from './ids.ts'
import type { ProjectPlan } from './plan.ts'
import type { Random } from './random.ts'
import type { GameVersionRef } from './reference.ts'
import { renderChangelog } from './text.ts'

/** Semantic version state of a project, bumped before every version after the first. */
export type VersionCursor = { major: number; minor: number; patch: number }

const SNAPSHOT_WINDOW_MS = 60 * 86_400_000
/** Median size (bytes) and spread of primary files per type. */
const SIZES = { mod: [250_000, 1.1, 4_000], map: [8_000_000, 1.0, 50_000], skin: [4_000, 0.6, 500] } as const
const SECONDARY = { mod: 'sources', map: 'bedrock', skin: 'slim' } as const

/** Creates the version cursor of a project. */
export function createVersionCursor(rng: Random): VersionCursor {
  return rng.chance(0.5) ? { major: 0, minor: 1, patch: 0 } : { major: 1, minor: 0, patch: 0 }
}

function bumpVersion(rng: Random, cursor: VersionCursor): void {
  const r = rng.next()
  if (r < 0.7) cursor.patch++
  else if (r < 0.95) Object.assign(cursor, { minor: cursor.minor + 1, patch: 0 })
  else Object.assign(cursor, { major: cursor.major + 1, minor: 0, patch: 0 })
}

/** Index of the newest of `list` released at or before `ms` (-1 if none). */
function findLatest(list: readonly GameVersionRef[], ms: number): number {
  let lo = 0
  let hi = list.length - 1
  let found = -1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    if ((list[mid] as GameVersionRef).releasedMs <= ms) {
      found = mid
      lo = mid + 1
    } else hi = mid - 1
  }
  return found
}

/** Game versions of a version made at `ms`: recent releases (a snapshot for some alphas), all released before `ms`. */
function pickGameVersions(ctx: GenerateContext, rng: Random, plan: ProjectPlan, ms: number, channel: string): string[] {
  const { releases, gameVersions } = ctx.reference
  if (channel === 'alpha' && plan.type !== 'skin') {
    const s = findLatest(gameVersions, ms)
    const snapshot = gameVersions[s]
    if (snapshot && snapshot.type === 'snapshot' && ms - snapshot.releasedMs < SNAPSHOT_WINDOW_MS) return [snapshot.version]
  }
  const latest = Math.max(0, findLatest(releases, ms))
  const newest = plan.type === 'skin' ? latest : Math.max(0, latest - rng.pickWeighted([[0, 50], [1, 25], [2, 15], [3, 10]]))
  const count = plan.type === 'skin' ? rng.int(3, 8) : rng.pickWeighted([[1, 60], [2, 25], [3, 15]])
  return releases.slice(Math.max(0, newest - count + 1), newest + 1).map((v) => v.version)
}

function renderFile(ctx: GenerateContext, filename: string, size: number, primary: boolean): SourceFile {
  const counter = ctx.counters.files++
  const input = `${ctx.seed}:${counter}`
  return {
    id: renderId(ctx.idKeys.file, counter),
    filename,
    primary,
    size,
    sha256: createHash('sha256').update(input).digest('hex'),
    sha1: createHash('sha1').update(input).digest('hex'),
  }
}

/** One primary file and, for about one version in five, a secondary (sources jar, Bedrock world, slim skin). */
function renderFiles(ctx: GenerateContext, rng: Random, plan: ProjectPlan, versionNumber: string): SourceFile[] {
  const type = ctx.reference.types.get(plan.type)
  if (!type) throw new Error(`unknown type ${plan.type}`)
  const [median, spread, min] = SIZES[plan.type]
  const size = Math.min(type.maxFileSize, Math.max(min, Math.floor(median * Math.exp(spread * rng.normal()))))
  const base = `${plan.slug}-${versionNumber}`
  const [ext = '', secondExt] = type.fileExtensions
  const files = [renderFile(ctx, base + ext, size, true)]
  if (rng.chance(0.2)) {
    const name = secondExt ? base + secondExt : `${base}-${SECONDARY[plan.type]}${ext}`
    const second = Math.min(type.maxFileSize, Math.max(min, Math.floor(size * (0.3 + rng.next() * 0.6))))
    files.push(renderFile(ctx, name, second, false))
  }
  return files
}

function renderDependencies(rng: Random, plan: ProjectPlan): SourceDependency[] {
  const out: SourceDependency[] = []
  for (const { dependency, share, pinned } of plan.dependencies) {
    if (!rng.chance(share)) continue
    out.push(pinned ? { type: dependency.type, projectId: dependency.projectId, versionId: pinned } : dependency)
  }
  return out
}

/** Renders version `k` of a plan; call with k = 0, 1, 2, … in order. */
export function renderVersionRecord(ctx: GenerateContext, plan: ProjectPlan, cursor: VersionCursor, k: number): SourceVersion {
  const rng = plan.rng
  if (k > 0) bumpVersion(rng, cursor)
  const channel = rng.pickWeighted([['stable', 85], ['beta', 10], ['alpha', 5]] as const)
  const status = rng.pickWeighted([['published', 97], ['draft', 2], ['withheld', 1]] as const)
  const created = plan.created[k] as number
  const gameVersions = pickGameVersions(ctx, rng, plan, created, channel)
  const base = `${cursor.major}.${cursor.minor}.${cursor.patch}`
  const pre = channel === 'stable' ? '' : `-${channel}.${rng.int(1, 4)}`
  const versionNumber = plan.type === 'mod' ? `${base}${pre}+mc${gameVersions[gameVersions.length - 1]}` : base + pre
  const allowed = plan.platforms
  const platforms = allowed.length > 1 && rng.chance(0.3) ? [rng.pick(allowed)] : allowed
  const name = rng.pick([`${plan.name} ${versionNumber}`, `v${base}${pre}`, `${base}${pre} for ${gameVersions[0]}`])
  return {
    id: getVersionId(ctx, plan.index, k),
    projectId: plan.id,
    versionNumber,
    name: name.slice(0, 100),
    channel,
    status,
    gameVersions,
    platforms,
    downloads: status === 'draft' ? 0 : (plan.downloads[k] as number),
    changelog: rng.chance(0.85) ? renderChangelog(rng) : '',
    createdAt: renderDate(created),
    publishedAt: status === 'draft' ? null : renderDate(plan.published[k] as number),
    files: renderFiles(ctx, rng, plan, versionNumber),
    dependencies: plan.type === 'skin' ? [] : renderDependencies(rng, plan),
  }
}
