/**
 * Staging kept between builds (build/staging-cache.ts): a rebuild reads only the record files whose
 * stat signature, or one of whose blobs', changed, drops the rows of removed files, and publishes
 * the same bytes as a full build of the same data into another dist; the cache is never used by
 * other code or another data folder, and a failing build leaves none behind.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { ConfigError } from '../build/env.ts'
import type { NamedSource } from '../build/list-sources.ts'
import { runBuild } from '../build/index.ts'
import { openDb } from '../build/db/sqlite.ts'
import { stagingCachePaths } from '../build/staging-cache.ts'
import { addSodiumVersion, buildRelease, copySampleData, editSummary, readManifestOf, type BuiltRelease } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'staging-cache-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
let logs: string[] = []

const build = (distDir = dist, stagingCache = true): Promise<BuiltRelease> => {
  logs = []
  return buildRelease(data, distDir, { stagingCache, log: (l) => logs.push(l) })
}
/** The load's report: the kept-staging line when there is one, then the Loaded line. */
const loadLine = (): string => logs.filter((l) => l.startsWith('Staging kept') || l.startsWith('Loaded ')).join('\n')

/** What a mirror or an offline user gets: every served file and the three extras, by content. */
function published(built: BuiltRelease): unknown {
  const { catalog, snapshot, archive } = built.pointer
  return { files: [...readManifestOf(built.releaseDir)], catalog: catalog.sha256, snapshot: snapshot?.sha256, archive: archive?.sha256 }
}

/** A version file no other version depends on by id (removing it leaves the catalog valid), in a project with others. */
function removableVersion(dataDir = data): string {
  const projects = path.join(dataDir, 'projects')
  const versions = readdirSync(projects).flatMap((p) =>
    readdirSync(path.join(projects, p, 'versions'))
      .filter((n) => n.endsWith('.json'))
      .map((n) => ({ project: p, file: path.join(projects, p, 'versions', n), json: JSON.parse(readFileSync(path.join(projects, p, 'versions', n), 'utf8')) })),
  )
  const named = new Set(versions.flatMap((v) => (v.json.dependencies ?? []).map((d: { versionId?: string }) => d.versionId)))
  const perProject = (p: string): number => versions.filter((v) => v.project === p).length
  const pick = versions.find((v) => !named.has(v.json.id) && v.json.status === 'published' && perProject(v.project) > 2 && v.project !== 'sodium' && v.project !== 'appleskin')
  return pick!.file
}

beforeAll(async () => {
  // Files changed within the last 2 s are stored as racy and read again by the next build: let the
  // copy age first, so the rebuilds below read exactly the files this test changes.
  await sleep(2100)
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('staging kept between builds', () => {
  it('reads only the changed record files, drops removed ones, and publishes the bytes of a full build', async () => {
    const first = await build()
    expect(loadLine()).not.toContain('Staging kept')
    // The catalog phase reports its parts, in order, each with its time since the build started; the
    // validation runs beside them (its own connection), so its line comes anywhere among them.
    const parts = logs.filter((l) => l.startsWith('… ') && / after [\d.]+s \(CPU [\d.]+s\)$/.test(l)).map((l) => l.slice(2, l.lastIndexOf(' after ')))
    const validated = parts.indexOf('validated the catalog (0 problems; checked every record)')
    expect(validated).toBeGreaterThan(0)
    expect(validated).toBeLessThan(8)
    expect(parts.filter((_, i) => i !== validated).slice(0, 7)).toEqual([
      'indexed staging',
      'rendered the projects and the users',
      'copied the visible versions',
      'copied the visible files and dependencies',
      "indexed the hashes and the versions' targets",
      'rendered the versions',
      'indexed the catalog',
    ])
    // The search index is built beside the render, and copied into the compacted catalog before the
    // seal takes that catalog. (The seal's manifest does not wait for the catalog, so at the sample's
    // size its line may come before or after the index's.)
    const at = (prefix: string): number => logs.findIndex((l) => l.startsWith(prefix))
    expect(at('Wrote the catalog database')).toBeGreaterThan(at('… indexed the catalog'))
    expect(at('… built the search index beside the render')).toBeGreaterThan(at('Wrote the catalog database'))
    expect(at('The catalog was compacted')).toBeGreaterThan(at('… built the search index beside the render'))
    const cache = stagingCachePaths(dist)
    expect(existsSync(cache.file) && existsSync(cache.key)).toBe(true)
    // The columns and dependency rows the load takes out of each version (what the catalog copies)
    // are what SQLite reads out of the version's JSON, for every version and dependency of the sample.
    const staging = await openDb(cache.file, { readonly: true })
    try {
      const versions = await staging.get<{ n: number; off: number; deps: number }>(`
        SELECT count(*) AS n, (SELECT count(*) FROM s_dependencies) AS deps,
          sum(channel IS NOT json->>'channel' OR published_at IS NOT json->>'publishedAt' OR created_at IS NOT json->>'createdAt'
            OR game_versions IS NOT json->'gameVersions' OR platforms IS NOT json->'platforms' OR downloads IS NOT json->>'downloads') AS off
        FROM s_versions`)
      expect(versions).toMatchObject({ off: 0 })
      expect(versions!.n).toBeGreaterThan(100)
      const fromJson = `SELECT v.id, v.project_id, d.key, d.value->>'type', d.value->>'projectId', d.value->>'versionId', d.value->>'external' IS NOT NULL, v.file
        FROM s_versions v, json_each(v.json, '$.dependencies') d`
      const rows = 'SELECT version_id, version_project_id, position, type, project_id, dep_version_id, external, file FROM s_dependencies'
      const differ = await staging.get<{ n: number }>(`SELECT count(*) AS n FROM (${rows} EXCEPT ${fromJson} UNION ALL SELECT * FROM (${fromJson} EXCEPT ${rows}))`)
      expect(differ!.n).toBe(0)
      // Every kind of dependency is in the sample: by project, by version, external.
      const kinds = await staging.get<{ project: number; version: number; external: number }>(
        `SELECT sum(project_id IS NOT NULL) AS project, sum(dep_version_id IS NOT NULL) AS version, sum(external) AS external FROM s_dependencies`,
      )
      expect(Math.min(kinds!.project, kinds!.version, kinds!.external)).toBeGreaterThan(0)
    } finally {
      await staging.close()
    }

    const same = await build()
    expect(loadLine()).toContain('Staging kept from the last build: read 0 changed record files')
    expect(same.changes).toMatchObject({ added: 0, changed: 0, removed: 0 })
    expect(published(same)).toEqual(published(first))

    // Six record files to read again: an edited project, a new version (with a new blob), a
    // version whose blob's bytes changed (its JSON untouched), a user file only touched, a new user,
    // a version whose dependency changed (below).
    editSummary(data, 'sodium', 'Kept staging, edited summary')
    addSodiumVersion(data)
    const blob = path.join(data, 'projects/appleskin/versions/2.5.1+mc1.20.1/appleskin-fabric-mc1.20-2.5.1.jar')
    writeFileSync(blob, Buffer.concat([readFileSync(blob), Buffer.from('changed bytes')]))
    const users = path.join(data, 'users')
    const [someUser] = readdirSync(users).sort()
    const later = new Date(Date.now() - 60_000)
    utimesSync(path.join(users, someUser!), later, later)
    const user = JSON.parse(readFileSync(path.join(users, someUser!), 'utf8'))
    writeFileSync(path.join(users, 'kept-staging-user.json'), JSON.stringify({ ...user, id: 'KsU5er01', username: 'kept-staging-user' }))
    // A version whose dependency changed: its old dependency rows must go with its old record.
    const clothFile = path.join(data, 'projects/cloth-config/versions/11.1.106+fabric.json')
    const cloth = JSON.parse(readFileSync(clothFile, 'utf8'))
    expect(cloth.dependencies[2]).toEqual({ type: 'optional', projectId: '51wyhRje' })
    cloth.dependencies[2].type = 'required'
    writeFileSync(clothFile, JSON.stringify(cloth, null, 2))
    // And one removed (read by nobody: its rows must go).
    const removed = removableVersion()
    const removedId = JSON.parse(readFileSync(removed, 'utf8')).id as string
    rmSync(removed)

    const rebuilt = await build()
    expect(loadLine()).toContain('Staging kept from the last build: read 6 changed record files')
    const full = await build(path.join(root, 'dist-full'), false)
    expect(loadLine()).not.toContain('Staging kept')
    expect(published(rebuilt)).toEqual(published(full))
    // The changes are in it, not just equal by accident.
    const names = [...readManifestOf(rebuilt.releaseDir).keys()]
    expect(names.some((n) => n.includes('Zz9Yy8Xx'))).toBe(true)
    expect(names.some((n) => n.includes(removedId))).toBe(false)
    expect(names.some((n) => n.includes('kept-staging-user'))).toBe(true)
    const clothBody = JSON.parse(readFileSync(path.join(rebuilt.releaseDir, 'public/api/v1/versions/hVc1Tyvm.json'), 'utf8'))
    expect(clothBody.data.dependencies.map((d: { type: string }) => d.type)).toEqual(['embedded', 'embedded', 'required'])
    const appleskin = JSON.parse(readFileSync(path.join(rebuilt.releaseDir, 'public/api/v1/projects/appleskin/versions.json'), 'utf8'))
    expect(JSON.stringify(appleskin)).not.toBe(readFileSync(path.join(first.releaseDir, 'public/api/v1/projects/appleskin/versions.json'), 'utf8'))
    // A full build with the cache off keeps none.
    expect(existsSync(stagingCachePaths(path.join(root, 'dist-full')).file)).toBe(false)
  })

  it('is not used under another key, and is lost by a failing build; the next build reads everything', async () => {
    const cache = stagingCachePaths(dist)
    writeFileSync(cache.key, 'another build of the code\n')
    const other = await build()
    expect(loadLine()).not.toContain('Staging kept')
    expect(readFileSync(cache.key, 'utf8')).not.toContain('another build')

    const project = path.join(data, 'projects/sodium/project.json')
    const good = readFileSync(project, 'utf8')
    writeFileSync(project, '{ "not": "a project" ')
    const failed = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, log: () => {} }))
    expect(failed.ok).toBe(false)
    if (!failed.ok) expect(failed.problems.map((p) => p.file)).toContain('projects/sodium/project.json')
    expect(existsSync(cache.file) || existsSync(cache.key)).toBe(false)

    writeFileSync(project, good)
    const again = await build()
    expect(loadLine()).not.toContain('Staging kept')
    expect(published(again)).toEqual(published(other))
    expect(existsSync(cache.file) && existsSync(cache.key)).toBe(true)
  })
})

describe('a changed-files list (BUILD_CHANGED_FILES)', () => {
  const src = copySampleData(path.join(root, 'named'))
  const namedDist = path.join(root, 'named/dist')
  const listFile = path.join(root, 'named/changed.txt')
  const run = (changedFiles: NamedSource[] | null, distDir = namedDist, stagingCache = true): Promise<BuiltRelease> => {
    logs = []
    return buildRelease(src, distDir, { stagingCache, changedFiles, log: (l) => logs.push(l) })
  }
  const named = (text: string): NamedSource[] | null => {
    writeFileSync(listFile, text)
    return resolveBuildOptions({ dataDir: src, distDir: namedDist }, { BUILD_CHANGED_FILES: listFile }).changedFiles
  }

  it('reads the files it names, without listing the data folder, and publishes the bytes of a full build', async () => {
    await sleep(2100)
    await run(null)
    editSummary(src, 'sodium', 'Named in the changed-files list')
    addSodiumVersion(src)
    const removed = removableVersion(src)
    const removedId = JSON.parse(readFileSync(removed, 'utf8')).id as string
    rmSync(removed)
    const list = named(
      [
        '# written by hand, as git diff --name-only would from the data folder',
        'projects/sodium/project.json',
        './projects/sodium/versions/0.5.12+mc1.21.json',
        'projects/sodium/versions/0.5.12+mc1.21/sodium-fabric-0.5.12+mc1.21.jar',
        path.relative(src, removed),
        'projects/sodium/project.json',
        '',
      ].join('\r\n'),
    )
    // Aged past the racy window, so the next build stores their signatures and the one after reads only what it is told to.
    await sleep(2100)
    // Record files once each, with their kind's pattern; the blob is accepted and left out (the load checks blobs itself).
    expect(list).toEqual([
      [5, 'projects/sodium/project.json'],
      [6, 'projects/sodium/versions/0.5.12+mc1.21.json'],
      [6, path.relative(src, removed)],
    ])
    const rebuilt = await run(list)
    expect(loadLine()).toContain('Staging kept from the last build: read 2 changed record files (of the 3 BUILD_CHANGED_FILES names; the data folder was not listed)')
    const full = await run(null, path.join(root, 'named/dist-full'), false)
    expect(published(rebuilt)).toEqual(published(full))
    const names = [...readManifestOf(rebuilt.releaseDir).keys()]
    expect(names.some((n) => n.includes('Zz9Yy8Xx'))).toBe(true)
    expect(names.some((n) => n.includes(removedId))).toBe(false)

    // The list is trusted: an edit it does not name is not seen until a build that lists the folder.
    const users = path.join(src, 'users')
    const [someUser] = readdirSync(users).sort()
    const user = JSON.parse(readFileSync(path.join(users, someUser!), 'utf8'))
    writeFileSync(path.join(users, someUser!), JSON.stringify({ ...user, name: 'Renamed, not named' }))
    const profile = (built: BuiltRelease): string => readFileSync(path.join(built.releaseDir, `public/api/v1/users/${user.username}.json`), 'utf8')
    // Blobs are checked whether named or not: a jar's new bytes, its version file untouched, are seen.
    const blob = path.join(src, 'projects/appleskin/versions/2.5.1+mc1.20.1/appleskin-fabric-mc1.20-2.5.1.jar')
    writeFileSync(blob, Buffer.concat([readFileSync(blob), Buffer.from('changed bytes')]))
    const blobSha = createHash('sha256').update(readFileSync(blob)).digest('hex')
    await sleep(2100)
    const unnamed = await run(named(''))
    expect(loadLine()).toContain('read 1 changed record files (of the 0 BUILD_CHANGED_FILES names')
    expect(profile(unnamed)).not.toContain('Renamed, not named')
    expect(readManifestOf(unnamed.releaseDir).has(`public/api/v1/version-files/${blobSha}.json`)).toBe(true)
    const listedAgain = await run(null)
    expect(loadLine()).toContain('read 1 changed record files\n')
    expect(profile(listedAgain)).toContain('Renamed, not named')
  })

  it('refuses a list whose paths are not relative to the data folder, naming the line', () => {
    const refused = (text: string): string => {
      try {
        named(text)
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError)
        return (err as Error).message
      }
      throw new Error(`accepted ${JSON.stringify(text)}`)
    }
    expect(refused('projects/sodium/project.json\n/etc/passwd\n')).toBe(`BUILD_CHANGED_FILES: ${listFile}:2: "/etc/passwd" is not a path relative to the data folder`)
    expect(refused('../data/catalog.json')).toMatch(/:1: "..\/data\/catalog.json" is outside the data folder$/)
    expect(refused('projects\\sodium\\project.json')).toMatch(/:1: .* is not a path relative to the data folder$/)
    // Paths from the repository's root instead of the data folder's: they name nothing, and would re-read nothing.
    expect(refused('data/projects/sodium/project.json')).toMatch(/:1: "data\/projects\/sodium\/project.json" is no record file and no file of /)
    // A folder does not stand for its files.
    expect(refused('projects/sodium')).toMatch(/:1: "projects\/sodium" is a folder: name the files in it that changed$/)
    expect(refused('./')).toMatch(/:1: ".\/" is a folder/)
    rmSync(listFile)
    expect(() => resolveBuildOptions({ dataDir: src, distDir: namedDist }, { BUILD_CHANGED_FILES: listFile })).toThrow(/^BUILD_CHANGED_FILES: ENOENT/)
    // Unset or empty: the folder is listed.
    expect(resolveBuildOptions({ dataDir: src }, { BUILD_CHANGED_FILES: '' }).changedFiles).toBeNull()
  })
})
