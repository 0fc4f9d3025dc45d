/**
 * A deterministic small change to an existing source catalog, for measuring incremental rebuilds
 * (`npm run generate -- --out DIR --mutate PCT`): PCT % of the projects, chosen by the seed, get
 * one more follower, a line more of description and a later updatedAt, and their newest version
 * 1,000 more downloads (which moves the project's downloads, hence its ranks, its author's
 * profile and the lists it is in). Records are rewritten in the generator's format.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { z } from 'zod'

/** Options of a mutation run. */
export const mutateOptionsSchema = z.object({
  /** Catalog folder edited in place. */
  dir: z.string().min(1),
  /** Share of the projects to edit, in percent (0 < p ≤ 100). */
  percent: z.number().gt(0).lte(100),
  /** Chooses which projects; the same seed and catalog edit the same projects. */
  seed: z.string().min(1),
})
export type MutateOptions = z.infer<typeof mutateOptionsSchema>

/** What a mutation run changed. */
export interface MutateSummary {
  /** Projects in the catalog. */
  projects: number
  /** Projects whose project.json was rewritten. */
  editedProjects: number
  /** Version records rewritten (the newest version of each edited project that has one). */
  editedVersions: number
  /** Folders of the edited projects, in the order chosen. */
  folders: string[]
  /** The record files rewritten, relative to the catalog folder (a changed-files list: BUILD_CHANGED_FILES). */
  files: string[]
}

const DAY_MS = 86_400_000
const toJson = (record: unknown): string => JSON.stringify(record, null, 2) + '\n'

/** Picks the project folders to edit: the first ⌈n·p/100⌉ by SHA-256 of seed and folder name. */
export function pickMutatedFolders(folders: readonly string[], percent: number, seed: string): string[] {
  const count = Math.min(folders.length, Math.ceil((folders.length * percent) / 100))
  const key = (f: string): string => createHash('sha256').update(`${seed}\0${f}`).digest('hex')
  return folders
    .map((f) => [key(f), f] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, count)
    .map(([, f]) => f)
}

/** Edits `percent` % of the projects of `dir` in place; returns the counts. */
export function mutateCatalog(input: MutateOptions): MutateSummary {
  const options = mutateOptionsSchema.parse(input)
  const projectsDir = join(options.dir, 'projects')
  const folders = readdirSync(projectsDir).sort()
  const chosen = pickMutatedFolders(folders, options.percent, options.seed)
  let editedVersions = 0
  const files: string[] = []
  for (const folder of chosen) {
    const file = join(projectsDir, folder, 'project.json')
    files.push(`projects/${folder}/project.json`)
    const project = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
    project.followers = Number(project.followers ?? 0) + 1
    project.description = `${String(project.description ?? '')}\n\nUpdated: one more follower.`.trimStart()
    project.updatedAt = new Date(Date.parse(String(project.updatedAt)) + DAY_MS).toISOString()
    writeFileSync(file, toJson(project))
    const version = editNewestVersion(join(projectsDir, folder, 'versions'))
    if (version !== null) {
      editedVersions++
      files.push(`projects/${folder}/versions/${version}`)
    }
  }
  return { projects: folders.length, editedProjects: chosen.length, editedVersions, folders: chosen, files }
}

/** Adds downloads to the version published last (ties: file name); returns its file name, or null when there is none. */
function editNewestVersion(dir: string): string | null {
  let names: string[]
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort()
  } catch {
    return null
  }
  let newest: { name: string; file: string; record: Record<string, unknown>; at: number } | null = null
  for (const name of names) {
    const file = join(dir, name)
    const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>
    const at = Date.parse(String(record.publishedAt ?? record.createdAt))
    if (!newest || at > newest.at) newest = { name, file, record, at }
  }
  if (!newest) return null
  newest.record.downloads = Number(newest.record.downloads ?? 0) + 1000
  writeFileSync(newest.file, toJson(newest.record))
  return newest.name
}
