/**
 * The mirror command over real HTTP (issue 6): synced after each of several builds it matches the
 * origin byte for byte and fetches only what changed; a kill -9 mid-sync leaves it serving the
 * previous release and a re-run completes without starting over; a tampered file is refused.
 */
import { spawn } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MirrorRefused, runMirror, type MirrorResult } from '../build/mirror/sync.ts'
import { manifestIndexSchema, pointerSchema, type Pointer } from '../build/release/formats.ts'
import { changeFile, fileUrl, indexFile, shardFile } from '../build/release/manifest.ts'
import { addSodiumVersion, buildRelease, copySampleData, editSummary, readChangesOf, startServer, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'mirror-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
const mirror = path.join(root, 'mirror')

let origin: TestServer
let proxy: Server
let proxyUrl = ''
/** Paths the origin served through the proxy since the last reset. */
let served: string[] = []
let delayMs = 0

async function build(): Promise<Pointer> {
  const { pointer } = await buildRelease(data, dist)
  await origin?.ctx.reload()
  return pointer
}

async function sync(withSnapshot = false): Promise<MirrorResult> {
  served = []
  return runMirror({ from: proxyUrl, to: mirror, keep: 2, concurrency: 16, retries: 2, withSnapshot, log: () => {} })
}

/** Files the mirror fetched that are release content (API bodies and objects), not mirror documents. */
const contentRequests = (): string[] => served.filter((p) => p.startsWith('/api/') || p.startsWith('/objects/'))

/** Asserts the mirror's live release has exactly the origin's files and bytes (and its snapshot and archive). */
function expectSameTree(withSnapshot = false): void {
  const live = realpathSync(path.join(dist, 'current'))
  const local = realpathSync(path.join(mirror, 'current'))
  expect(path.basename(local)).toBe(path.basename(live))
  const names = readFileSync(path.join(live, 'manifest.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t')[0]!)
  // Same content mtimes too: nginx in front of the mirror sends the origin's ETags (README, "Running behind nginx").
  const seconds = (file: string): number => Math.floor(statSync(file).mtimeMs / 1000)
  for (const name of names) expect(seconds(path.join(local, name)), `mtime of ${name}`).toBe(seconds(path.join(live, name)))
  names.push('public/mirror/pointer.json', 'public/mirror/catalog.sqlite', 'catalog.sqlite')
  const pointer = readPointer(live)
  if (withSnapshot) names.push(`public${pointer.snapshot!.path}`, `public${pointer.archive!.path}`)
  for (const name of names) expect(readFileSync(path.join(local, name)).equals(readFileSync(path.join(live, name))), name).toBe(true)
}

/** The pointer of a release folder, checked by its schema. */
function readPointer(releaseDir: string): Pointer {
  return pointerSchema.parse(JSON.parse(readFileSync(path.join(releaseDir, 'public/mirror/pointer.json'), 'utf8')))
}

/** Names added or changed by the live release, from its change file. */
function changedNames(pointer: Pointer): string[] {
  return readChangesOf(path.join(dist, 'current'), pointer).flatMap((c) => (c.kind === 'R' ? [] : [c.entry.path]))
}

beforeAll(async () => {
  await build()
  // No memory cache: a file changed on disk is served as it is (the tamper test).
  origin = await startServer(dist, { cacheBytes: 0 })
  proxy = createServer(async (req, res) => {
    served.push(decodeURIComponent(req.url!))
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
    const upstream = await fetch(origin.origin + req.url)
    const headers: Record<string, string> = {}
    for (const k of ['content-type', 'etag', 'retry-after']) if (upstream.headers.get(k)) headers[k] = upstream.headers.get(k)!
    const body = Buffer.from(await upstream.arrayBuffer())
    res.writeHead(upstream.status, { ...headers, 'content-length': body.length }).end(body)
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
})

afterAll(async () => {
  expect(origin.serverErrors()).toBe(0)
  proxy.closeAllConnections()
  await new Promise<void>((resolve) => proxy.close(() => resolve()))
  await origin.close()
  rmSync(root, { recursive: true, force: true })
})

describe('mirror', () => {
  it('first run: fetches every file by the manifest, verifies it and matches the origin byte for byte; served by the shim', async () => {
    const result = await sync(true)
    expect(result).toMatchObject({ status: 'updated', mode: 'manifest', serial: 1 })
    const pointer = readPointer(path.join(dist, 'current'))
    expect(result.downloaded).toBe(pointer.files)
    expect(served).toEqual(expect.arrayContaining(['/mirror/catalog.sqlite', pointer.snapshot!.path, pointer.archive!.path]))
    expectSameTree(true)
    const local = await startServer(mirror)
    for (const p of ['/projects/sodium', '/projects?q=sodium&limit=3', '/statistics']) {
      expect(await (await local.get(p)).text(), p).toBe(await (await origin.get(p)).text())
    }
    const index = await fetch(local.origin + pointer.manifest.path)
    expect(index.status).toBe(200)
    expect(Buffer.from(await index.arrayBuffer()).equals(readFileSync(path.join(dist, 'current/public', pointer.manifest.path)))).toBe(true)
    await local.close()
    expect((await sync()).status).toBe('up-to-date')
  })

  it('after a rebuild of unchanged data fetches no file at all: not the catalog, the snapshot or the archive either', async () => {
    const before = realpathSync(path.join(mirror, 'current'))
    const pointer = await build()
    expect(pointer.changes).toMatchObject({ added: 0, changed: 0, removed: 0 })
    const result = await sync(true)
    expect(result).toMatchObject({ status: 'updated', mode: 'feed', serial: 2, downloaded: 0 })
    // Only the documents that name the new serial: the pointer, the manifest index and the (empty) change file.
    expect(served.sort()).toEqual(['/mirror/changes/2.tsv.gz', '/mirror/pointer.json', pointer.manifest.path].sort())
    expectSameTree(true)
    const previous = readPointer(before)
    for (const key of ['snapshot', 'archive'] as const) {
      expect(statSync(path.join(mirror, 'current/public', pointer[key]!.path)).ino, key).toBe(statSync(path.join(before, 'public', previous[key]!.path)).ino)
    }
    expect(statSync(path.join(mirror, 'current/catalog.sqlite')).ino).toBe(statSync(path.join(before, 'catalog.sqlite')).ino)
  })

  it('after an edit, an addition and a deletion fetches exactly the changed files by the feed', async () => {
    editSummary(data, 'sodium', 'Edited for the mirror')
    addSodiumVersion(data)
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    const pointer = await build()
    const result = await sync()
    expect(result).toMatchObject({ mode: 'feed', serial: 3 })
    expect(result.downloaded).toBe(pointer.changes.added + pointer.changes.changed)
    expect(contentRequests().length).toBe(pointer.changes.added + pointer.changes.changed)
    expect(contentRequests().sort()).toEqual(changedNames(pointer).map((n) => decodeURIComponent(fileUrl(n))).sort())
    expect(contentRequests().some((p) => p.startsWith('/objects/'))).toBe(true)
    expect(result.linked).toBe(pointer.changes.unchanged)
    expectSameTree()
    expect(existsSync(path.join(mirror, 'current/public/api/v1/projects/archipelago-survival.json'))).toBe(false)
  })

  it('killed (SIGKILL) mid-sync keeps serving the previous release; the re-run resumes and completes', async () => {
    editSummary(data, 'sodium', 'Edited again')
    editSummary(data, 'iris', 'Iris, edited')
    editSummary(data, 'appleskin', 'AppleSkin, edited')
    const pointer = await build()
    const changed = changedNames(pointer).length
    expect(changed).toBeGreaterThan(8)
    const before = readlinkSync(path.join(mirror, 'current'))
    delayMs = 150
    served = []
    const child = spawn(path.resolve('node_modules/.bin/vite-node'), ['build/mirror-cli.ts', '--', '--from', proxyUrl, '--to', mirror, '--concurrency', '1'], { stdio: 'ignore' })
    let gone = false
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => ((gone = true), resolve(signal))))
    while (contentRequests().length < 4 && !gone) await new Promise((r) => setTimeout(r, 20))
    child.kill('SIGKILL')
    expect(await exited).toBe('SIGKILL')
    delayMs = 0
    const fetchedBeforeKill = contentRequests().length
    expect(fetchedBeforeKill).toBeLessThan(changed)
    // Still the previous release, whole: the shim over the mirror serves the old summary.
    expect(readlinkSync(path.join(mirror, 'current'))).toBe(before)
    const local = await startServer(mirror)
    expect((await (await local.get('/projects/sodium')).json()).data.summary).toBe('Edited for the mirror')
    const result = await sync()
    expect(result).toMatchObject({ status: 'updated', serial: pointer.serial })
    // Files downloaded and verified before the kill are kept (one may have been in flight).
    expect(result.resumed).toBeGreaterThan(0)
    expect(result.downloaded).toBeLessThanOrEqual(changed - fetchedBeforeKill + 1)
    expect(contentRequests().length).toBe(result.downloaded)
    expectSameTree()
    await local.ctx.reload()
    expect((await (await local.get('/projects/sodium')).json()).data.summary).toBe('Edited again')
    expect(local.serverErrors()).toBe(0)
    await local.close()
  })

  it('a resumed sync does not keep a truncated shard or change file left by an interrupted run', async () => {
    editSummary(data, 'sodium', 'Edited before an interrupted sync')
    const pointer = await build()
    const live = realpathSync(path.join(dist, 'current'))
    // What a sync killed in the middle of writing them could have left in its staging folder.
    const staging = path.join(mirror, 'releases', '.sync')
    const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(live, indexFile(pointer.id)), 'utf8')))
    const shard = shardFile(index.shards[0]!.sha256)
    const change = changeFile(pointer.serial)
    for (const name of [shard, change]) {
      mkdirSync(path.dirname(path.join(staging, name)), { recursive: true })
      const bytes = readFileSync(path.join(live, name))
      writeFileSync(path.join(staging, name), bytes.subarray(0, Math.floor(bytes.length / 2)))
    }
    writeFileSync(path.join(staging, '.target'), pointer.id)
    const result = await sync()
    expect(result).toMatchObject({ status: 'updated', serial: pointer.serial })
    const local = realpathSync(path.join(mirror, 'current'))
    for (const name of [shard, change]) expect(readFileSync(path.join(local, name)).equals(readFileSync(path.join(live, name))), name).toBe(true)
    expectSameTree()
    // The next sync reads that shard back as the local release's: whole, it gunzips.
    editSummary(data, 'sodium', 'Edited again')
    await build()
    expect((await sync()).status).toBe('updated')
    expectSameTree()
  })

  it('refuses a release whose file does not verify and stays on the previous release', async () => {
    editSummary(data, 'sodium', 'Edited a last time')
    const pointer = await build()
    const before = readlinkSync(path.join(mirror, 'current'))
    // Tamper with a changed body in the origin's live release, in place.
    const victim = path.join(dist, 'current', 'public/api/v1/projects/sodium.json')
    writeFileSync(victim, readFileSync(victim, 'utf8').replace('Edited a last time', 'Edited by an attacker'))
    await expect(sync()).rejects.toThrow(MirrorRefused)
    await expect(sync()).rejects.toThrow(/did not verify.*stays on release/s)
    expect(readlinkSync(path.join(mirror, 'current'))).toBe(before)
    expect(pointer.serial).toBeGreaterThan(Number(path.basename(before)))
    const local = await startServer(mirror)
    expect((await (await local.get('/projects/sodium')).json()).data.summary).toBe('Edited again')
    await local.close()
  })
})
