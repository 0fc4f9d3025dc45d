/**
 * The 1% change of the build benchmark (`npm run generate -- --mutate PCT`): deterministic, edits
 * exactly the projects it reports, keeps the catalog valid, and a rebuild publishes it as changes.
 */
import { createHash } from 'node:crypto'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { mutateCatalog, pickMutatedFolders } from '../build/generate/mutate.ts'
import { runBuild } from '../build/index.ts'
import { sourceProjectSchema, sourceVersionSchema } from '../build/schema/source.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'mutate-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const sample = path.resolve('data')

/** sha256 of every file under dir, by relative path. */
function hashTree(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue
    const file = path.join(e.parentPath, e.name)
    out.set(path.relative(dir, file), createHash('sha256').update(readFileSync(file)).digest('hex'))
  }
  return out
}
const copySample = (name: string): string => {
  const dir = path.join(root, name)
  cpSync(sample, dir, { recursive: true })
  return dir
}
const readJson = (file: string): any => JSON.parse(readFileSync(file, 'utf8'))

describe('mutateCatalog', () => {
  it('edits the same ⌈n·p/100⌉ projects for the same seed, and only their project.json and newest version', () => {
    const a = copySample('a')
    const b = copySample('b')
    const folders = readdirSync(path.join(sample, 'projects')).sort()
    const first = mutateCatalog({ dir: a, percent: 10, seed: 's' })
    const second = mutateCatalog({ dir: b, percent: 10, seed: 's' })
    expect(first.projects).toBe(folders.length)
    expect(first.editedProjects).toBe(Math.ceil(folders.length / 10))
    expect(first.folders).toEqual(pickMutatedFolders(folders, 10, 's'))
    expect(second).toEqual(first)
    expect([...hashTree(b)]).toEqual([...hashTree(a)])
    expect(pickMutatedFolders(folders, 10, 'other')).not.toEqual(first.folders)

    const before = hashTree(sample)
    const changed = [...hashTree(a)].filter(([file, hash]) => before.get(file) !== hash).map(([file]) => file).sort()
    const projectFiles = changed.filter((f) => f.endsWith('/project.json'))
    const versionFiles = changed.filter((f) => f.includes('/versions/'))
    expect(changed).toHaveLength(projectFiles.length + versionFiles.length)
    expect(projectFiles).toEqual(first.folders.map((f) => `projects/${f}/project.json`).sort())
    expect(versionFiles).toHaveLength(first.editedVersions)
    // What it reports as rewritten is exactly what changed: a changed-files list for the rebuild (BUILD_CHANGED_FILES).
    expect([...first.files].sort()).toEqual(changed)
    for (const folder of first.folders) {
      const old = readJson(path.join(sample, 'projects', folder, 'project.json'))
      const now = sourceProjectSchema.parse(readJson(path.join(a, 'projects', folder, 'project.json')))
      expect(now.followers).toBe((old.followers ?? 0) + 1)
      expect(Date.parse(now.updatedAt) - Date.parse(old.updatedAt)).toBe(86_400_000)
    }
    for (const file of versionFiles) {
      const now = sourceVersionSchema.parse(readJson(path.join(a, file)))
      expect(now.downloads).toBe((readJson(path.join(sample, file)).downloads ?? 0) + 1000)
    }
  })

  it('keeps the catalog valid; the rebuild publishes the edits as changed files only', async () => {
    const data = copySample('built')
    const dist = path.join(root, 'dist')
    const options = resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, log: () => {} })
    const full = await runBuild(options)
    expect(full.ok).toBe(true)
    const m = mutateCatalog({ dir: data, percent: 10, seed: 's' })
    const rebuilt = await runBuild(options)
    if (!rebuilt.ok) throw new Error(JSON.stringify(rebuilt.problems))
    const c = rebuilt.release.changes
    expect(c.added).toBe(0)
    expect(c.removed).toBe(0)
    // Each edited project's detail under its id and slug at least; far from everything.
    expect(c.changed).toBeGreaterThanOrEqual(2 * m.editedProjects)
    expect(c.unchanged).toBeGreaterThan(c.changed)
    const slug = m.folders[0]!
    const detail = readJson(path.join(rebuilt.releaseDir, `public/api/v1/projects/${slug}.json`))
    expect(detail.data.followers).toBe((readJson(path.join(sample, 'projects', slug, 'project.json')).followers ?? 0) + 1)
  })
})
