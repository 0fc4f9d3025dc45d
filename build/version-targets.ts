/**
 * What each version of the catalog targets (table `version_targets`): its channel, game versions
 * and platforms, for update matching in memory. A 100-hash update check asks, for each file, the
 * newest version of its project that matches the filters (`gameVersion`, `platform`, `channel`).
 * Through SQLite that was a walk of the project's versions in the covering index
 * versions_project_rank, testing each row's JSON arrays: at the large catalog about 18 of a
 * project's 22 versions a hash (most projects have no version for the asked game version and
 * platform, so the walk reaches the end), over half the query's CPU. Here the walk is over a few
 * bytes a version held by the shim (bench/results/PROFILE.md, Session 25). With the catalog's hash
 * index (build/hash-index.ts) giving each file's candidate versions, the shim knows every answer's
 * rowid before SQLite reads anything, and then reads by rowid only the JSON of the hashes that have
 * an answer, to check their candidates and to send (shim/routes/version-files.ts, findUpdates;
 * Session 26).
 *
 * It relies on the catalog's order: the build inserts versions by project, newest first (rank 0),
 * so a project's versions are consecutive rowids in rank order; createVersionTargets refuses rows
 * in any other order. The newest match of a project is then the first matching rowid from its start.
 *
 * Few distinct targets are shared by many versions (a version's game versions are usually one
 * release line, its platforms one or two loaders): each distinct target is stored once, and each
 * version holds its target's number. At the large catalog, 935,738 versions over 96,006 projects:
 * 2 bytes a version and 4 a project, about 2.3 MB.
 *
 * Stored as one row:
 * - `starts`: each project's first version rowid, ascending, then one past the last version, as
 *   little-endian 32-bit numbers: project p's versions are the rowids from starts[p] to
 *   starts[p + 1] - 1, newest first;
 * - `targets`: each version's target number, from the rowid starts[0] on, as little-endian numbers
 *   of `target_width` bytes (2 while there are at most 65,536 targets, else 4);
 * - `target_starts` and `target_values`: target t's values are target_values[target_starts[t]] to
 *   target_values[target_starts[t + 1] - 1] (32-bit offsets; value numbers of `value_width` bytes, 2
 *   while there are at most 65,536 values, else 4);
 * - `value_names`: JSON `{"channel": [...], "gameVersion": [...], "platform": [...]}`; the values
 *   are numbered in that order, channels from 0.
 */
import { fromLittleEndian, littleEndian } from './little-endian.ts'

/** The three filters a target answers, in the order their values are numbered. */
const KINDS = ['channel', 'gameVersion', 'platform'] as const
type Kind = (typeof KINDS)[number]

/** A kind's bit in a filter's masks. */
const KIND_BIT: Record<Kind, number> = { channel: 1, gameVersion: 2, platform: 4 }

/** The targets as the shim holds them. */
export interface VersionTargets {
  starts: Uint32Array
  targets: Uint16Array | Uint32Array
  targetStarts: Uint32Array
  targetValues: Uint16Array | Uint32Array
  /** Each value's number by kind and name. */
  valueIds: Record<Kind, Map<string, number>>
  /** Each value's kind bit, by number. */
  valueKinds: Uint8Array
}

/** The filters of an update check: each list matches any of its values; lists AND together; an absent or empty list matches all. */
export interface TargetFilters {
  channel?: readonly string[] | undefined
  gameVersion?: readonly string[] | undefined
  platform?: readonly string[] | undefined
}

/** A filter made for one catalog's targets (compileTargetFilter). */
export interface TargetFilter {
  /** Each value's kind bit when the filter asks for it, else 0, by number. */
  wanted: Uint8Array
  /** The kind bits a target must have a wanted value of. */
  required: number
}

/** The filter of these lists over the catalog's values; a value the catalog has no version for matches nothing. */
export function compileTargetFilter(targets: VersionTargets, filters: TargetFilters): TargetFilter {
  const wanted = new Uint8Array(targets.valueKinds.length)
  let required = 0
  for (const kind of KINDS) {
    const values = filters[kind]
    if (values === undefined || values.length === 0) continue
    required |= KIND_BIT[kind]
    for (const value of values) {
      const id = targets.valueIds[kind].get(value)
      if (id !== undefined) wanted[id] = KIND_BIT[kind]
    }
  }
  return { wanted, required }
}

/** The project of a version (its index in `starts`), or -1 for a rowid of no version. */
function projectOf(starts: Uint32Array, rowid: number): number {
  const last = starts.length - 1
  if (last < 1 || rowid < starts[0]! || rowid >= starts[last]!) return -1
  let lo = 0
  let hi = last
  // The greatest p with starts[p] <= rowid.
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1
    if (starts[mid]! <= rowid) lo = mid
    else hi = mid
  }
  return lo
}

/**
 * The rowid of the newest version of `versionRowid`'s project that matches the filter (it may be
 * that version itself), or 0 when none does or the rowid is no version.
 */
export function newestMatching(targets: VersionTargets, filter: TargetFilter, versionRowid: number): number {
  const { starts, targets: of, targetStarts, targetValues } = targets
  const project = projectOf(starts, versionRowid)
  if (project < 0) return 0
  const { wanted, required } = filter
  if (required === 0) return starts[project]!
  const first = starts[0]!
  const end = starts[project + 1]!
  for (let rowid = starts[project]!; rowid < end; rowid++) {
    const target = of[rowid - first]!
    let found = 0
    for (let i = targetStarts[target]!, stop = targetStarts[target + 1]!; i < stop; i++) found |= wanted[targetValues[i]!]!
    if (found === required) return rowid
  }
  return 0
}

/** Above any kind's count of values (JavaScript's safe integers hold kind * KIND_TAG + number). */
const KIND_TAG = 2 ** 32

/** One version as the build reads it, in rowid order. */
export interface TargetRow {
  rowid: number
  projectId: string
  rank: number
  channel: string
  /** The JSON arrays as the catalog stores them. */
  gameVersions: string
  platforms: string
}

/** Targets filled by `add` in rowid order; `finish` gives the catalog's row. */
export function createVersionTargets(): { add(row: TargetRow): void; finish(): VersionTargetsRow } {
  const starts: number[] = []
  const versionTargets: number[] = []
  const targetNumbers = new Map<string, number>()
  const targetStarts: number[] = [0]
  const targetValues: number[] = []
  const names: Record<Kind, string[]> = { channel: [], gameVersion: [], platform: [] }
  const numbers: Record<Kind, Map<string, number>> = { channel: new Map(), gameVersion: new Map(), platform: new Map() }
  let previous: TargetRow | undefined
  const refuse = (row: TargetRow, why: string): Error => new Error(`version rowid ${row.rowid} (project ${row.projectId}) ${why}: the version targets need each project's versions as consecutive rowids, newest first`)
  /** A value's number within its kind; offset by the kinds before it in finish. */
  const valueOf = (kind: Kind, value: unknown): number => {
    if (typeof value !== 'string') throw new Error(`a version's ${kind} value ${JSON.stringify(value)} is not a string`)
    let id = numbers[kind].get(value)
    if (id === undefined) {
      id = names[kind].length
      numbers[kind].set(value, id)
      names[kind].push(value)
    }
    return id
  }
  return {
    add(row) {
      if (previous !== undefined && row.rowid !== previous.rowid + 1) throw refuse(row, `follows rowid ${previous.rowid}`)
      const sameProject = previous !== undefined && previous.projectId === row.projectId
      if (row.rank !== (sameProject ? previous!.rank + 1 : 0)) throw refuse(row, `has rank ${row.rank}`)
      if (!sameProject) starts.push(row.rowid)
      const key = `${row.channel}\n${row.gameVersions}\n${row.platforms}`
      let target = targetNumbers.get(key)
      if (target === undefined) {
        target = targetNumbers.size
        targetNumbers.set(key, target)
        // Each value tagged with its kind until the numbering is known: kind * KIND_TAG + number.
        targetValues.push(valueOf('channel', row.channel))
        for (const value of JSON.parse(row.gameVersions) as unknown[]) targetValues.push(KIND_TAG + valueOf('gameVersion', value))
        for (const value of JSON.parse(row.platforms) as unknown[]) targetValues.push(2 * KIND_TAG + valueOf('platform', value))
        targetStarts.push(targetValues.length)
      }
      versionTargets.push(target)
      previous = row
    },
    finish() {
      const total = names.channel.length + names.gameVersion.length + names.platform.length
      const offset = [0, names.channel.length, names.channel.length + names.gameVersion.length]
      const values = Float64Array.from(targetValues, (tagged) => offset[Math.floor(tagged / KIND_TAG)]! + (tagged % KIND_TAG))
      const valueWidth = total <= 65_536 ? 2 : 4
      if (previous !== undefined) starts.push(previous.rowid + 1)
      const width = targetNumbers.size <= 65_536 ? 2 : 4
      return {
        starts: littleEndian(Uint32Array.from(starts)),
        targets: littleEndian(width === 2 ? Uint16Array.from(versionTargets) : Uint32Array.from(versionTargets)),
        targetWidth: width,
        targetStarts: littleEndian(Uint32Array.from(targetStarts)),
        targetValues: littleEndian(valueWidth === 2 ? Uint16Array.from(values) : Uint32Array.from(values)),
        valueWidth,
        valueNames: JSON.stringify(names),
      }
    },
  }
}

/** The row the catalog stores (`version_targets`). */
export interface VersionTargetsRow {
  starts: Buffer
  targets: Buffer
  targetWidth: number
  targetStarts: Buffer
  targetValues: Buffer
  valueWidth: number
  valueNames: string
}

/**
 * Reads the targets back from the catalog's row, checked: a broken one would answer updates with
 * the wrong versions, so it is refused rather than used. Every number is checked against what it
 * points to: a few ms at the large catalog, once per release.
 */
export function readVersionTargetsRow(row: { starts: unknown; targets: unknown; target_width: unknown; target_starts: unknown; target_values: unknown; value_width: unknown; value_names: unknown }, file: string): VersionTargets {
  const refuse = (why: string): Error => new Error(`${file}: its version_targets row is malformed (${why})`)
  const width = row.target_width
  const valueWidth = row.value_width
  if (width !== 2 && width !== 4) throw refuse('target_width is not 2 or 4')
  if (valueWidth !== 2 && valueWidth !== 4) throw refuse('value_width is not 2 or 4')
  for (const [name, bytes, unit] of [['starts', row.starts, 4], ['targets', row.targets, width], ['target_starts', row.target_starts, 4], ['target_values', row.target_values, valueWidth]] as const) {
    if (!(bytes instanceof Uint8Array) || bytes.length % unit !== 0) throw refuse(`${name} is not a BLOB of ${unit}-byte numbers`)
  }
  let parsed: unknown
  try {
    parsed = typeof row.value_names === 'string' ? JSON.parse(row.value_names) : undefined
  } catch {
    parsed = undefined
  }
  const valueIds = { channel: new Map<string, number>(), gameVersion: new Map<string, number>(), platform: new Map<string, number>() }
  const kinds: number[] = []
  for (const kind of KINDS) {
    const names = (parsed as Record<string, unknown> | undefined)?.[kind]
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) throw refuse(`value_names has no list of ${kind} names`)
    for (const name of names as string[]) {
      if (valueIds[kind].has(name)) throw refuse(`value_names lists the ${kind} ${JSON.stringify(name)} twice`)
      valueIds[kind].set(name, kinds.length)
      kinds.push(KIND_BIT[kind])
    }
  }
  const targets: VersionTargets = {
    starts: fromLittleEndian(row.starts as Uint8Array, Uint32Array),
    targets: width === 2 ? fromLittleEndian(row.targets as Uint8Array, Uint16Array) : fromLittleEndian(row.targets as Uint8Array, Uint32Array),
    targetStarts: fromLittleEndian(row.target_starts as Uint8Array, Uint32Array),
    targetValues: valueWidth === 2 ? fromLittleEndian(row.target_values as Uint8Array, Uint16Array) : fromLittleEndian(row.target_values as Uint8Array, Uint32Array),
    valueIds,
    valueKinds: Uint8Array.from(kinds),
  }
  const { starts, targets: of, targetStarts, targetValues } = targets
  if (starts.length === 1) throw refuse('starts has an end and no project')
  for (let p = 1; p < starts.length; p++) if (starts[p]! <= starts[p - 1]!) throw refuse(`starts is not ascending at project ${p}`)
  const versions = starts.length === 0 ? 0 : starts[starts.length - 1]! - starts[0]!
  if (of.length !== versions) throw refuse(`targets has ${of.length} versions, and starts spans ${versions}`)
  const count = targetStarts.length - 1
  if (count < 0 || targetStarts[0] !== 0 || targetStarts[count] !== targetValues.length) throw refuse('target_starts does not span target_values')
  for (let t = 0; t < count; t++) if (targetStarts[t + 1]! < targetStarts[t]!) throw refuse(`target ${t} ends before it starts`)
  for (let i = 0; i < of.length; i++) if (of[i]! >= count) throw refuse(`version ${starts[0]! + i} has target ${of[i]}, of ${count}`)
  for (let i = 0; i < targetValues.length; i++) if (targetValues[i]! >= kinds.length) throw refuse(`target value ${i} is ${targetValues[i]}, of ${kinds.length} values`)
  return targets
}
