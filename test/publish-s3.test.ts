/**
 * `publish:s3` against a real S3-compatible server (s3rver on loopback) through a recording proxy
 * (which also injects faults): a published release, served by the server, matches the local tree
 * byte for byte with the right headers; uploads are ordered (objects, JSON, mirror documents,
 * pointer last); an unchanged release uploads nothing and an edit only what changed; removed
 * names wait for their retention; an interrupted or killed publish resumes; `npm run mirror`
 * syncs from the bucket.
 */
import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import S3rver from 's3rver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild } from '../build/index.ts'
import { runMirror } from '../build/mirror/sync.ts'
import { PublishError } from '../build/publish/client.ts'
import { runPublish, type PublishResult } from '../build/publish/index.ts'
import { listMirrorDocs, POINTER_NAME, resolveKey } from '../build/publish/layout.ts'
import { resolvePublishOptions } from '../build/publish/options.ts'
import { manifestIndexSchema, pointerSchema, type Pointer } from '../build/release/formats.ts'
import { fileUrl, indexFile, parseChanges, readGzipText } from '../build/release/manifest.ts'
import { addSodiumVersion } from './harness.ts'

const BUCKET = 'catalog'
const PREFIX = 'prod/'
const root = mkdtempSync(path.join(os.tmpdir(), 'publish-s3-test-'))
const data = path.join(root, 'data')
const dist = path.join(root, 'dist')

let s3: S3rver
let s3Url = ''
let proxy: Server
let proxyUrl = ''

/** A request the proxy forwarded (or refused): method, key (bucket stripped), status. */
interface Seen {
  method: string
  key: string
  status: number
}
let seen: Seen[] = []
/** Fault injection: a permanent 403 for every PUT after this many; null: none. */
let failAfterPuts: number | null = null
/** Fault injection: every n-th PUT is answered 503 SlowDown once (the SDK retries it). */
let slowDownEvery = 0
/** Delay before forwarding a PUT (the kill -9 test). */
let putDelayMs = 0

const puts = (): string[] => seen.filter((s) => s.method === 'PUT' && s.status === 200).map((s) => s.key)
/** PUT keys of release files (not the publisher's own state). */
const releasePuts = (): string[] => [...new Set(puts().filter((k) => !k.startsWith(`${PREFIX}.publish/`)))]

function options(overrides: { retainSeconds?: number } = {}) {
  const resolved = resolvePublishOptions({ distDir: dist, concurrency: 8, partSize: 1 << 20, ...overrides }, { S3_ENDPOINT: proxyUrl, S3_BUCKET: BUCKET, S3_PREFIX: '/prod', S3_RETRIES: '3' }, () => {})
  return { ...resolved, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } }
}

async function publish(overrides: { retainSeconds?: number } = {}): Promise<PublishResult> {
  seen = []
  return runPublish(options(overrides))
}

async function build(): Promise<Pointer> {
  const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, log: () => {} }))
  if (!result.ok) throw new Error(result.problems.map((p) => `${p.file}: ${p.path}: ${p.message}`).join('\n'))
  return pointerSchema.parse(JSON.parse(readFileSync(path.join(result.releaseDir, 'public/mirror/pointer.json'), 'utf8')))
}

/** The server's answer for a release-relative name, straight from s3rver (not through the proxy). */
function getFromBucket(name: string): Promise<Response> {
  return fetch(`${s3Url}/${BUCKET}/${PREFIX.slice(0, -1)}${fileUrl(name)}`)
}

/** Every file of the live release (content, mirror documents, pointer): name → local path. */
function listReleaseFiles(): Map<string, string> {
  const dir = realpathSync(path.join(dist, 'current'))
  const pointer = pointerSchema.parse(JSON.parse(readFileSync(path.join(dir, POINTER_NAME), 'utf8')))
  const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(dir, indexFile(pointer.id)), 'utf8')))
  const names = readFileSync(path.join(dir, 'manifest.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t')[0]!)
  names.push(...listMirrorDocs(pointer, index).map((d) => d.name), POINTER_NAME)
  return new Map(names.map((n) => [n, path.join(dir, n)]))
}

/** Asserts the bucket serves every file of the live release byte for byte. */
async function expectBucketMatchesRelease(): Promise<number> {
  const files = [...listReleaseFiles()]
  for (let i = 0; i < files.length; i += 32) {
    await Promise.all(
      files.slice(i, i + 32).map(async ([name, file]) => {
        const res = await getFromBucket(name)
        expect(res.status, name).toBe(200)
        expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(file)), name).toBe(true)
      }),
    )
  }
  return files.length
}

function editSummary(slug: string, summary: string): void {
  const file = path.join(data, 'projects', slug, 'project.json')
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), summary }, null, 2))
}

/** Keys a release wrote (added or changed names), from its change file. */
function changedKeys(pointer: Pointer): string[] {
  const entry = pointer.feed.changes.find((e) => e.serial === pointer.serial)!
  const changes = parseChanges(readGzipText(readFileSync(path.join(dist, 'current/public', entry.path))))
  return changes.flatMap((c) => (c.kind === 'R' ? [] : [resolveKey(PREFIX, c.entry.path)]))
}

/** Names a release removed, from its change file. */
function removedNames(pointer: Pointer): string[] {
  const entry = pointer.feed.changes.find((e) => e.serial === pointer.serial)!
  return parseChanges(readGzipText(readFileSync(path.join(dist, 'current/public', entry.path)))).flatMap((c) => (c.kind === 'R' ? [c.path] : []))
}

beforeAll(async () => {
  cpSync('data', data, { recursive: true })
  await build()
  s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: path.join(root, 's3'), configureBuckets: [{ name: BUCKET }] })
  const { port } = await s3.run()
  // Longer than any client's idle keep-alive: a busy machine must not see the server close a
  // socket the test's fetch is about to reuse (ECONNRESET).
  s3.httpServer!.keepAliveTimeout = 120_000
  s3Url = `http://127.0.0.1:${port}`
  let putCount = 0
  proxy = createServer((req, res) => {
    const entry: Seen = { method: req.method!, key: decodeURIComponent(new URL(req.url!, 'http://x').pathname).replace(`/${BUCKET}/`, ''), status: 0 }
    seen.push(entry)
    res.on('finish', () => (entry.status = res.statusCode))
    const isPut = req.method === 'PUT'
    if (isPut) putCount++
    const refuse = (status: number, code: string): void => {
      req.resume()
      res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>Injected by the test</Message></Error>`)
    }
    if (isPut && failAfterPuts !== null && puts().length >= failAfterPuts) return refuse(403, 'AccessDenied')
    if (isPut && slowDownEvery > 0 && putCount % slowDownEvery === 0) return refuse(503, 'SlowDown')
    setTimeout(
      () => {
        // A client killed mid-request (the SIGKILL test) must not leave a half-sent body open at s3rver.
        if (req.destroyed) return
        const upstream = request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode!, up.headers)
          up.pipe(res)
        })
        upstream.on('error', () => res.destroy())
        res.on('close', () => {
          if (!res.writableFinished) upstream.destroy()
        })
        req.pipe(upstream)
      },
      isPut ? putDelayMs : 0,
    )
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})

afterAll(async () => {
  proxy?.closeAllConnections()
  await new Promise<void>((resolve) => proxy?.close(() => resolve()))
  // Idle keep-alive sockets of the test's own fetches would hold close() for their timeout.
  s3?.httpServer?.closeAllConnections()
  await s3?.close()
  rmSync(root, { recursive: true, force: true })
})

// s3rver writes two files per object: a first publish of the sample catalog takes 15–30 s on a busy machine.
describe('publish to S3-compatible storage', { timeout: 180_000 }, () => {
  it('refuses a malformed setting by its variable name before anything is sent', () => {
    const env = { S3_BUCKET: BUCKET }
    expect(resolvePublishOptions({}, { ...env, S3_RETRIES: '3' }, () => {}).retries).toBe(3)
    expect(() => resolvePublishOptions({}, { ...env, S3_RETRIES: 'three' }, () => {})).toThrow('S3_RETRIES must be an integer from 0 up, got "three"')
    expect(() => resolvePublishOptions({}, { ...env, RATE_LIMIT: '0x10' }, () => {})).toThrow('RATE_LIMIT must be an integer from 1 up, got "0x10"')
    expect(() => resolvePublishOptions({}, { ...env, MAX_AGE: ' ' }, () => {})).toThrow('MAX_AGE must be an integer from 0 up, got " "')
    expect(() => resolvePublishOptions({}, {}, () => {})).toThrow('S3_BUCKET is required')
    // Switches as everywhere else: 0 or 1, unset or empty the default (on with S3_ENDPOINT).
    const store = { ...env, S3_ENDPOINT: 'http://127.0.0.1:9000' }
    expect(resolvePublishOptions({}, store, () => {}).forcePathStyle).toBe(true)
    expect(resolvePublishOptions({}, { ...store, S3_FORCE_PATH_STYLE: '' }, () => {}).forcePathStyle).toBe(true)
    expect(resolvePublishOptions({}, { ...store, S3_FORCE_PATH_STYLE: '0' }, () => {}).forcePathStyle).toBe(false)
    expect(resolvePublishOptions({}, env, () => {}).forcePathStyle).toBe(false)
    expect(resolvePublishOptions({}, { ...env, S3_FORCE_PATH_STYLE: '1' }, () => {}).forcePathStyle).toBe(true)
    expect(() => resolvePublishOptions({}, { ...store, S3_FORCE_PATH_STYLE: 'yes' }, () => {})).toThrow('S3_FORCE_PATH_STYLE must be 0 or 1, got "yes"')
    // The refusal names the variable, not the option behind it.
    for (const endpoint of ['127.0.0.1:9000/', 'localhost:9000', 'ftp://127.0.0.1']) {
      expect(() => resolvePublishOptions({}, { ...env, S3_ENDPOINT: endpoint }, () => {})).toThrow(/^S3_ENDPOINT must be an http\(s\) URL such as http:\/\/127\.0\.0\.1:9000$/)
    }
    // An empty DIST_DIR is the default folder, not the current one.
    expect(resolvePublishOptions({}, { ...env, DIST_DIR: '' }, () => {}).distDir).toBe(path.resolve('dist'))
  })

  it('first publish: every file served by the bucket is byte-identical, with its headers, in order, pointer last', async () => {
    const result = await publish()
    const files = listReleaseFiles()
    expect(result).toMatchObject({ status: 'published', serial: 1, previous: null, unchanged: 0, resumed: 0, deleted: 0 })
    expect(result.uploaded).toBe(files.size)
    expect(await expectBucketMatchesRelease()).toBe(files.size)

    // Order of arrival at the server: objects, then API JSON, then mirror documents, catalog, pointer.
    const order = releasePuts()
    const last = (p: (k: string) => boolean): number => order.reduce((at, k, i) => (p(k) ? i : at), -1)
    const first = (p: (k: string) => boolean): number => order.findIndex(p)
    expect(last((k) => k.startsWith('prod/objects/'))).toBeLessThan(first((k) => k.startsWith('prod/api/')))
    expect(last((k) => k.startsWith('prod/api/'))).toBeLessThan(first((k) => k.startsWith('prod/mirror/')))
    expect(last((k) => k.startsWith('prod/mirror/') && k !== 'prod/mirror/catalog.sqlite' && k !== 'prod/mirror/pointer.json')).toBeLessThan(order.indexOf('prod/mirror/catalog.sqlite'))
    expect(order.at(-1)).toBe('prod/mirror/pointer.json')
    expect(order.filter((k) => k === 'prod/mirror/pointer.json')).toHaveLength(1)

    const json = await getFromBucket('public/api/v1/projects/sodium.json')
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8')
    expect(json.headers.get('cache-control')).toBe('public, max-age=60, stale-while-revalidate=600')
    expect(json.headers.get('x-amz-meta-x-ratelimit-limit')).toBe('120')
    const sodium = (await json.json()) as { data: { slug: string } }
    expect(sodium.data.slug).toBe('sodium')
    const objectName = [...files.keys()].find((n) => n.startsWith('public/objects/') && n.endsWith('.jar'))!
    const object = await getFromBucket(objectName)
    expect(object.headers.get('content-type')).toBe('application/java-archive')
    expect(object.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(object.headers.get('content-disposition')).toBe(`attachment; filename*=UTF-8''${encodeURIComponent(objectName.split('/').at(-1)!)}`)
    expect(object.headers.get('x-amz-meta-x-ratelimit-limit')).toBe('120')
    const pointer = await getFromBucket(POINTER_NAME)
    expect(pointer.headers.get('cache-control')).toBe('public, no-cache')
    expect(pointer.headers.get('content-type')).toBe('application/json')
    const shard = await getFromBucket([...files.keys()].find((n) => n.includes('/manifest/shards/'))!)
    expect(shard.headers.get('content-type')).toBe('application/gzip')
    expect(shard.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    // Larger than the test's 1 MiB part size: these went up in parts, and still match (checked above).
    expect(seen.some((s) => s.method === 'POST' && s.key === 'prod/mirror/catalog.sqlite')).toBe(true)
  })

  it('a second publish of the same release writes nothing at all', async () => {
    const result = await publish()
    expect(result).toMatchObject({ status: 'up-to-date', serial: 1, uploaded: 0, deleted: 0 })
    expect(seen.filter((s) => s.method !== 'GET' && s.method !== 'HEAD')).toEqual([])
  })

  it('npm run mirror syncs from the bucket and matches the local tree byte for byte', async () => {
    const mirror = path.join(root, 'mirror')
    const result = await runMirror({ from: `${s3Url}/${BUCKET}/prod`, to: mirror, keep: 2, concurrency: 8, retries: 2, withSnapshot: true, log: () => {} })
    expect(result).toMatchObject({ status: 'updated', serial: 1, mode: 'manifest' })
    const local = realpathSync(path.join(mirror, 'current'))
    for (const [name, file] of listReleaseFiles()) {
      expect(readFileSync(path.join(local, name)).equals(readFileSync(file)), name).toBe(true)
    }
  })

  it('after an edit, an addition and two removals writes only what changed; removed names stay for their retention; 503s are retried', async () => {
    editSummary('sodium', 'Edited for the bucket')
    addSodiumVersion(data)
    cpSync(path.join(data, 'projects', 'archipelago-survival'), path.join(root, 'saved-archipelago'), { recursive: true })
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    rmSync(path.join(data, 'projects', 'mossy-ruins'), { recursive: true })
    const pointer = await build()
    slowDownEvery = 7
    const result = await publish().finally(() => (slowDownEvery = 0))
    expect(result).toMatchObject({ status: 'published', serial: 2, previous: 1, resumed: 0, deleted: 0 })
    expect(seen.filter((s) => s.status === 503).length).toBeGreaterThan(0)
    const content = releasePuts().filter((k) => !k.startsWith('prod/mirror/'))
    expect(content.sort()).toEqual(changedKeys(pointer).sort())
    expect(content.some((k) => k.startsWith('prod/objects/') && k.endsWith('/sodium-fabric-0.5.12+mc1.21.jar'))).toBe(true)
    expect(result.unchanged).toBeGreaterThanOrEqual(pointer.changes.unchanged)
    await expectBucketMatchesRelease()
    // Still there for readers of the previous pointer and for cached JSON naming them.
    const removed = removedNames(pointer)
    expect(removed.some((n) => n.includes('archipelago-survival'))).toBe(true)
    expect(removed.some((n) => n.includes('mossy-ruins'))).toBe(true)
    for (const name of removed) expect((await getFromBucket(name)).status, name).toBe(200)
  })

  it('deletes removed names once their retention has passed, except those the live release has again; a mirror catches up by the feed', async () => {
    const r2 = pointerSchema.parse(JSON.parse(readFileSync(path.join(dist, 'current', POINTER_NAME), 'utf8')))
    const removed = removedNames(r2)
    cpSync(path.join(root, 'saved-archipelago'), path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    await build()
    const result = await publish({ retainSeconds: 0 })
    expect(result).toMatchObject({ status: 'published', serial: 3, previous: 2 })
    const live = listReleaseFiles()
    const stillRemoved = removed.filter((n) => !live.has(n))
    const restored = removed.filter((n) => live.has(n))
    expect(stillRemoved.length).toBeGreaterThan(0)
    expect(restored.some((n) => n.includes('archipelago-survival'))).toBe(true)
    for (const name of stillRemoved) expect((await getFromBucket(name)).status, name).toBe(404)
    // Retired mirror documents: the manifests of releases 1 and 2 and their snapshots.
    for (const id of ['00000001', '00000002']) {
      expect((await getFromBucket(indexFile(id))).status).toBe(404)
      expect((await getFromBucket(`public/mirror/snapshot-${id}.sqlite`)).status).toBe(404)
    }
    expect(result.deleted).toBeGreaterThanOrEqual(stillRemoved.length + 4)
    const restoredKeys = new Set(restored.map((n) => resolveKey(PREFIX, n)))
    expect(seen.filter((s) => s.method === 'DELETE' && restoredKeys.has(s.key))).toEqual([])
    await expectBucketMatchesRelease()

    const mirror = path.join(root, 'mirror')
    const synced = await runMirror({ from: `${s3Url}/${BUCKET}/prod`, to: mirror, keep: 2, concurrency: 8, retries: 2, withSnapshot: false, log: () => {} })
    expect(synced).toMatchObject({ status: 'updated', serial: 3, mode: 'feed' })
    const local = realpathSync(path.join(mirror, 'current'))
    for (const [name, file] of listReleaseFiles()) {
      if (/snapshot-|tree-/.test(name)) continue
      expect(readFileSync(path.join(local, name)).equals(readFileSync(file)), name).toBe(true)
    }
  })

  it('a permanent error names the bucket and key and leaves the pointer; the re-run resumes without writing again what is there', async () => {
    editSummary('iris', 'Iris, edited for the bucket')
    editSummary('appleskin', 'AppleSkin, edited for the bucket')
    editSummary('lithium', 'Lithium, edited for the bucket')
    const pointer = await build()
    const before = Buffer.from(await (await getFromBucket(POINTER_NAME)).arrayBuffer())
    failAfterPuts = 6
    const failed = await publish().catch((err: unknown) => err)
    failAfterPuts = null
    expect(failed).toBeInstanceOf(PublishError)
    expect((failed as Error).message).toMatch(/^PUT s3:\/\/catalog\/prod\/\S+ failed: AccessDenied \(HTTP 403\)/)
    const written = releasePuts()
    expect(written.length).toBeGreaterThanOrEqual(5)
    expect(written).not.toContain('prod/mirror/pointer.json')
    // Readers still see release 3, whole.
    expect(Buffer.from(await (await getFromBucket(POINTER_NAME)).arrayBuffer()).equals(before)).toBe(true)

    const result = await publish()
    expect(result).toMatchObject({ status: 'published', serial: 4, previous: 3, resumed: written.length })
    expect(releasePuts().filter((k) => written.includes(k))).toEqual([])
    expect(result.uploaded + result.resumed).toBe(new Set([...written, ...releasePuts()]).size)
    expect(changedKeys(pointer).every((k) => written.includes(k) || releasePuts().includes(k))).toBe(true)
    await expectBucketMatchesRelease()
  })

  it('killed (SIGKILL) mid-upload, the re-run resumes; a missing bucket fails with its name and a non-zero exit', async () => {
    editSummary('iris', 'Iris, edited again')
    editSummary('appleskin', 'AppleSkin, edited again')
    editSummary('lithium', 'Lithium, edited again')
    editSummary('modmenu', 'Mod Menu, edited')
    const pointer = await build()
    const before = Buffer.from(await (await getFromBucket(POINTER_NAME)).arrayBuffer())
    const env = { ...process.env, S3_ENDPOINT: proxyUrl, S3_BUCKET: BUCKET, S3_PREFIX: 'prod', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' }
    const cli = (extra: Record<string, string>) =>
      spawn(path.resolve('node_modules/.bin/vite-node'), ['build/publish-cli.ts', '--', '--dist', dist, '--concurrency', '1'], { env: { ...env, ...extra }, stdio: ['ignore', 'ignore', 'pipe'] })
    seen = []
    putDelayMs = 100
    const child = cli({})
    let gone = false
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => ((gone = true), resolve(signal))))
    while (releasePuts().length < 4 && !gone) await new Promise((r) => setTimeout(r, 20))
    child.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')
    putDelayMs = 0
    const written = releasePuts()
    expect(written.length).toBeGreaterThanOrEqual(4)
    expect(Buffer.from(await (await getFromBucket(POINTER_NAME)).arrayBuffer()).equals(before)).toBe(true)

    const result = await publish()
    expect(result).toMatchObject({ status: 'published', serial: pointer.serial })
    // What was written before the kill is kept (a PUT in flight at the kill may have landed too).
    expect(result.resumed).toBeGreaterThanOrEqual(written.length)
    expect(releasePuts().filter((k) => written.includes(k))).toEqual([])
    await expectBucketMatchesRelease()

    const missing = cli({ S3_BUCKET: 'no-such-bucket' })
    let stderr = ''
    missing.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const code = await new Promise<number | null>((resolve) => missing.on('exit', (c) => resolve(c)))
    expect(code).toBe(1)
    expect(stderr).toMatch(/GET s3:\/\/no-such-bucket\/prod\/mirror\/pointer\.json failed: NoSuchBucket \(HTTP 404\).*check S3_BUCKET/)
  })

  it('a name removed, restored and removed again is kept for the retention of its last removal', async () => {
    const ninjaNames = (): string[] => [...listReleaseFiles().keys()].filter((n) => n.startsWith('public/api/v1/projects/cyber-ninja'))
    const names = ninjaNames()
    expect(names.length).toBeGreaterThan(1)
    await publish()
    cpSync(path.join(data, 'projects', 'cyber-ninja'), path.join(root, 'saved-cyber-ninja'), { recursive: true })
    rmSync(path.join(data, 'projects', 'cyber-ninja'), { recursive: true })
    await build()
    await publish()
    const removedAt = Date.now()
    cpSync(path.join(root, 'saved-cyber-ninja'), path.join(data, 'projects', 'cyber-ninja'), { recursive: true })
    await build()
    await publish()
    rmSync(path.join(data, 'projects', 'cyber-ninja'), { recursive: true })
    await build()
    await new Promise((r) => setTimeout(r, Math.max(0, removedAt + 6000 - Date.now())))
    // The first removal's list is due (older than 5 s), the last one's is not: the skin stays.
    await publish({ retainSeconds: 5 })
    for (const name of names) expect((await getFromBucket(name)).status, name).toBe(200)
    await publish({ retainSeconds: 0 })
    for (const name of names) expect((await getFromBucket(name)).status, name).toBe(404)
  })
})
