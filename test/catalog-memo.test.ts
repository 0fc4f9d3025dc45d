/**
 * A rebuild reuses the previous release's versions' JSON (build/catalog-memo.ts): each edit below
 * changes some version's JSON without touching that version's file, and the rebuild must publish
 * the bytes of a full build of the same data (catalog included); a reference file, a roll-back or
 * other base URLs turn the reuse off.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { hashBytes } from '../build/release/manifest.ts'
import { rereleaseRelease } from '../build/release/rerelease.ts'
import { buildRelease, copySampleData, readManifestOf, writeIrisCounters, type BuiltRelease } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'catalog-memo-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
let logs: string[] = []
let fullRuns = 0

const rebuild = (overrides: Parameters<typeof buildRelease>[2] = {}): Promise<BuiltRelease> => {
  logs = []
  return buildRelease(data, dist, { stagingCache: true, log: (l) => logs.push(l), ...overrides })
}
/** A full build of the same data into a dist of its own, without a kept staging. */
const fullBuild = (overrides: Parameters<typeof buildRelease>[2] = {}): Promise<BuiltRelease> =>
  buildRelease(data, path.join(root, `full-${++fullRuns}`), { stagingCache: false, ...overrides })

/** What a mirror or an offline user gets: every served file and the three extras, by content. */
function published(built: BuiltRelease): unknown {
  const { catalog, snapshot, archive } = built.pointer
  return { files: [...readManifestOf(built.releaseDir)], catalog: catalog.sha256, snapshot: snapshot?.sha256, archive: archive?.sha256 }
}

/** The catalog phase's line about reused JSON: [reused, to render], or null when there is none. */
function reuseLine(): [number, number] | null {
  const line = logs.find((l) => l.startsWith("… reused ") && l.includes("versions' JSON from release"))
  const m = line?.match(/^… reused (\d+) versions' JSON from release \d+ \((\d+) to render; (\d+) projects' bodies to render again\)/)
  return m ? [Number(m[1]), Number(m[2])] : null
}

/** How many projects the catalog listed to render again, and how many the render named unread (their bodies the live release's). */
function projectCounts(): { render: number; named: number } {
  const render = logs.map((l) => l.match(/; (\d+) projects' bodies to render again\)/)).find((x) => x)
  const named = logs.map((l) => l.match(/^… named (\d+) projects' bodies from the live release without rendering them/)).find((x) => x)
  return { render: render ? Number(render[1]) : -1, named: named ? Number(named[1]) : 0 }
}

/** The catalog phase's count of projects' rows copied from the live release: [copied, of], or null without the count. */
function projectRowsLine(): [number, number] | null {
  const m = logs.map((l) => l.match(/^… rendered the projects and the users \((\d+) of (\d+) projects' rows copied from release \d+\)/)).find((x) => x)
  return m ? [Number(m[1]), Number(m[2])] : null
}

/** How many versions' bodies the render named unread (build/static/versions.ts); 0 without the line. */
function unreadCount(): number {
  const m = logs.map((l) => l.match(/^… named (\d+) versions' bodies from the live release without reading them/)).find((x) => x)
  return m ? Number(m[1]) : 0
}

function editJson(file: string, edit: (record: Record<string, unknown>) => void): void {
  const full = path.join(data, file)
  const record = JSON.parse(readFileSync(full, 'utf8')) as Record<string, unknown>
  edit(record)
  writeFileSync(full, JSON.stringify(record, null, 2))
}

/** The version JSON of `id` served by a release. */
function versionBody(built: BuiltRelease, id: string): { data: { dependencies: { versionId: string | null; project: { id: string; name: string } | null }[] } } {
  return JSON.parse(readFileSync(path.join(built.releaseDir, `public/api/v1/versions/${id}.json`), 'utf8'))
}

beforeAll(async () => {
  // Files changed within the last 2 s are read again by every build (racy): let the copy age.
  await sleep(2100)
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("a rebuild reusing the previous release's versions' JSON", () => {
  let total = 0

  it('reuses every version when nothing changed, and publishes the same bytes', async () => {
    const first = await rebuild()
    expect(reuseLine()).toBeNull()
    expect(projectRowsLine()).toBeNull()
    const again = await rebuild()
    // Every project's row copied.
    const rows = projectRowsLine()
    expect(rows).not.toBeNull()
    expect(rows![0]).toBe(rows![1])
    expect(rows![0]).toBeGreaterThan(10)
    const reuse = reuseLine()
    expect(reuse).not.toBeNull()
    total = reuse![0] + reuse![1]
    expect(reuse).toEqual([total, 0])
    expect(total).toBeGreaterThan(100)
    expect(again.changes).toMatchObject({ added: 0, changed: 0, removed: 0 })
    expect(published(again)).toEqual(published(first))
  })

  // Each edit changes versions' JSON in files the load does not read again.
  // rowsRendered: the projects' rows rendered again, not copied (copyProjectRows).
  const edits: { name: string; edit: () => void; check: (built: BuiltRelease) => void; atLeast: number; projects: number; rowsRendered: number }[] = [
    {
      name: "a project others depend on renamed: their dependencies show the new name",
      edit: () => editJson('projects/fabric-api/project.json', (p) => (p.name = 'Fabric API (renamed)')),
      check: (built) => {
        const dep = versionBody(built, '9O3N7MpA').data.dependencies.find((d) => d.project?.id === 'p1e5t4a0')
        expect(dep?.project?.name).toBe('Fabric API (renamed)')
      },
      atLeast: 20,
      // Fabric API and every project whose versions depend on it.
      projects: 10,
      // Fabric API's own row only: a row holds no dependency.
      rowsRendered: 1,
    },
    {
      name: 'a version others name made a draft: their dependencies lose its id',
      edit: () => editJson('projects/fabric-api/versions/0.102.0+1.21.1.json', (v) => (v.status = 'draft')),
      check: (built) => {
        const deps = versionBody(built, JSON.parse(readFileSync(path.join(data, 'projects/modmenu/versions/11.0.3.json'), 'utf8')).id).data.dependencies
        const dep = deps.find((d) => d.project?.id === 'p1e5t4a0')
        expect(dep).toBeDefined()
        expect(dep!.versionId).toBeNull()
      },
      atLeast: 2,
      projects: 2,
      // Fabric API's: one of its versions was touched.
      rowsRendered: 1,
    },
    {
      name: 'a project others depend on made private: their dependencies on it go',
      edit: () => editJson('projects/sodium/project.json', (p) => (p.status = 'private')),
      check: (built) => {
        const ids = readFileSync(path.join(built.releaseDir, 'manifest.tsv'), 'utf8')
        expect(ids).not.toContain('public/api/v1/projects/sodium.json')
      },
      atLeast: 9,
      projects: 3,
      // Sodium's row is gone; the others are unchanged.
      rowsRendered: 0,
    },
    {
      name: "a translator renamed: the projects they are a member of show the new name, with no version's JSON changed",
      edit: () => editJson('users/cobblestone_carl.json', (u) => (u.name = 'Carl Jensen (renamed)')),
      check: (built) => {
        const detail = JSON.parse(readFileSync(path.join(built.releaseDir, 'public/api/v1/projects/modmenu.json'), 'utf8'))
        expect(detail.data.members.find((m: { user: { id: string } }) => m.user.id === 'fjGtZ61O').user.name).toBe('Carl Jensen (renamed)')
      },
      atLeast: 0,
      // Mod Menu, JEI and Create, of which he is a member only.
      projects: 3,
      // A member is not in a project's row.
      rowsRendered: 0,
    },
    {
      name: "a version given one more game version: its project's row lists it, with no count of downloads changed",
      edit: () => editJson('projects/iris/versions/1.7.1+1.21.json', (v) => (v.gameVersions = ['1.20.6', '1.21'])),
      check: (built) => {
        const detail = JSON.parse(readFileSync(path.join(built.releaseDir, 'public/api/v1/projects/iris.json'), 'utf8'))
        expect(detail.data.gameVersions).toContain('1.20.6')
      },
      atLeast: 1,
      projects: 1,
      // Iris's: one of its versions was touched.
      rowsRendered: 1,
    },
    {
      name: "a project's author renamed: the project's row and bodies show the new name, with no version's JSON changed",
      edit: () => editJson('users/coderbloom.json', (u) => (u.name = 'Priya Raman (renamed)')),
      check: (built) => {
        const detail = JSON.parse(readFileSync(path.join(built.releaseDir, 'public/api/v1/projects/iris.json'), 'utf8'))
        expect(JSON.stringify(detail)).toContain('Priya Raman (renamed)')
        expect(JSON.stringify(detail)).not.toContain('"Priya Raman"')
      },
      atLeast: 0,
      // Iris, of which she is the author.
      projects: 1,
      rowsRendered: 1,
    },
  ]

  for (const { name, edit, check, atLeast, projects, rowsRendered } of edits) {
    it(`${name}; the same bytes as a full build`, async () => {
      edit()
      const rebuilt = await rebuild()
      const reuse = reuseLine()
      expect(reuse).not.toBeNull()
      // Rendered again: at least the versions whose JSON changed; reused: most of the others.
      expect(reuse![1]).toBeGreaterThanOrEqual(atLeast)
      expect(reuse![0]).toBeGreaterThan(reuse![1])
      // Each reused body named without its bytes: the seal read it from the live release's snapshot.
      expect(unreadCount()).toBe(reuse![0])
      // The projects whose bodies the edit reaches are rendered again, the others named unread.
      const counted = projectCounts()
      expect(counted.render).toBeGreaterThanOrEqual(projects)
      expect(counted.named).toBeGreaterThan(counted.render)
      // Every project's row but those the edit reaches copied from the live release (and the
      // projects of a file the edit before wrote, read again if it is under 2 s old).
      const rows = projectRowsLine()
      expect(rows).not.toBeNull()
      expect(rows![1] - rows![0]).toBeGreaterThanOrEqual(rowsRendered)
      expect(rows![1] - rows![0]).toBeLessThanOrEqual(rowsRendered + 1)
      check(rebuilt)
      expect(published(rebuilt)).toEqual(published(await fullBuild()))
    })
  }

  it('renders the versions whose download counts changed (counters), and only the ones it must', async () => {
    const counters = path.join(root, 'counters.sqlite')
    const iris = { id: await writeIrisCounters(counters, data) }
    const before = await rebuild()
    expect(reuseLine()).toEqual([expect.any(Number), 0])
    const rebuilt = await rebuild({ countersFile: counters })
    expect(reuseLine()![1]).toBe(1)
    const shown = JSON.parse(readFileSync(path.join(rebuilt.releaseDir, `public/api/v1/versions/${iris.id}.json`), 'utf8')).data.downloads
    expect(shown).toBe(JSON.parse(readFileSync(path.join(before.releaseDir, `public/api/v1/versions/${iris.id}.json`), 'utf8')).data.downloads + 777)
    expect(published(rebuilt)).toEqual(published(await fullBuild({ countersFile: counters })))
    rmSync(counters)
  })

  // Several builds each (about 30 s here alone): more than the default 60 s on a busy machine.
  it('reuses nothing after a reference file changed, or a roll-back, or with other base URLs', async () => {
    // The counters are gone: every version's downloads are back to their source's.
    await rebuild()
    editJson('reference/game-versions/1.21.1.json', (g) => (g.releasedAt = '2024-08-08T12:00:00Z'))
    const referenced = await rebuild()
    expect(logs).toContainEqual(expect.stringMatching(/^… reused no versions' JSON from release \d+: a reference file changed/))
    expect(published(referenced)).toEqual(published(await fullBuild()))

    await rereleaseRelease(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, log: () => {} }))
    await rebuild()
    expect(reuseLine()).toBeNull()
    expect(logs).toContain("No versions' JSON reused from the live release: the live release is not the one the kept staging was built into")

    const other = await rebuild({ baseUrl: 'https://catalog.example.org' })
    expect(logs).toContain("No versions' JSON reused from the live release: the code or the base URLs changed since")
    expect(published(other)).toEqual(published(await fullBuild({ baseUrl: 'https://catalog.example.org' })))
    // The next build with those URLs reuses again.
    await rebuild({ baseUrl: 'https://catalog.example.org' })
    expect(reuseLine()).toEqual([expect.any(Number), 0])
  }, 150_000)

  it("reads the bodies it named unread from the content store when the live release's snapshot is gone, and fails naming one the store lost", async () => {
    const other = { baseUrl: 'https://catalog.example.org' }
    const live = await rebuild(other)
    rmSync(path.join(live.releaseDir, 'public', live.pointer.snapshot!.path))
    editJson('projects/fabric-api/project.json', (p) => (p.name = 'Fabric API (renamed again)'))
    const rebuilt = await rebuild(other)
    expect(unreadCount()).toBeGreaterThan(100)
    expect(logs).toContainEqual(expect.stringContaining('the previous snapshot was not reused'))
    expect(published(rebuilt)).toEqual(published(await fullBuild(other)))

    // A body the next rebuild names unread, gone from the store (and no snapshot to read it from).
    rmSync(path.join(rebuilt.releaseDir, 'public', rebuilt.pointer.snapshot!.path))
    // Arctic Fox 1.0 (a skin with no dependency): reused by the rename.
    const name = `public/api/v1/versions/${JSON.parse(readFileSync(path.join(data, 'projects/arctic-fox/versions/1.0.json'), 'utf8')).id}.json`
    const { sha256 } = readManifestOf(rebuilt.releaseDir).get(name)!
    rmSync(path.join(dist, 'store', sha256.slice(0, 2), sha256))
    editJson('projects/fabric-api/project.json', (p) => (p.name = 'Fabric API (renamed once more)'))
    // Named by the tree (linking it from the store) or by the seal (reading it for the snapshot), whichever comes first.
    await expect(rebuild(other)).rejects.toThrow(sha256)
    // Nothing half-published: the live release is the one before, and serves that body.
    expect(readFileSync(path.join(dist, 'current', 'public/mirror/pointer.json'), 'utf8')).toBe(readFileSync(path.join(rebuilt.releaseDir, 'public/mirror/pointer.json'), 'utf8'))
    expect(hashBytes(readFileSync(path.join(dist, 'current', name)))).toBe(sha256)
    // The failed build left no lineage: the next one renders every version again, and succeeds.
    const healed = await rebuild(other)
    expect(reuseLine()).toBeNull()
    expect(logs).toContain("No versions' JSON reused from the live release: the kept staging names no release")
    expect(published(healed)).toEqual(published(await fullBuild(other)))
    // Written on the main thread alone into an empty folder (BUILD_WRITE_WORKER=0, BUILD_RECYCLE=0): linked from the store, the same bytes.
    editJson('projects/fabric-api/project.json', (p) => (p.name = 'Fabric API (main thread)'))
    const alone = await rebuild({ ...other, writeWorker: false, recycle: false })
    expect(unreadCount()).toBeGreaterThan(100)
    expect(published(alone)).toEqual(published(await fullBuild(other)))
  }, 150_000)
})
