/**
 * Roll-back by roll-forward (issue 8, operations): `npm run rollback` publishes a kept older release
 * again as a new serial. The new release has the old one's bytes (manifest, catalog, snapshot,
 * archive), its change file lists exactly what the roll-back changed, the shim swaps to it, and
 * bad requests are refused without touching the live release.
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import type { Change } from '../build/release/manifest.ts'
import { listKeptReleases, rereleaseRelease, RereleaseError, type Rerelease } from '../build/release/rerelease.ts'
import { buildRelease, copySampleData, editSummary, json, readChangesOf, readManifestOf, startServer, type BuiltRelease, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'rollback-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
const options = resolveBuildOptions({ distDir: dist, countersFile: null, log: () => {}, release: { snapshot: true, archive: true, feedRetention: 10, archiveWorker: true, snapshotWorker: true } })
let first: BuiltRelease
let second: BuiltRelease
let rolled: Rerelease
let server: TestServer
let firstEtag = ''

beforeAll(async () => {
  first = await buildRelease(data, dist, { release: options.release })
  server = await startServer(dist)
  const res = await server.get('/projects/sodium')
  firstEtag = res.headers.get('etag')!
  editSummary(data, 'sodium', 'A summary that turned out to be wrong')
  second = await buildRelease(data, dist, { release: options.release })
  await server.ctx.reload()
  expect((await json(await server.get('/projects/sodium'))).data.summary).toBe('A summary that turned out to be wrong')
  rolled = await rereleaseRelease(options)
})

afterAll(async () => {
  await server?.close()
  rmSync(root, { recursive: true, force: true })
})

describe('npm run rollback', () => {
  it('publishes the release the live one was built after as a new serial, byte for byte', () => {
    expect(rolled.from.serial).toBe(first.pointer.serial)
    expect(rolled.release.serial).toBe(second.pointer.serial + 1)
    expect(rolled.release.previous).toBe(second.pointer.serial)
    expect(readlinkSync(path.join(dist, 'current'))).toBe(path.join('releases', rolled.release.id))
    expect(readManifestOf(rolled.releaseDir)).toEqual(readManifestOf(first.releaseDir))
    // The reproducible extras come back identical to the first release's.
    expect(rolled.release.catalog.sha256).toBe(first.pointer.catalog.sha256)
    expect(rolled.release.snapshot!.sha256).toBe(first.pointer.snapshot!.sha256)
    expect(rolled.release.archive!.sha256).toBe(first.pointer.archive!.sha256)
    expect(rolled.release.sourceRevision).toBe(first.pointer.sourceRevision)
  })

  it('lists exactly what the roll-back changed in its change file, so mirrors move forward', () => {
    const name = (c: Change): string => (c.kind === 'R' ? c.path : c.entry.path)
    const undone = readChangesOf(second.releaseDir, second.pointer).map(name).sort()
    const redone = readChangesOf(rolled.releaseDir, rolled.release)
    expect(undone).toContain('public/api/v1/projects/sodium.json')
    expect(redone.map(name).sort()).toEqual(undone)
    expect(new Set(redone.map((c) => c.kind))).toEqual(new Set(['C']))
    // Each changed name gets the first release's bytes back.
    const before = readManifestOf(first.releaseDir)
    for (const c of redone) if (c.kind === 'C') expect(c.entry.sha256, c.entry.path).toBe(before.get(c.entry.path)!.sha256)
    // Served files changed back, plus the catalog, snapshot and archive.
    expect(rolled.changes.changed).toBe(undone.length + 3)
    expect(rolled.changes.added + rolled.changes.removed).toBe(0)
  })

  it('is served by the shim after its release poll, with the old bytes and ETag', async () => {
    expect(await server.ctx.reload()).toBe(true)
    const res = await server.get('/projects/sodium')
    expect(res.headers.get('etag')).toBe(firstEtag)
    expect((await json(res)).data.summary).not.toBe('A summary that turned out to be wrong')
    const dynamic = await json(await server.get('/projects?ids=sodium'))
    expect(dynamic.data[0].summary).not.toBe('A summary that turned out to be wrong')
  })

  it('refuses a release that is not kept, or is live, naming what is kept', async () => {
    const kept = listKeptReleases(dist)
    await expect(rereleaseRelease(options, 99)).rejects.toThrow(new RegExp(`release 99 is not kept .*kept: ${kept.join(', ')}`))
    await expect(rereleaseRelease(options, rolled.release.serial)).rejects.toBeInstanceOf(RereleaseError)
    expect(readlinkSync(path.join(dist, 'current'))).toBe(path.join('releases', rolled.release.id))
  })

  it('runs from the command line: --to a serial, exit 1 on refusal and 2 on bad arguments', () => {
    const run = (...args: string[]) =>
      spawnSync(path.resolve('node_modules/.bin/vite-node'), ['build/rollback-cli.ts', '--', '--dist', dist, ...args], { encoding: 'utf8', env: { ...process.env, COUNTERS_FILE: path.join(root, 'c.sqlite') } })
    const bad = run('--to', 'latest')
    expect(bad.status).toBe(2)
    expect(bad.stderr).toContain('--to must be a release serial')
    const refused = run('--to', '99')
    expect(refused.status).toBe(1)
    expect(refused.stderr).toContain('Roll-back refused: release 99 is not kept')
    const ok = run('--to', String(second.pointer.serial))
    expect(ok.status, ok.stderr).toBe(0)
    expect(ok.stderr).toMatch(/Re-released 0+2 as 0+4 in [\d.]+s: 0 added, \d+ changed, 0 removed/)
    const live = path.join(dist, 'releases', String(rolled.release.serial + 1).padStart(8, '0'))
    expect(readlinkSync(path.join(dist, 'current'))).toBe(path.relative(dist, live))
    expect(readManifestOf(live)).toEqual(readManifestOf(second.releaseDir))
  })
})
