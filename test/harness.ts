/**
 * The one test harness: starts the real shim over a built release on a real socket, and fails any
 * test that made the server answer an unexpected 500. With CATALOG_TEST_FRONT=nginx (the `front`
 * project of vitest.config.ts) real nginx runs in front of the shim with the generated front
 * configuration, and `origin`/`get` go through it: the same tests, through the production layout.
 */
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { expect } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import type { BuildOptions } from '../build/context.ts'
import { openDb } from '../build/db/sqlite.ts'
import { runBuild } from '../build/index.ts'
import { pointerSchema, type DiffCounts, type Pointer } from '../build/release/formats.ts'
import { hashBytes, parseChanges, readGzipText, type Change } from '../build/release/manifest.ts'
import { errorSchema, type Version } from '../build/schema/api.ts'
import { createShimListener } from '../shim/app.ts'
import { counterSchema } from '../shim/download-counter.ts'
import { resolveShimOptions, type ShimOptions } from '../shim/config.ts'
import { createShimContext, type ShimContext, type ShimDependencies } from '../shim/context.ts'
import { configureServer } from '../shim/server.ts'
import { startNginxFront, type FrontServer } from './front.ts'

/** The front server the tests run through: none (the shim alone) or nginx. */
export const FRONT: 'shim' | 'nginx' = process.env.CATALOG_TEST_FRONT === 'nginx' ? 'nginx' : 'shim'

/** A running shim. */
export interface TestServer {
  /** Origin, e.g. http://127.0.0.1:40123 (nginx's when a front runs) */
  origin: string
  /** The shim's own origin (equal to origin without a front). */
  shimOrigin: string
  /** nginx in front, or null. */
  front: FrontServer | null
  /** Number of requests that reached the shim. */
  shimRequests(): number
  /** Fetches an API path (prefixed with /api/v1 unless it starts with /objects or is absolute). */
  get(path: string, init?: RequestInit): Promise<Response>
  ctx: ShimContext
  server: Server
  /** Number of 5xx responses the server sent. */
  serverErrors(): number
  close(): Promise<void>
}

/**
 * Starts the shim over distDir on an ephemeral port, behind nginx when FRONT is nginx (not for a
 * snapshot: nginx serves files of a release folder). Behind nginx the shim trusts 127.0.0.1's
 * X-Forwarded-For unless the test sets its own trusted proxies.
 */
export async function startServer(distDir: string, overrides: Partial<ShimOptions> = {}, deps: ShimDependencies = {}): Promise<TestServer> {
  const withFront = FRONT === 'nginx' && !overrides.snapshotFile
  const trusted = withFront ? { trustedProxies: ['127.0.0.1'] } : {}
  const options = resolveShimOptions({ host: '127.0.0.1', port: 0, distDir, releasePollMs: 0, rateLimit: 1_000_000, ...trusted, ...overrides }, {})
  const ctx = await createShimContext(options, deps)
  const listener = createShimListener(ctx)
  let errors = 0
  let requests = 0
  const server = createServer((req, res) => {
    requests++
    res.on('finish', () => {
      if (res.statusCode >= 500) errors++
    })
    listener(req, res)
  })
  configureServer(server, options.rateLimit)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const shimOrigin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  let front: FrontServer | null = null
  if (withFront) {
    try {
      front = await startNginxFront({ ...options, shim: shimOrigin.slice('http://'.length) })
    } catch (err) {
      server.closeAllConnections()
      server.close()
      await ctx.close()
      throw err
    }
  }
  const origin = front?.origin ?? shimOrigin
  return {
    origin,
    shimOrigin,
    front,
    ctx,
    server,
    get: (path, init) => fetch(path.startsWith('http') ? path : path.startsWith('/objects') ? origin + path : `${origin}/api/v1${path}`, { redirect: 'manual', ...init }),
    serverErrors: () => errors,
    shimRequests: () => requests,
    async close() {
      await front?.close()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await ctx.close()
    },
  }
}

/** Reads a JSON body. */
/** A loopback port free right now (the kernel's pick), for a server started as a child process. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo
      s.close(() => resolve(port))
    })
  })
}

export async function json<T = any>(res: Response): Promise<T> {
  return (await res.json()) as T
}

/**
 * Sends every path `times` times at once and expects each answer to be a 200 with the body
 * `expected[i]` of its path: queries running at the same time answer as they do one at a time.
 */
export async function expectSameAnswersAtOnce(server: TestServer, paths: readonly string[], expected: readonly string[], times = 3): Promise<void> {
  const answers = await Promise.all(
    paths.flatMap((p) => Array.from({ length: times }, () => p)).map(async (p) => {
      const res = await server.get(p)
      return { p, status: res.status, body: await res.text() }
    }),
  )
  for (const { p, status, body } of answers) {
    expect(status, p).toBe(200)
    expect(body, p).toBe(expected[paths.indexOf(p)])
  }
}

/** Fetches a path and checks it is the 422 envelope naming `param` (or one of its items) in its details. */
export async function expectValidationError(server: TestServer, url: string, param: string): Promise<void> {
  const res = await server.get(url)
  expect(res.status, url).toBe(422)
  const body = errorSchema.parse(await json(res))
  expect(body.error.code).toBe('validation_failed')
  expect(body.error.details?.some((d) => d.path === param || d.path.startsWith(`${param}[`)), `${url} names ${param}`).toBe(true)
}

/** A project record of the sample catalog (data/projects/<folder>/project.json), the fields tests use. */
export interface SampleProject {
  folder: string
  project: { id: string; slug: string; status: string }
}

/** A version record of the sample catalog, the fields tests use. */
export interface SampleVersion {
  id: string
  projectId: string
  versionNumber: string
  status: string
  files: { id: string; path?: string; sha256?: string; sha1?: string }[]
}

/** Every project of the sample catalog, visible or not. */
export function listSampleProjects(dataDir = 'data'): SampleProject[] {
  return readdirSync(path.join(dataDir, 'projects')).map((folder) => ({
    folder,
    project: JSON.parse(readFileSync(path.join(dataDir, 'projects', folder, 'project.json'), 'utf8')) as SampleProject['project'],
  }))
}

/** Every version record of a sample project folder (none when it has no versions folder). */
export function readSampleVersions(folder: string, dataDir = 'data'): SampleVersion[] {
  const dir = path.join(dataDir, 'projects', folder, 'versions')
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as SampleVersion)
}

/** Filters of the versions list and of update matching. */
export interface VersionFilters {
  channel?: string[]
  gameVersion?: string[]
  platform?: string[]
}

/** Whether a version passes every filter (any value of a list, all lists together): the test oracle. */
export function matchesFilters(v: Version, f: VersionFilters): boolean {
  return (
    (!f.channel || f.channel.includes(v.channel)) &&
    (!f.gameVersion || v.gameVersions.some((g) => f.gameVersion!.includes(g))) &&
    (!f.platform || v.platforms.some((p) => f.platform!.includes(p)))
  )
}

/** A copy of the sample catalog in `root/data`, for tests that edit it; returns its folder. */
export function copySampleData(root: string): string {
  const data = path.join(root, 'data')
  cpSync('data', data, { recursive: true })
  return data
}

/** A successful build of `dataDir` into `distDir`, with its pointer (checked by its schema). */
export interface BuiltRelease {
  pointer: Pointer
  /** Counts over the whole release: served files, catalog, snapshot and archive. */
  changes: DiffCounts
  releaseDir: string
}

/** Builds `dataDir` into `distDir` quietly (no counters); fails the test with every problem. */
export async function buildRelease(dataDir: string, distDir: string, overrides: Partial<BuildOptions> = {}): Promise<BuiltRelease> {
  const result = await runBuild(resolveBuildOptions({ dataDir, distDir, countersFile: null, log: () => {}, ...overrides }))
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.file}: ${p.path}: ${p.message}`).join('\n'))
  const pointer = pointerSchema.parse(JSON.parse(readFileSync(path.join(result.releaseDir, 'public/mirror/pointer.json'), 'utf8')))
  return { pointer, changes: result.changes, releaseDir: result.releaseDir }
}

/**
 * Writes a download counter database (the shim's schema) at `file` giving Iris 1.7.1's first file
 * 777 downloads; returns that version's id.
 */
export async function writeIrisCounters(file: string, dataDir: string): Promise<string> {
  const db = await openDb(file)
  await db.exec(counterSchema)
  const iris = JSON.parse(readFileSync(path.join(dataDir, 'projects/iris/versions/1.7.1+1.21.json'), 'utf8')) as { id: string; files: { id: string }[] }
  await db.run(`INSERT INTO file_downloads VALUES (?, 777)`, [iris.files[0]!.id])
  await db.close()
  return iris.id
}

/** Sets the summary of a sample project in a copied catalog. */
export function editSummary(dataDir: string, slug: string, summary: string): void {
  const file = path.join(dataDir, 'projects', slug, 'project.json')
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), summary }, null, 2))
}

/** Adds Sodium 0.5.12 (version Zz9Yy8Xx, newest, with one new jar: file Qq1Ww2Ee) to a copied catalog. */
export function addSodiumVersion(dataDir: string): void {
  const versions = path.join(dataDir, 'projects', 'sodium', 'versions')
  cpSync(path.join(versions, '0.5.11+mc1.21'), path.join(versions, '0.5.12+mc1.21'), { recursive: true })
  rmSync(path.join(versions, '0.5.12+mc1.21', 'sodium-fabric-0.5.11+mc1.21.jar'))
  writeFileSync(path.join(versions, '0.5.12+mc1.21', 'sodium-fabric-0.5.12+mc1.21.jar'), 'a new jar')
  const v = JSON.parse(readFileSync(path.join(versions, '0.5.11+mc1.21.json'), 'utf8'))
  const file = { ...v.files[0], id: 'Qq1Ww2Ee', filename: 'sodium-fabric-0.5.12+mc1.21.jar', path: '0.5.12+mc1.21/sodium-fabric-0.5.12+mc1.21.jar' }
  writeFileSync(
    path.join(versions, '0.5.12+mc1.21.json'),
    JSON.stringify({ ...v, id: 'Zz9Yy8Xx', versionNumber: '0.5.12+mc1.21', name: 'Sodium 0.5.12', createdAt: '2024-07-01T08:00:00Z', publishedAt: '2024-07-01T09:00:00Z', files: [file] }),
  )
}

/** The manifest of a release: release-relative name → SHA-256 and size. */
export function readManifestOf(releaseDir: string): Map<string, { sha256: string; size: number }> {
  const out = new Map<string, { sha256: string; size: number }>()
  for (const line of readFileSync(path.join(releaseDir, 'manifest.tsv'), 'utf8').trim().split('\n')) {
    const [name, sha256, size] = line.split('\t') as [string, string, string]
    out.set(name, { sha256, size: Number(size) })
  }
  return out
}

/** Names a release added or changed (its own change file, checked against the pointer's SHA-256). */
export function readChangesOf(releaseDir: string, pointer: Pointer, serial = pointer.serial): Change[] {
  const entry = pointer.feed.changes.find((e) => e.serial === serial)!
  const text = readGzipText(readFileSync(path.join(releaseDir, 'public', entry.path)))
  expect(hashBytes(text)).toBe(entry.sha256)
  return parseChanges(text)
}

/** A plain answer read whole: status, headers and the body as text. */
export interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** GET from a chosen loopback source address (the client identity of the limiter and of download dedup). */
export function requestFrom(origin: string, urlPath: string, localAddress: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const url = new URL(origin + urlPath)
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, localAddress, headers, agent: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

/** A dist folder of one release holding a copy of `releaseDir`'s catalog, and a way to run SQL on that copy. */
export interface CatalogCopy {
  dir: string
  catalog: string
  edit(sql: string): Promise<void>
}

/** Runs `use` over a copy of a release's catalog in a dist folder of its own (dist/current), removed afterwards. */
export async function withCatalogCopy(releaseDir: string, use: (copy: CatalogCopy) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'catalog-copy-'))
  try {
    const copyDir = path.join(dir, 'releases', '00000001')
    mkdirSync(copyDir, { recursive: true })
    const catalog = path.join(copyDir, 'catalog.sqlite')
    copyFileSync(path.join(releaseDir, 'catalog.sqlite'), catalog)
    symlinkSync('releases/00000001', path.join(dir, 'current'))
    const edit = async (sql: string): Promise<void> => {
      const db = await openDb(catalog)
      try {
        await db.exec(sql)
      } finally {
        await db.close()
      }
    }
    await use({ dir, catalog, edit })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
