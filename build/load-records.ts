/**
 * Parses and validates a chunk of source records into staging rows, with no database and no shared
 * state: the same function runs on the build's main thread and in the load worker
 * (load-worker.ts), so which of them handled a chunk never changes a byte of the result. Rows come
 * back already serialised (JSON arrays): the main thread only joins them into an insert.
 */
import { createHash } from 'node:crypto'
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'
import { formatPath, type Problem } from './context.ts'
import type { RenderFileInput } from './render/resources.ts'
import { storedSignature } from './staging-cache.ts'
import { contentTypeOf } from './static-paths.ts'
import {
  sourceCatalogSchema,
  sourceCategorySchema,
  sourceGameVersionSchema,
  sourceProjectSchema,
  sourceTypeSchema,
  sourceUserSchema,
  sourceVersionSchema,
  type SourceFile,
  type SourceVersion,
} from './schema/source.ts'

/** Most records are 1–4 KB; a larger one is read whole after the first buffer-full. */
const READ_BUFFER = 1 << 20

/** One read buffer per process, reused by every chunk (the function is synchronous). */
let buffer: Buffer | undefined

/** A normalised file of a version: size and hashes always present. */
export interface NormalisedFile extends RenderFileInput {
  /** Blob path relative to the data folder, when the file has bytes in the catalog. */
  blob: string | null
}

type Row = unknown[]
type Emit = (table: string, row: Row) => void
interface RecordKind {
  pattern: string
  tables: readonly string[]
  schema: z.ZodType
  /** Emits the record's rows; `blobs` gets each blob file read (path relative to the data folder) with its stat signature. */
  toRows(record: Record<string, unknown>, file: string, emit: Emit, problems: Problem[], dataDir: string, blobs: [string, string][]): void
}

/** The kinds of source record, in load order: glob pattern, staging tables, schema and rows. */
export const recordKinds = {
  catalog: simple('catalog.json', 's_catalog', sourceCatalogSchema, (_r, file, json) => [file, json]),
  categories: simple('reference/categories/*.json', 's_categories', sourceCategorySchema, (r, file, json) => [r.slug, r.projectType, file, json]),
  types: simple('reference/types/*.json', 's_types', sourceTypeSchema, (r, file, json) => [r.slug, file, json]),
  gameVersions: simple('reference/game-versions/*.json', 's_game_versions', sourceGameVersionSchema, (r, file, json) => [r.version, file, json]),
  users: simple('users/*.json', 's_users', sourceUserSchema, (r, file, json) => [r.id, r.username, file, json]),
  projects: simple('projects/*/project.json', 's_projects', sourceProjectSchema, (r, file, json) => [r.id, r.slug, r.type, r.status, file.split('/')[1] ?? '', file, json]),
  versions: {
    pattern: 'projects/*/versions/*.json',
    tables: ['s_versions', 's_files', 's_dependencies'],
    schema: sourceVersionSchema,
    toRows: versionRows,
  },
} satisfies Record<string, RecordKind>

/** Name of a record kind. */
export type RecordKindName = keyof typeof recordKinds

/** The record kinds' glob patterns, in load order (the order the listing's pattern indexes refer to). */
export const recordPatterns: readonly string[] = Object.values(recordKinds).map((k) => k.pattern)

/** Rows and problems of one chunk of record files, in file order. */
export const recordChunkSchema = z.object({
  /** Serialised rows (JSON arrays) per staging table. */
  rows: z.record(z.string(), z.array(z.string())),
  problems: z.array(z.object({ file: z.string(), path: z.string(), message: z.string() })),
  /** Records that validated. */
  count: z.number().int(),
})
/** Rows and problems of one chunk of record files. */
export type RecordChunk = z.infer<typeof recordChunkSchema>

/** Reads, parses and validates `files` (relative to `dataDir`) of one kind. */
export function parseRecordChunk(kindName: RecordKindName, dataDir: string, files: readonly string[]): RecordChunk {
  const kind: RecordKind = recordKinds[kindName]
  const rows: Record<string, string[]> = Object.fromEntries(kind.tables.map((t) => [t, []]))
  const problems: Problem[] = []
  const emit: Emit = (table, row) => rows[table]!.push(JSON.stringify(row))
  buffer ??= Buffer.allocUnsafe(READ_BUFFER)
  let count = 0
  const sources: string[] = []
  for (const file of files) {
    let parsed: unknown
    let signature: string
    try {
      const read = readText(path.join(dataDir, file), buffer)
      signature = read.signature
      parsed = JSON.parse(read.text)
    } catch (err) {
      problems.push({ file, path: '(record)', message: `not valid JSON: ${(err as Error).message}` })
      continue
    }
    const result = kind.schema.safeParse(parsed)
    if (!result.success) {
      for (const issue of result.error.issues) problems.push({ file, path: formatPath(issue.path), message: issue.message })
      continue
    }
    count++
    const blobs: [string, string][] = []
    kind.toRows(result.data as Record<string, unknown>, file, emit, problems, dataDir, blobs)
    // The file, its stat signature and its blobs' (staging-cache.ts): what a rebuild compares.
    sources.push(JSON.stringify([kindName, file, signature, blobs.length > 0 ? JSON.stringify(blobs) : null]))
  }
  rows.s_sources = sources
  return { rows, problems, count }
}

function simple<S extends z.ZodType>(
  pattern: string,
  table: string,
  schema: S,
  toRow: (record: z.infer<S>, file: string, json: string) => Row,
): RecordKind {
  return {
    pattern,
    tables: [table],
    schema,
    toRows(record, file, emit) {
      const normal = normaliseDates(record)
      emit(table, toRow(normal as z.infer<S>, file, JSON.stringify(normal)))
    },
  }
}

function versionRows(record: Record<string, unknown>, file: string, emit: Emit, problems: Problem[], dataDir: string, blobs: [string, string][]): void {
  const version = normaliseDates(record) as unknown as SourceVersion
  const normalFiles: NormalisedFile[] = []
  for (const [i, f] of version.files.entries()) {
    const normal = normaliseFile(dataDir, problems, file, i, f, blobs)
    if (normal) normalFiles.push(normal)
  }
  if (normalFiles.filter((f) => f.primary).length > 1) problems.push({ file, path: 'files', message: 'more than one file is primary' })
  if (normalFiles.length > 0 && !normalFiles.some((f) => f.primary)) normalFiles[0]!.primary = true
  const stored = { ...version, files: normalFiles.map(({ blob: _blob, ...rest }) => rest) }
  const folder = file.split('/')[1] ?? ''
  // The columns are the values the catalog copies (catalog.ts writeVisibleRows), as SQLite would take them out of the JSON.
  emit('s_versions', [
    version.id, version.projectId, version.versionNumber, version.status, folder, file, JSON.stringify(stored),
    version.channel, version.publishedAt, version.createdAt, JSON.stringify(version.gameVersions), JSON.stringify(version.platforms), version.downloads,
  ])
  for (const [i, f] of normalFiles.entries()) {
    emit('s_files', [f.id, version.id, version.projectId, f.filename, f.size, f.sha256, f.sha1, i, f.blob, file])
  }
  for (const [i, d] of version.dependencies.entries()) {
    emit('s_dependencies', [version.id, version.projectId, i, d.type, d.projectId ?? null, d.versionId ?? null, d.external ? 1 : 0, file])
  }
}

/** Reads a file's blob (if any), checks it against what is declared, and fills size and hashes. */
function normaliseFile(dataDir: string, problems: Problem[], file: string, i: number, f: SourceFile, blobs: [string, string][]): NormalisedFile | null {
  const base = {
    id: f.id,
    filename: f.filename,
    primary: f.primary,
    contentType: f.contentType ?? contentTypeOf(f.filename),
  }
  if (f.path === undefined) {
    return { ...base, size: f.size!, sha256: f.sha256!, sha1: f.sha1 ?? null, blob: null }
  }
  const root = path.resolve(dataDir)
  const blobPath = path.resolve(root, path.dirname(file), f.path)
  // Security: a record must not make the build read (and publish) a file outside the data folder.
  if (!blobPath.startsWith(root + path.sep) || blobPath.endsWith('.json')) {
    problems.push({ file, path: `files[${i}].path`, message: 'must name a non-JSON file inside the data folder' })
    return null
  }
  let bytes: Buffer
  try {
    const fd = openSync(blobPath, 'r')
    try {
      // Stat of the open file, so the signature is of the bytes read.
      blobs.push([path.relative(root, blobPath), storedSignature(fstatSync(fd))])
      bytes = readFileSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {
    problems.push({ file, path: `files[${i}].path`, message: `blob not found: ${path.relative(root, blobPath)}` })
    return null
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  const sha1 = createHash('sha1').update(bytes).digest('hex')
  const declared = [
    ['size', f.size, bytes.length],
    ['sha256', f.sha256, sha256],
    ['sha1', f.sha1, sha1],
  ] as const
  for (const [key, want, got] of declared) {
    if (want !== undefined && want !== got) {
      problems.push({ file, path: `files[${i}].${key}`, message: `declared ${want} but the blob has ${got}` })
    }
  }
  return { ...base, size: bytes.length, sha256, sha1, blob: path.relative(root, blobPath) }
}

/** Dates in source may carry any offset; the catalog stores them as UTC with milliseconds. */
function normaliseDates<T extends Record<string, unknown>>(record: T): T {
  const out: Record<string, unknown> = { ...record }
  for (const key of ['createdAt', 'updatedAt', 'publishedAt', 'joinedAt', 'releasedAt']) {
    const value = out[key]
    if (typeof value === 'string') out[key] = new Date(value).toISOString()
  }
  return out as T
}

/** Reads a UTF-8 file through `buffer` (open, fstat, pread, close: no allocation per file) with its stat signature. */
function readText(file: string, buffer: Buffer): { text: string; signature: string } {
  const fd = openSync(file, 'r')
  try {
    const signature = storedSignature(fstatSync(fd))
    const n = readSync(fd, buffer, 0, buffer.length, 0)
    // pread leaves the file position at 0: readFileSync(fd) then reads the whole file.
    return { text: n < buffer.length ? buffer.toString('utf8', 0, n) : readFileSync(fd, 'utf8'), signature }
  } finally {
    closeSync(fd)
  }
}
