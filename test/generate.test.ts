/**
 * The catalog generator: deterministic output, records valid against the source schemas and
 * the cross-record rules of data/README.md, realistic counts.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generateCatalog, resolveGenerateOptions, type GenerateSummary } from '../build/generate.ts'
import {
  sourceCatalogSchema,
  sourceCategorySchema,
  sourceGameVersionSchema,
  sourceProjectSchema,
  sourceTypeSchema,
  sourceUserSchema,
  sourceVersionSchema,
  type SourceProject,
  type SourceVersion,
} from '../build/schema/source.ts'

const root = mkdtempSync(join(tmpdir(), 'generate-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const generate = (name: string, seed: string, projects = 60, concurrency = 0): Promise<GenerateSummary> =>
  generateCatalog(resolveGenerateOptions({ out: join(root, name), projects, seed, concurrency }))

/** sha256 of every file, by path relative to `dir`. */
function hashTree(dir: string): Map<string, string> {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
  const hashes = new Map<string, string>()
  for (const e of files) {
    const path = join(e.parentPath, e.name)
    hashes.set(path.slice(dir.length + 1), createHash('sha256').update(readFileSync(path)).digest('hex'))
  }
  return new Map([...hashes].sort(([a], [b]) => (a < b ? -1 : 1)))
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(path, 'utf8'))
const listJson = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => join(dir, f))

/** Loads a generated catalog, parsing every record with its source schema. */
function loadCatalog(dir: string) {
  sourceCatalogSchema.parse(readJson(join(dir, 'catalog.json')))
  const ref = (kind: string): string[] => listJson(join(dir, 'reference', kind))
  const types = ref('types').map((f) => sourceTypeSchema.parse(readJson(f)))
  const categories = ref('categories').map((f) => sourceCategorySchema.parse(readJson(f)))
  const gameVersions = ref('game-versions').map((f) => sourceGameVersionSchema.parse(readJson(f)))
  const users = listJson(join(dir, 'users')).map((f) => sourceUserSchema.parse(readJson(f)))
  const projects: { folder: string; project: SourceProject; versions: SourceVersion[] }[] = []
  for (const folder of readdirSync(join(dir, 'projects')).sort()) {
    const project = sourceProjectSchema.parse(readJson(join(dir, 'projects', folder, 'project.json')))
    const versions = listJson(join(dir, 'projects', folder, 'versions')).map((f) => sourceVersionSchema.parse(readJson(f)))
    projects.push({ folder, project, versions })
  }
  return { types, categories, gameVersions, users, projects }
}

const expectUnique = (values: string[], what: string): void => {
  const dupes = values.filter((v, i) => values.indexOf(v) !== i)
  expect(dupes, `duplicate ${what}`).toEqual([])
}

describe('generateCatalog', () => {
  it('writes byte-identical trees for the same seed, and a different tree for another seed', async () => {
    const first = await generate('a1', 'a')
    await generate('a2', 'a', 60, 64) // the asynchronous writer writes the same bytes
    await generate('b', 'b')
    const a1 = hashTree(join(root, 'a1'))
    expect(a1.size).toBe(first.written)
    expect([...hashTree(join(root, 'a2'))]).toEqual([...a1])
    const b = hashTree(join(root, 'b'))
    const same = [...b].filter(([path, hash]) => a1.get(path) === hash).map(([path]) => path)
    expect(same.every((path) => path === 'catalog.json' || path.startsWith('reference/'))).toBe(true)
  })

  it('writes records that parse and satisfy the cross-record rules', () => {
    const { types, categories, gameVersions, users, projects } = loadCatalog(join(root, 'a1'))
    const userIds = new Set(users.map((u) => u.id))
    expectUnique(users.map((u) => u.id), 'user ids')
    expectUnique(users.map((u) => u.username.toLowerCase()), 'usernames')
    const projectIds = projects.map((p) => p.project.id)
    expectUnique(projectIds, 'project ids')
    expectUnique(projects.map((p) => p.project.slug), 'slugs')
    const lowerIds = new Set(projectIds.map((id) => id.toLowerCase()))
    expect(projects.filter((p) => lowerIds.has(p.project.slug))).toEqual([])
    const allVersions = projects.flatMap((p) => p.versions)
    const versionProject = new Map(allVersions.map((v) => [v.id, v.projectId]))
    expectUnique(allVersions.map((v) => v.id), 'version ids')
    const files = allVersions.flatMap((v) => v.files)
    expectUnique(files.map((f) => f.id), 'file ids')
    expectUnique(files.map((f) => f.sha256 ?? ''), 'sha256')
    expectUnique(files.map((f) => f.sha1 ?? ''), 'sha1')
    expectUnique(projects.flatMap((p) => p.project.screenshots.map((s) => s.id)), 'screenshot ids')
    const released = new Map(gameVersions.map((g) => [g.version, Date.parse(g.releasedAt)]))
    for (const { folder, project, versions } of projects) {
      const type = types.find((t) => t.slug === project.type)
      expect(type, folder).toBeDefined()
      expect(folder).toBe(project.slug)
      const allowed = new Set(categories.filter((c) => c.projectType === project.type).map((c) => c.slug))
      expect(project.categories.every((c) => allowed.has(c)), folder).toBe(true)
      expect(project.categories.length).toBeGreaterThanOrEqual(1)
      expect(userIds.has(project.authorId)).toBe(true)
      expect(project.members.every((m) => userIds.has(m.userId) && m.userId !== project.authorId)).toBe(true)
      expectUnique(versions.map((v) => v.versionNumber), `version numbers of ${folder}`)
      expect(versions.length).toBeGreaterThanOrEqual(1)
      for (const v of versions) {
        expect(v.projectId).toBe(project.id)
        expect(v.platforms.every((p) => type!.platforms.includes(p))).toBe(true)
        const created = Date.parse(v.createdAt)
        expect(v.gameVersions.every((g) => (released.get(g) ?? Infinity) <= created), v.id).toBe(true)
        expect(created).toBeGreaterThanOrEqual(Date.parse(project.createdAt))
        if (v.publishedAt) expect(Date.parse(v.publishedAt)).toBeGreaterThanOrEqual(created)
        expect(v.files.filter((f) => f.primary)).toHaveLength(1)
        for (const f of v.files) {
          expect(type!.fileExtensions.some((ext) => f.filename.endsWith(ext)), f.filename).toBe(true)
          expect(f.size!).toBeLessThanOrEqual(type!.maxFileSize)
        }
        for (const d of v.dependencies) {
          if (d.projectId) expect(projectIds).toContain(d.projectId)
          if (d.projectId) expect(d.projectId).not.toBe(project.id)
          if (d.versionId) expect(versionProject.get(d.versionId)).toBe(d.projectId)
          if (d.type === 'embedded') expect(d.external?.source).toBe('maven')
        }
      }
      // Version order by creation is version-number order: each one bumps the number.
      const byDate = [...versions].sort((x, y) => Date.parse(x.createdAt) - Date.parse(y.createdAt))
      const numbers = byDate.map((v) => v.versionNumber.split(/[-+]/)[0]!.split('.').map(Number))
      for (let k = 1; k < numbers.length; k++) {
        const [a, b] = [numbers[k - 1]!, numbers[k]!]
        expect(a[0]! < b[0]! || (a[0] === b[0] && (a[1]! < b[1]! || (a[1] === b[1] && a[2]! < b[2]!)))).toBe(true)
      }
    }
  })

  it('produces counts in the expected ranges', () => {
    const { users, projects } = loadCatalog(join(root, 'a1'))
    expect(projects).toHaveLength(60)
    expect(users).toHaveLength(30)
    const versions = projects.flatMap((p) => p.versions)
    expect(versions.length).toBeGreaterThan(60 * 4)
    expect(versions.length).toBeLessThan(60 * 25)
    const files = versions.flatMap((v) => v.files).length
    expect(files / versions.length).toBeGreaterThan(1.05)
    expect(files / versions.length).toBeLessThan(1.4)
    const published = projects.filter((p) => p.project.status === 'published').length
    expect(published / projects.length).toBeGreaterThan(0.85)
    expect(new Set(projects.map((p) => p.project.type)).size).toBeGreaterThan(1)
  })

  it('skews versions per project at 2,000 projects (dry run)', async () => {
    const s = await generateCatalog(resolveGenerateOptions({ out: join(root, 'dry'), projects: 2000, seed: 'a', dryRun: true }))
    expect(s.users).toBe(1000)
    expect(s.versions / s.projects).toBeGreaterThan(8)
    expect(s.versions / s.projects).toBeLessThan(14)
    expect(s.files / s.versions).toBeGreaterThan(1.15)
    expect(s.files / s.versions).toBeLessThan(1.25)
  })

  it('refuses a non-empty folder unless forced', async () => {
    const out = join(root, 'busy')
    mkdirSync(out)
    writeFileSync(join(out, 'keep.txt'), 'x')
    await expect(generate('busy', 'a', 3)).rejects.toThrow(/not empty/)
    await generateCatalog(resolveGenerateOptions({ out, projects: 3, seed: 'a', force: true }))
    expect(readdirSync(out).sort()).toEqual(['catalog.json', 'keep.txt', 'projects', 'reference', 'users'])
  })
})
