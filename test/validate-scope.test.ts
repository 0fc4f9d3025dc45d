/**
 * A rebuild from a kept staging checks only the records its load touched and what refers to them
 * (build/validate.ts): each edit below breaks the catalog, most of them through a record the load
 * did not read again (a user, project or version removed, moved or renamed under unchanged records
 * that name it), and the rebuild must find exactly the problems a build without a kept staging
 * (every record checked) finds.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import type { Problem } from '../build/context.ts'
import { runBuild, type BuildResult } from '../build/index.ts'
import { resolveReleaseOptions } from '../build/release/options.ts'
import { copySampleData } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'validate-scope-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
let logs: string[] = []

/** A build into `dist` from its kept staging (when the last build left one); no snapshot or archive: the checks come first. */
const build = (stagingCache = true, distDir = dist): Promise<BuildResult> => {
  logs = []
  const log = (line: string): void => void logs.push(line)
  return runBuild(resolveBuildOptions({ dataDir: data, distDir, countersFile: null, stagingCache, log, release: resolveReleaseOptions({ snapshot: false, archive: false }) }))
}

/** What the validation step says it checked: "the N records the load touched …", "every record", …; null without the step. */
function checked(): string | null {
  const m = logs.map((l) => l.match(/^… validated the catalog \(\d+ problems; checked (.+)\) after /)).find((x) => x)
  return m ? m[1]! : null
}

const problemsOf = (result: BuildResult): Problem[] => (result.ok ? [] : result.problems)
const describeProblem = (p: Problem): string => `${p.file}: ${p.path}: ${p.message}`

// The source files an edit changed, with what they held (null: absent), put back after it.
const saved = new Map<string, string | null>()
function save(file: string): string {
  const full = path.join(data, file)
  if (!saved.has(file)) saved.set(file, existsSync(full) ? readFileSync(full, 'utf8') : null)
  return full
}
function readJson(file: string): Record<string, any> {
  return JSON.parse(readFileSync(path.join(data, file), 'utf8'))
}
// Folders an edit made, removed after it.
const madeDirs: string[] = []
function writeJson(file: string, value: unknown): void {
  const full = save(file)
  if (!existsSync(path.dirname(full))) madeDirs.push(path.dirname(full))
  mkdirSync(path.dirname(full), { recursive: true })
  writeFileSync(full, JSON.stringify(value, null, 2))
}
function editJson(file: string, edit: (record: Record<string, any>) => void): void {
  const record = readJson(file)
  edit(record)
  writeJson(file, record)
}
function remove(file: string): void {
  rmSync(save(file))
}
function restore(): void {
  for (const [file, text] of saved) {
    const full = path.join(data, file)
    if (text === null) rmSync(full, { force: true })
    else writeFileSync(full, text)
  }
  saved.clear()
  for (const dir of madeDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/** Every version record file of the sample, relative to the data folder. */
function versionFiles(): string[] {
  return readdirSync(path.join(data, 'projects')).flatMap((folder) => {
    const dir = path.join(data, 'projects', folder, 'versions')
    return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => `projects/${folder}/versions/${f}`) : []
  })
}
const versionFileOf = (id: string): string => versionFiles().find((f) => readJson(f).id === id)!
const projectId = (folder: string): string => readJson(`projects/${folder}/project.json`).id
const userFileOf = (id: string): string => `users/${readdirSync(path.join(data, 'users')).find((f) => readJson(`users/${f}`).id === id)!}`

beforeAll(async () => {
  // Files changed within the last 2 s are read again by every build (racy): let the copy age.
  await sleep(2100)
  const first = await build()
  expect(first.ok).toBe(true)
  expect(checked()).toBe('every record')
}, 60_000)

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("a rebuild's checks, scoped to what its load touched", () => {
  it('checks no record when nothing changed, and the changed ones of a valid edit', async () => {
    expect((await build()).ok).toBe(true)
    expect(checked()).toBe('the 0 records the load touched and what refers to them')
    editJson('projects/iris/project.json', (p) => (p.summary = 'Shaders, scoped checks.'))
    const edited = await build()
    saved.clear()
    expect(edited.ok).toBe(true)
    expect(checked()).toBe('the 1 record the load touched and what refers to them')
    await sleep(2100)
  })

  // Each edit breaks the catalog; `found`: problems it must give (file: path: message), so an edit that broke nothing cannot pass.
  const edits: { name: string; edit: () => void; found: RegExp[]; scope?: 'every' }[] = [
    {
      name: 'a member removed from the users, named by unchanged projects',
      edit: () => remove(userFileOf('fjGtZ61O')),
      found: [/^projects\/create\/project\.json: members\[\d+\]\.userId: unknown user fjGtZ61O$/, /^projects\/modmenu\/project\.json: members/],
    },
    {
      name: "a project's author removed from the users",
      edit: () => remove(userFileOf(readJson('projects/lithium/project.json').authorId)),
      found: [/^projects\/lithium\/project\.json: authorId: unknown user /],
    },
    {
      name: 'a new user with the username and another with the id of existing ones',
      edit: () => {
        const user = readJson(userFileOf('fjGtZ61O'))
        writeJson('users/zz-name-twin.json', { ...user, id: 'NameTwin1' })
        writeJson('users/zz-id-twin.json', { ...user, username: 'id_twin_carl' })
      },
      found: [/: username: duplicate username /, /^users\/zz-id-twin\.json: id: duplicate user id fjGtZ61O$/, /^users\/cobblestone_carl\.json: id: duplicate user id/],
    },
    {
      name: 'a project others depend on removed (its versions left in its folder)',
      edit: () => remove('projects/sodium/project.json'),
      found: [/^projects\/sodium\/versions\/.+: projectId: no project\.json in this folder$/, /^projects\/sodium\/versions\/.+: projectId: unknown project /, /^projects\/iris\/versions\/.+: dependencies\[\d+\]\.projectId: unknown project /],
    },
    {
      name: 'a project given another id: its versions, and dependencies naming the old one',
      edit: () => editJson('projects/fabric-api/project.json', (p) => (p.id = 'NewFabric1')),
      found: [/^projects\/fabric-api\/versions\/.+: projectId: is p1e5t4a0 but the folder belongs to project NewFabric1$/, /^projects\/modmenu\/versions\/.+: dependencies\[\d+\]\.projectId: unknown project p1e5t4a0$/],
    },
    {
      name: 'a project of another type: its unchanged versions and files break its rules',
      edit: () => editJson('projects/lithium/project.json', (p) => ((p.type = 'skin'), (p.categories = []))),
      found: [/^projects\/lithium\/versions\/.+: platforms\[0\]: platform \w+ is not allowed for type skin$/, /^projects\/lithium\/versions\/.+: files\[0\]\.filename: extension not allowed for type skin/],
    },
    {
      name: "a new project whose id is another's slug, and one whose slug is another's id",
      edit: () => {
        const project = readJson('projects/iris/project.json')
        writeJson('projects/zz-lithium-id/project.json', { ...project, id: 'Lithium', slug: 'lithium-id' })
        writeJson('projects/zz-iris-slug/project.json', { ...project, id: 'IrisSlug1', slug: projectId('sodium').toLowerCase() })
      },
      found: [/^projects\/lithium\/project\.json: slug: slug lithium equals the id of project lithium-id$/, /^projects\/zz-iris-slug\/project\.json: slug: slug \w+ equals the id of project sodium$/],
    },
    {
      name: 'a new project with the slug of another, and its author as a member',
      edit: () => {
        const project = readJson('projects/iris/project.json')
        writeJson('projects/zz-slug-twin/project.json', { ...project, id: 'SlugTwin1', members: [{ userId: project.authorId, role: 'Owner' }] })
      },
      found: [/^projects\/iris\/project\.json: slug: duplicate project slug iris$/, /^projects\/zz-slug-twin\/project\.json: members\[0\]\.userId: the author is already the owner/],
    },
    {
      name: 'a version others name removed',
      edit: () => remove(versionFileOf('U3QEVmGY')),
      found: [/^projects\/iris\/versions\/1\.7\.1\+1\.21\.json: dependencies\[\d+\]\.versionId: unknown version U3QEVmGY$/, /^projects\/sodium-extra\/versions\/.+: unknown version U3QEVmGY$/],
    },
    {
      name: 'a version others name moved to another project',
      edit: () => editJson(versionFileOf('U3QEVmGY'), (v) => (v.projectId = projectId('lithium'))),
      found: [new RegExp(`^projects/iris/versions/1\\.7\\.1\\+1\\.21\\.json: dependencies\\[\\d+\\]\\.versionId: version U3QEVmGY belongs to project ${projectId('lithium')}, not MOFfkAST$`)],
    },
    {
      name: 'a version named by its id alone moved into the project that names it',
      edit: () => editJson(versionFileOf('8uIyTn73'), (v) => (v.projectId = projectId('copperworks'))),
      found: [/^projects\/copperworks\/versions\/1\.0\.0\.json: dependencies\[\d+\]: a version cannot depend on its own project$/],
    },
    {
      name: "a new version with another's version number, id and files",
      edit: () => {
        // In the same folder: the files' paths are the same blobs.
        const file = versionFileOf('U3QEVmGY')
        const version = readJson(file)
        writeJson(path.join(path.dirname(file), 'zz-twin.json'), { ...version, versionNumber: '0.5.11-twin' })
        writeJson(path.join(path.dirname(file), 'zz-number.json'), { ...version, id: 'NumberTw1' })
      },
      found: [/: versionNumber: duplicate version number /, /: id: duplicate version id U3QEVmGY$/, /: files\[0\]\.id: duplicate file id /],
    },
    {
      name: "a version of another project with the same file as one of Sodium's",
      edit: () => {
        const sodium = versionFileOf('U3QEVmGY')
        const bytes = readFileSync(path.join(data, path.dirname(sodium), readJson(sodium).files[0].path))
        const [sha256, sha1] = ['sha256', 'sha1'].map((a) => createHash(a).update(bytes).digest('hex'))
        const file = versionFiles().find((f) => f.startsWith('projects/lithium/'))!
        editJson(file, (v) => v.files.push({ id: 'SameFile1', filename: 'same.jar', size: bytes.length, sha256, sha1 }))
      },
      found: [/^projects\/sodium\/versions\/.+: files\[0\]\.sha256: the same file \(sha256 \w+\) is in another project$/, /^projects\/lithium\/versions\/.+\.sha256: the same file/],
    },
    {
      name: 'a category removed that projects use (a reference file: every record checked)',
      edit: () => {
        const dir = path.join(data, 'reference/categories')
        const used = new Set(readdirSync(path.join(data, 'projects')).flatMap((f) => readJson(`projects/${f}/project.json`).categories as string[]))
        const file = readdirSync(dir).find((f) => used.has(JSON.parse(readFileSync(path.join(dir, f), 'utf8')).slug))!
        remove(`reference/categories/${file}`)
      },
      found: [/: categories\[\d+\]: unknown category /],
      scope: 'every',
    },
  ]

  for (const { name, edit, found, scope } of edits) {
    it(name, async () => {
      let rebuilt: BuildResult | null = null
      try {
        edit()
        const scoped = await build()
        expect(checked()).toMatch(scope === 'every' ? /^every record: a reference file was touched$/ : /^the [1-9]\d* records? the load touched and what refers to them$/)
        const full = await build(false, path.join(root, 'full'))
        const problems = problemsOf(scoped).map(describeProblem)
        expect(problems).toEqual(problemsOf(full).map(describeProblem))
        for (const pattern of found) expect(problems, String(pattern)).toContainEqual(expect.stringMatching(pattern))
      } finally {
        // Whatever failed: a failed build keeps no staging, so this one loads everything, checks every
        // record, and keeps it for the next edit. After 2 s, so the files put back are not read again
        // by the next build as racy (they would be touched records of its edit).
        restore()
        await sleep(2100)
        rebuilt = await build()
      }
      expect(rebuilt.ok).toBe(true)
      expect(checked()).toBe('every record')
    })
  }
})
