/**
 * Reference data of a generated catalog: read from an existing source catalog (by default the
 * repository's data/) so categories, types, platforms and game versions are real, then copied
 * byte for byte into the output.
 */
import { copyFileSync, cpSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  projectTypes,
  sourceCatalogSchema,
  sourceCategorySchema,
  sourceGameVersionSchema,
  sourceTypeSchema,
  type SourceGameVersion,
  type SourceType,
} from '../schema/source.ts'

export type ProjectType = (typeof projectTypes)[number]

/** A game version with its release time in milliseconds, for date arithmetic. */
export type GameVersionRef = SourceGameVersion & { releasedMs: number }

/** What the generator needs to know of the reference data. */
export type Reference = {
  /** Enabled content types, in `projectTypes` order. */
  types: Map<ProjectType, SourceType>
  /** Category slugs per type, sorted. */
  categories: Record<ProjectType, string[]>
  /** All game versions, oldest first. */
  gameVersions: GameVersionRef[]
  /** Game versions of type `release`, oldest first (all versions if there is none). */
  releases: GameVersionRef[]
}

/** Lists the `.json` files of a folder, sorted so the result never depends on readdir order. */
function listJsonFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => join(dir, name))
}

const readJson = (file: string): unknown => JSON.parse(readFileSync(file, 'utf8'))

/** Loads and validates catalog.json and reference/** of a source catalog. */
export function loadReference(dataDir: string): Reference {
  sourceCatalogSchema.parse(readJson(join(dataDir, 'catalog.json')))
  const types = new Map<ProjectType, SourceType>()
  const found = listJsonFiles(join(dataDir, 'reference', 'types')).map((f) => sourceTypeSchema.parse(readJson(f)))
  for (const slug of projectTypes) {
    const type = found.find((t) => t.slug === slug)
    if (type?.enabled) types.set(slug, type)
  }
  if (types.size === 0) throw new Error(`${dataDir}: no enabled content type in reference/types`)
  const categories: Record<ProjectType, string[]> = { mod: [], map: [], skin: [] }
  for (const file of listJsonFiles(join(dataDir, 'reference', 'categories'))) {
    const category = sourceCategorySchema.parse(readJson(file))
    categories[category.projectType].push(category.slug)
  }
  for (const slug of projectTypes) categories[slug].sort()
  const gameVersions = listJsonFiles(join(dataDir, 'reference', 'game-versions'))
    .map((f) => sourceGameVersionSchema.parse(readJson(f)))
    .map((v) => ({ ...v, releasedMs: Date.parse(v.releasedAt) }))
    .sort((a, b) => a.releasedMs - b.releasedMs || (a.version < b.version ? -1 : 1))
  if (gameVersions.length === 0) throw new Error(`${dataDir}: no game version in reference/game-versions`)
  const releases = gameVersions.filter((v) => v.type === 'release')
  return { types, categories, gameVersions, releases: releases.length > 0 ? releases : gameVersions }
}

/** Copies catalog.json and reference/** unchanged into the output catalog. */
export function writeReference(dataDir: string, outDir: string): number {
  copyFileSync(join(dataDir, 'catalog.json'), join(outDir, 'catalog.json'))
  cpSync(join(dataDir, 'reference'), join(outDir, 'reference'), { recursive: true })
  return 1 + readdirSync(join(outDir, 'reference'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length
}
