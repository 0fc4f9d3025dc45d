/**
 * The build: validation names every problem (file: field path: message) and a failed build leaves the
 * live release untouched; releases are published atomically and leftovers of killed builds cleaned.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild, type BuildResult } from '../build/index.ts'
import type { Problem } from '../build/context.ts'
import { startServer } from './harness.ts'

let root: string
let data: string
let dist: string

const build = (): Promise<BuildResult> => runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, log: () => {} }))
const readJson = (file: string): any => JSON.parse(readFileSync(path.join(data, file), 'utf8'))
const writeJson = (file: string, value: unknown): void => {
  mkdirSync(path.dirname(path.join(data, file)), { recursive: true })
  writeFileSync(path.join(data, file), JSON.stringify(value, null, 2))
}
const versionFiles = (slug: string): string[] =>
  readdirSync(path.join(data, 'projects', slug, 'versions')).filter((f) => f.endsWith('.json')).map((f) => `projects/${slug}/versions/${f}`)
const problemsOf = (result: BuildResult): Problem[] => {
  expect(result.ok).toBe(false)
  return result.ok ? [] : result.problems
}
const has = (problems: Problem[], file: string, pathPart: string, message: RegExp): boolean =>
  problems.some((p) => p.file === file && p.path.includes(pathPart) && message.test(p.message))

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'catalog-build-'))
  data = path.join(root, 'data')
  dist = path.join(root, 'dist')
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('build and publish', () => {
  it('publishes releases atomically, keeps the previous one, and cleans up after a killed build', async () => {
    cpSync('data', data, { recursive: true })
    const first = await build()
    expect(first.ok).toBe(true)
    expect(readlinkSync(path.join(dist, 'current'))).toBe('releases/00000001')
    // A build killed mid-way leaves a temp folder and a stale lock; the next build must not trip on either.
    mkdirSync(path.join(dist, 'releases', '.tmp-00000099'))
    writeFileSync(path.join(dist, '.build.lock'), '999999999')
    const second = await build()
    expect(second.ok).toBe(true)
    expect(readlinkSync(path.join(dist, 'current'))).toBe('releases/00000002')
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000001', '00000002'])
    const info = JSON.parse(readFileSync(path.join(dist, 'current', 'release.json'), 'utf8'))
    expect(info.serial).toBe(2)
    expect(info.files).toBeGreaterThan(info.bodies)
    // Every file of the manifest exists with the size it states.
    const manifest = readFileSync(path.join(dist, 'current', 'manifest.tsv'), 'utf8').trim().split('\n')
    expect(manifest.length).toBe(info.files)
    for (const line of manifest.slice(0, 200)) {
      const [name, , size] = line.split('\t')
      expect(readFileSync(path.join(dist, 'current', name!)).length).toBe(Number(size))
    }
  })

  it('names all three mistakes of one file, fails, and leaves the live release serving', async () => {
    const server = await startServer(dist)
    const before = await (await server.get('/projects/sodium')).text()
    const file = versionFiles('sodium')[0]!
    const version = readJson(file)
    writeJson(file, { ...version, channel: 'nightly', createdAt: 'yesterday', files: [{ ...version.files[0], filename: 'bad/name.jar' }] })
    const problems = problemsOf(await build())
    expect(has(problems, file, 'channel', /stable|beta|alpha|Invalid/i)).toBe(true)
    expect(has(problems, file, 'createdAt', /./)).toBe(true)
    expect(has(problems, file, 'files[0].filename', /file name/)).toBe(true)
    expect(readlinkSync(path.join(dist, 'current'))).toBe('releases/00000002')
    expect(readdirSync(path.join(dist, 'releases')).filter((n) => n.startsWith('.tmp'))).toEqual([])
    expect(existsSync(path.join(dist, '.build.lock'))).toBe(false)
    expect(await (await server.get('/projects/sodium')).text()).toBe(before)
    expect(server.serverErrors()).toBe(0)
    await server.close()
    writeJson(file, version)
  })

  it('finds cross-record mistakes across files', async () => {
    const [a, b, c] = versionFiles('lithium')
    const va = readJson(a!)
    const vb = readJson(b!)
    const vc = readJson(c!)
    const sodiumVersion = readJson(versionFiles('sodium')[0]!)
    const irisId = readJson('projects/iris/project.json').id
    // The three dependency mistakes a version can make on its own: no such version, a version of
    // another project than the one named, its own project (by id).
    writeJson(c!, {
      ...vc,
      dependencies: [
        { type: 'required', versionId: 'NoSuchV1' },
        { type: 'optional', projectId: irisId, versionId: sodiumVersion.id },
        { type: 'incompatible', projectId: vc.projectId },
      ],
    })
    writeJson(a!, { ...va, gameVersions: ['9.99'], platforms: ['java'], dependencies: [{ type: 'required', projectId: 'Unknown1' }] })
    writeJson(b!, { ...vb, versionNumber: va.versionNumber, files: vb.files.map((f: object, i: number) => (i === 0 ? { ...f, sha1: '0'.repeat(40) } : f)) })
    const project = readJson('projects/iris/project.json')
    writeJson('projects/iris/project.json', { ...project, categories: ['no-such-category'], authorId: 'Nobody01' })
    writeJson('projects/zz-copy/project.json', { ...project, id: 'CopyProj1', slug: project.slug })
    const problems = problemsOf(await build())
    expect(has(problems, a!, 'gameVersions[0]', /unknown game version 9\.99/)).toBe(true)
    expect(has(problems, a!, 'platforms[0]', /not allowed for type mod/)).toBe(true)
    expect(has(problems, a!, 'dependencies[0].projectId', /unknown project Unknown1/)).toBe(true)
    expect(has(problems, c!, 'dependencies[0].versionId', /^unknown version NoSuchV1$/)).toBe(true)
    expect(has(problems, c!, 'dependencies[1].versionId', new RegExp(`^version ${sodiumVersion.id} belongs to project ${sodiumVersion.projectId}, not ${irisId}$`))).toBe(true)
    expect(has(problems, c!, 'dependencies[2]', /^a version cannot depend on its own project$/)).toBe(true)
    // Each mistake is named once, by the file that makes it.
    expect(problems.filter((p) => p.file === c!).map((p) => p.path)).toEqual(['dependencies[0].versionId', 'dependencies[1].versionId', 'dependencies[2]'])
    expect(has(problems, b!, 'versionNumber', /duplicate version number/)).toBe(true)
    expect(has(problems, b!, 'files[0].sha1', /declared 0+ but the blob has/)).toBe(true)
    expect(has(problems, 'projects/iris/project.json', 'categories[0]', /unknown category/)).toBe(true)
    expect(has(problems, 'projects/iris/project.json', 'authorId', /unknown user Nobody01/)).toBe(true)
    expect(has(problems, 'projects/zz-copy/project.json', 'slug', /duplicate project slug/)).toBe(true)
    writeJson(a!, va)
    writeJson(b!, vb)
    writeJson(c!, vc)
    writeJson('projects/iris/project.json', project)
    rmSync(path.join(data, 'projects/zz-copy'), { recursive: true })
  })

  it('fails with the problems, not a database error, when only cross-record checks fail (they run beside the catalog)', async () => {
    // Valid on its own, so the catalog is written while the checks run; the duplicate id breaks the catalog's keys.
    const project = readJson('projects/iris/project.json')
    writeJson('projects/zz-twin/project.json', { ...project, slug: 'iris-twin' })
    const result = await build()
    expect(result.ok).toBe(false)
    expect(has(problemsOf(result), 'projects/zz-twin/project.json', 'id', /duplicate project id/)).toBe(true)
    expect(has(problemsOf(result), 'projects/iris/project.json', 'id', /duplicate project id/)).toBe(true)
    rmSync(path.join(data, 'projects/zz-twin'), { recursive: true })
    expect((await build()).ok).toBe(true)
  })

  it('refuses one file in two projects and a blob path outside the data folder', async () => {
    const src = readJson(versionFiles('sodium')[0]!)
    const file = versionFiles('lithium')[0]!
    const v = readJson(file)
    const blob = path.join(data, 'projects/sodium/versions', src.files[0].path)
    const copy = path.join(path.dirname(path.join(data, file)), 'stolen.jar')
    cpSync(blob, copy)
    writeJson(file, { ...v, files: [...v.files, { id: 'StolenF1', filename: 'stolen.jar', path: 'stolen.jar' }, { id: 'Escape01', filename: 'x.jar', path: '../../../../../etc/hostname' }] })
    const problems = problemsOf(await build())
    expect(problems.some((p) => p.file === file && /in another project/.test(p.message))).toBe(true)
    expect(has(problems, file, `files[${v.files.length + 1}].path`, /inside the data folder/)).toBe(true)
    writeJson(file, v)
    rmSync(copy)
    expect((await build()).ok).toBe(true)
  })
})
