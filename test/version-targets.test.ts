/**
 * The catalog's version targets (build/version-targets.ts): the layout the README documents, the
 * newest matching version of a project against a plain reference, the order the build must keep,
 * malformed rows refused, and the shim's update matching through them giving the same answers as
 * the SQL walk it replaces (findUpdatesByHashes), for every file of the sample catalog under every
 * filter its versions have. Through the sample catalog's real build and a real server.
 */
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest'
import {
  compileTargetFilter,
  createVersionTargets,
  newestMatching,
  readVersionTargetsRow,
  type TargetFilters,
  type TargetRow,
  type VersionTargets,
  type VersionTargetsRow,
} from '../build/version-targets.ts'
import { openRelease } from '../shim/release.ts'
import { startServer, withCatalogCopy, type TestServer } from './harness.ts'

/** A version as the reference sees it. */
interface Version {
  rowid: number
  project: string
  channel: string
  gameVersions: string[]
  platforms: string[]
}

/** Rows of these projects' versions (each project's newest first), from rowid `first` on. */
function rowsOf(projects: readonly (readonly Omit<Version, 'rowid' | 'project'>[])[], first = 1): Version[] {
  const out: Version[] = []
  for (const [p, versions] of projects.entries()) for (const v of versions) out.push({ ...v, rowid: first + out.length, project: `p${p}` })
  return out
}

/** The stored row of these versions, as the build makes it. */
function rowOf(versions: readonly Version[]): VersionTargetsRow {
  const made = createVersionTargets()
  let rank = 0
  for (const [i, v] of versions.entries()) {
    rank = i > 0 && versions[i - 1]!.project === v.project ? rank + 1 : 0
    made.add(targetRow(v, rank))
  }
  return made.finish()
}

function targetRow(v: Version, rank: number): TargetRow {
  return { rowid: v.rowid, projectId: v.project, rank, channel: v.channel, gameVersions: JSON.stringify(v.gameVersions), platforms: JSON.stringify(v.platforms) }
}

/** The row read back as the shim reads it. */
function read(row: VersionTargetsRow): VersionTargets {
  return readVersionTargetsRow(
    { starts: row.starts, targets: row.targets, target_width: row.targetWidth, target_starts: row.targetStarts, target_values: row.targetValues, value_width: row.valueWidth, value_names: row.valueNames },
    'c.sqlite',
  )
}

/** The rule, plainly: the first version of the rowid's project, newest first, that every non-empty list matches. */
function reference(versions: readonly Version[], filters: TargetFilters, rowid: number): number {
  const owner = versions.find((v) => v.rowid === rowid)
  if (owner === undefined) return 0
  const any = (list: readonly string[] | undefined, values: readonly string[]): boolean => list === undefined || list.length === 0 || values.some((v) => list.includes(v))
  const match = versions.find((v) => v.project === owner.project && any(filters.channel, [v.channel]) && any(filters.gameVersion, v.gameVersions) && any(filters.platform, v.platforms))
  return match?.rowid ?? 0
}

/** A deterministic pseudo-random sequence (mulberry32). */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

const GAME_VERSIONS = ['1.21.4', '1.21.3', '1.21.1', '1.20.6', '1.20.4', '1.20.1', '1.19.4', '1.18.2', '1.16.5', '1.12.2']
const PLATFORMS = ['fabric', 'forge', 'neoforge', 'quilt', 'paper']
const CHANNELS = ['stable', 'beta', 'alpha']

describe('the targets', () => {
  it('name, for every version and filter, the newest matching version of its project, as the plain rule does', () => {
    const next = random(7)
    const pick = <T,>(list: readonly T[], most: number): T[] => list.filter(() => next() < most / list.length)
    const projects = Array.from({ length: 60 }, () =>
      Array.from({ length: Math.floor(next() * 9) + 1 }, () => ({
        channel: CHANNELS[Math.floor(next() * 3)]!,
        gameVersions: pick(GAME_VERSIONS, 2),
        platforms: pick(PLATFORMS, 1.5),
      })),
    )
    const versions = rowsOf(projects, 40)
    const targets = read(rowOf(versions))
    const lists: (string[] | undefined)[][] = [
      [undefined, [], ['stable'], ['beta', 'alpha'], ['nightly']],
      [undefined, ['1.21.4'], ['1.20.1', '1.12.2'], ['0.0.1'], ['0.0.1', '1.18.2']],
      [undefined, ['fabric'], ['forge', 'quilt'], ['bukkit']],
    ]
    let matched = 0
    for (const channel of lists[0]!) {
      for (const gameVersion of lists[1]!) {
        for (const platform of lists[2]!) {
          const filters = { channel, gameVersion, platform }
          const filter = compileTargetFilter(targets, filters)
          for (const v of versions) {
            const expected = reference(versions, filters, v.rowid)
            expect(newestMatching(targets, filter, v.rowid), `${JSON.stringify(filters)} of ${v.rowid}`).toBe(expected)
            if (expected !== 0) matched++
          }
        }
      }
    }
    // The filters are not all trivially empty or all-matching.
    expect(matched).toBeGreaterThan(versions.length * 10)
    expect(matched).toBeLessThan(versions.length * 5 * 5 * 4)
    const all = compileTargetFilter(targets, {})
    for (const rowid of [0, 39, versions.length + 40, 2 ** 32 - 1]) expect(newestMatching(targets, all, rowid)).toBe(0)
  })

  it('stores the layout the README documents: project starts, a target a version, each target once, values by kind', () => {
    const versions = rowsOf(
      [
        [
          { channel: 'stable', gameVersions: ['1.21.4', '1.21.3'], platforms: ['fabric'] },
          { channel: 'beta', gameVersions: ['1.21.1'], platforms: ['fabric', 'quilt'] },
        ],
        [{ channel: 'stable', gameVersions: ['1.21.4', '1.21.3'], platforms: ['fabric'] }],
        [
          { channel: 'alpha', gameVersions: [], platforms: ['forge'] },
          { channel: 'stable', gameVersions: ['1.21.4', '1.21.3'], platforms: ['fabric'] },
          { channel: 'beta', gameVersions: ['1.21.1'], platforms: ['fabric', 'quilt'] },
        ],
      ],
      5,
    )
    const row = rowOf(versions)
    const u32 = (b: Buffer): number[] => Array.from({ length: b.length / 4 }, (_, i) => b.readUInt32LE(i * 4))
    const u16 = (b: Buffer): number[] => Array.from({ length: b.length / 2 }, (_, i) => b.readUInt16LE(i * 2))
    expect(u32(row.starts)).toEqual([5, 7, 8, 11])
    expect([row.targetWidth, row.valueWidth]).toEqual([2, 2])
    expect(u16(row.targets)).toEqual([0, 1, 0, 2, 0, 1])
    expect(JSON.parse(row.valueNames)).toEqual({ channel: ['stable', 'beta', 'alpha'], gameVersion: ['1.21.4', '1.21.3', '1.21.1'], platform: ['fabric', 'quilt', 'forge'] })
    // Channels numbered from 0, then game versions (3 on), then platforms (6 on).
    expect(u32(row.targetStarts)).toEqual([0, 4, 8, 10])
    expect(u16(row.targetValues)).toEqual([0, 3, 4, 6, 1, 5, 6, 7, 2, 8])
    expect(newestMatching(read(row), compileTargetFilter(read(row), { platform: ['quilt'] }), 10)).toBe(10)
    expect(newestMatching(read(row), compileTargetFilter(read(row), { gameVersion: ['1.21.3'] }), 10)).toBe(9)
  })

  it('numbers targets and values in 4 bytes past 65,536 of them', () => {
    const versions = rowsOf([Array.from({ length: 65_537 }, (_, i) => ({ channel: 'stable', gameVersions: [`1.${i}`], platforms: ['fabric'] }))])
    const row = rowOf(versions)
    expect([row.targetWidth, row.valueWidth]).toEqual([4, 4])
    const targets = read(row)
    expect(newestMatching(targets, compileTargetFilter(targets, { gameVersion: ['1.65536'] }), 3)).toBe(65_537)
    expect(newestMatching(targets, compileTargetFilter(targets, { gameVersion: ['1.65536', '1.2'] }), 3)).toBe(3)
  })

  it('refuses versions out of the catalog\'s order, and malformed rows', () => {
    const v = (rowid: number, project: string): Version => ({ rowid, project, channel: 'stable', gameVersions: ['1.21.4'], platforms: ['fabric'] })
    const add = (rows: [Version, number][]): void => {
      const made = createVersionTargets()
      for (const [version, rank] of rows) made.add(targetRow(version, rank))
    }
    expect(() => add([[v(1, 'a'), 0], [v(3, 'a'), 1]])).toThrow('version rowid 3 (project a) follows rowid 1')
    expect(() => add([[v(1, 'a'), 0], [v(2, 'a'), 2]])).toThrow('version rowid 2 (project a) has rank 2')
    expect(() => add([[v(1, 'a'), 1]])).toThrow('has rank 1')
    expect(() => add([[v(1, 'a'), 0], [v(2, 'b'), 1]])).toThrow('version rowid 2 (project b) has rank 1')
    expect(() => createVersionTargets().add({ ...targetRow(v(1, 'a'), 0), platforms: '[1]' })).toThrow("a version's platform value 1 is not a string")
    const good = rowOf(rowsOf([[v(0, ''), v(0, '')], [v(0, '')]]))
    expect(read(good).starts).toEqual(Uint32Array.from([1, 3, 4]))
    const bad: [Partial<VersionTargetsRow>, string][] = [
      [{ targetWidth: 3 }, 'target_width is not 2 or 4'],
      [{ valueWidth: 8 }, 'value_width is not 2 or 4'],
      [{ starts: good.starts.subarray(1) }, 'starts is not a BLOB of 4-byte numbers'],
      [{ starts: Buffer.from([1, 0, 0, 0]) }, 'starts has an end and no project'],
      [{ starts: Buffer.from([1, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0]) }, 'starts is not ascending at project 2'],
      [{ starts: Buffer.from([1, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]) }, 'targets has 3 versions, and starts spans 4'],
      [{ targets: Buffer.from([0, 0, 0, 0, 1, 0]) }, 'version 3 has target 1, of 1'],
      [{ targetStarts: Buffer.from([0, 0, 0, 0, 2, 0, 0, 0]) }, 'target_starts does not span target_values'],
      [{ targetValues: Buffer.from([0, 0, 1, 0, 9, 0]) }, 'target value 2 is 9, of 3 values'],
      [{ valueNames: '{"channel":["stable"],"gameVersion":["1.21.4"]}' }, 'value_names has no list of platform names'],
      [{ valueNames: '{"channel":["stable"],"gameVersion":["1.21.4","1.21.4"],"platform":["fabric"]}' }, 'value_names lists the gameVersion "1.21.4" twice'],
      [{ valueNames: 'not json' }, 'value_names has no list of channel names'],
    ]
    for (const [change, why] of bad) expect(() => read({ ...good, ...change }), why).toThrow(`c.sqlite: its version_targets row is malformed (${why})`)
    const empty = createVersionTargets().finish()
    expect(newestMatching(read(empty), compileTargetFilter(read(empty), {}), 1)).toBe(0)
  })
})

describe('update matching in the shim through the targets', () => {
  let server: TestServer
  /** Every hash of the catalog's files, each once. */
  let known: string[] = []
  /** Every game version, platform and channel some version has. */
  let values: { gameVersion: string[]; platform: string[]; channel: string[] }

  beforeAll(async () => {
    server = await startServer(inject('distDir'))
    const { db } = server.ctx.release
    const rows = await db.all<{ sha256: string; sha1: string | null }>(`SELECT sha256, sha1 FROM files ORDER BY id`)
    known = [...new Set(rows.flatMap((r) => (r.sha1 === null ? [r.sha256] : [r.sha256, r.sha1])))]
    const list = async (sql: string): Promise<string[]> => (await db.all<{ value: string }>(sql)).map((r) => r.value)
    values = {
      gameVersion: await list(`SELECT DISTINCT g.value FROM versions v, json_each(v.game_versions) g ORDER BY 1`),
      platform: await list(`SELECT DISTINCT k.value FROM versions v, json_each(v.platforms) k ORDER BY 1`),
      channel: await list(`SELECT DISTINCT channel AS value FROM versions ORDER BY 1`),
    }
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })

  it('are read with the release: one a version, starting each project at its newest', async () => {
    const { db, versionTargets } = server.ctx.release
    expect(versionTargets).toBeDefined()
    const starts = await db.all<{ rowid: number }>(`SELECT rowid FROM versions WHERE rank = 0 ORDER BY rowid`)
    const last = await db.get<{ rowid: number }>(`SELECT max(rowid) AS rowid FROM versions`)
    expect(Array.from(versionTargets!.starts)).toEqual([...starts.map((s) => s.rowid), last!.rowid + 1])
    expect(values.channel).toEqual(['alpha', 'beta', 'stable'])
    expect(values.gameVersion.length).toBeGreaterThan(5)
    expect(values.platform.length).toBeGreaterThan(3)
  })

  it('answers every hash under every filter its versions have with the bytes of the SQL walk', async () => {
    const { cache, release } = server.ctx
    const { gameVersion, platform, channel } = values
    const filters: string[] = ['', 'gameVersion=0.0.1', 'platform=nothing', `gameVersion=0.0.1&gameVersion=${gameVersion[0]}`]
    for (const g of gameVersion) filters.push(`gameVersion=${g}`)
    for (const k of platform) filters.push(`platform=${k}`, `platform=${k}&platform=${platform[0]}`)
    for (const c of channel) filters.push(`channel=${c}`)
    for (const g of gameVersion) for (const k of platform) filters.push(`gameVersion=${g}&platform=${k}`)
    filters.push(`gameVersion=${gameVersion[1]}&gameVersion=${gameVersion[2]}&platform=${platform[0]}&platform=${platform[1]}&channel=stable&channel=beta`)
    const ask = async (url: string): Promise<string> => {
      cache.clear()
      const res = await server.get(url)
      expect(res.status, url).toBe(200)
      return res.text()
    }
    const targets = release.versionTargets
    let found = 0
    for (const filter of filters) {
      for (let at = 0; at < known.length; at += 95) {
        // With five made-up hashes that share a real file's 32-bit prefix: candidates of the hash
        // index that hold no such file, left out by both paths.
        const chunk = known.slice(at, at + 95)
        const madeUp = chunk.slice(0, 5).map((h) => h.slice(0, 8) + [...h.slice(8)].reverse().join(''))
        const url = `/version-files/update?hashes=${[...chunk, ...madeUp].join(',')}${filter ? `&${filter}` : ''}`
        const through = await ask(url)
        release.versionTargets = undefined
        try {
          expect(through, url).toBe(await ask(url))
        } finally {
          release.versionTargets = targets
        }
        found += Object.keys((JSON.parse(through) as { data: object }).data).length
      }
    }
    // Most filters leave some hashes with an update and some without.
    expect(found).toBeGreaterThan(known.length * 10)
    expect(found).toBeLessThan(known.length * filters.length * 0.9)
    cache.clear()
  })

  it('answers a single file\'s update as the bulk one does, reading its candidate and answer in one query; none when no project meets the filter', async () => {
    const { cache, release } = server.ctx
    const filter = `gameVersion=${values.gameVersion[0]}`
    cache.clear()
    const bulk = JSON.parse(await (await server.get(`/version-files/update?hashes=${known.slice(0, 100).join(',')}&${filter}`)).text()) as { data: Record<string, unknown> }
    const [hash, version] = Object.entries(bulk.data)[0]!
    const queries = vi.spyOn(release.db, 'all')
    try {
      cache.clear()
      const res = await server.get(`/version-files/${hash}/update?${filter}`)
      expect([res.status, await res.text()]).toEqual([200, JSON.stringify({ data: version })])
      expect(queries.mock.calls.map((c) => String(c[0]).match(/FROM (json_each|versions)/)?.[1])).toEqual(['versions'])
      // A filter no version has: every hash's answer is none, known before anything is read.
      queries.mockClear()
      const none = await server.get(`/version-files/update?hashes=${known.slice(0, 100).join(',')}&gameVersion=0.0.1`)
      expect([none.status, await none.text()]).toEqual([200, '{"data":{}}'])
      expect((await server.get(`/version-files/${hash}/update?gameVersion=0.0.1`)).status).toBe(404)
      expect(queries).not.toHaveBeenCalled()
    } finally {
      queries.mockRestore()
      cache.clear()
    }
  })

  it('are left out for a catalog without them, and a malformed row is refused', async () => {
    await withCatalogCopy(server.ctx.release.dir, async ({ dir, catalog, edit }) => {
      const access = { connections: 1, mmapBytes: 0 }
      const opened = await openRelease(dir, access)
      expect(opened.versionTargets!.targets).toEqual(server.ctx.release.versionTargets!.targets)
      await opened.db.close()
      await edit(`UPDATE version_targets SET starts = substr(starts, 5)`)
      await expect(openRelease(dir, access)).rejects.toThrow(`${catalog}: its version_targets row is malformed (targets has`)
      await edit(`DELETE FROM version_targets`)
      await expect(openRelease(dir, access)).rejects.toThrow(`${catalog}: its version_targets table has no row`)
      await edit(`DROP TABLE version_targets`)
      const release = await openRelease(dir, access)
      expect(release.versionTargets).toBeUndefined()
      await release.db.close()
    })
  })
})
