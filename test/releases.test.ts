/**
 * Releases for mirrors (issue 6): incremental builds (unchanged data rewrites nothing: same bytes,
 * same inode, 0 changes, catalog, snapshot and archive included; an edit or folded-in counts
 * rewrite exactly the files whose bytes change, and the report says so), the pointer/manifest/feed
 * documents with retention, pruning of releases and of the content store, and the build settings.
 * The snapshot and the archive themselves: offline.test.ts.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { ConfigError } from '../build/env.ts'
import { resolveShimOptions } from '../shim/config.ts'
import type { BuildOptions } from '../build/context.ts'
import { manifestIndexSchema, pointerSchema, type Pointer } from '../build/release/formats.ts'
import { hashBytes, parseShard, readGzipText, shardFile, shardOf } from '../build/release/manifest.ts'
import { removeTree } from '../build/remove-tree.ts'
import {
  addSodiumVersion,
  buildRelease,
  copySampleData,
  editSummary,
  readChangesOf,
  readManifestOf,
  writeIrisCounters,
  type BuiltRelease,
} from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'releases-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
const logs: string[] = []
let removedSha = ''

const build = (overrides: Partial<BuildOptions> = {}): Promise<BuiltRelease> =>
  buildRelease(data, dist, { keepReleases: 2, release: { snapshot: true, archive: true, feedRetention: 2, archiveWorker: true, snapshotWorker: true }, log: (l) => logs.push(l), ...overrides })

const release = (id: string): string => path.join(dist, 'releases', id)
const inode = (file: string): number => statSync(file).ino

/** The catalog, snapshot and archive of a release, release-relative. */
function extrasOf(pointer: Pointer): string[] {
  return ['catalog.sqlite', 'public/mirror/catalog.sqlite', `public${pointer.snapshot!.path}`, `public${pointer.archive!.path}`]
}

/** Names whose bytes differ between two manifests, and the names of the second that did not. */
function diffManifests(releaseA: string, releaseB: string): { changed: string[]; same: string[] } {
  const before = readManifestOf(releaseA)
  const changed: string[] = []
  const same: string[] = []
  for (const [name, e] of readManifestOf(releaseB)) (before.get(name)?.sha256 === e.sha256 ? same : changed).push(name)
  return { changed, same }
}

afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

describe('incremental releases', () => {
  it('rebuilds unchanged data without writing a byte: same files, catalog, snapshot and archive, same inodes, 0 changes', async () => {
    const { pointer: first, changes: firstChanges } = await build()
    expect(first).toMatchObject({ serial: 1, previous: null, sourceRevision: null })
    expect(first.changes).toEqual({ added: first.files, changed: 0, removed: 0, unchanged: 0 })
    expect(firstChanges).toEqual({ added: first.files + 3, changed: 0, removed: 0, unchanged: 0 })
    const { pointer: second, changes } = await build()
    expect(second).toMatchObject({ serial: 2, previous: 1 })
    expect(second.changes).toEqual({ added: 0, changed: 0, removed: 0, unchanged: second.files })
    // The whole release: the served files plus the catalog, the snapshot and the archive.
    expect(changes).toEqual({ added: 0, changed: 0, removed: 0, unchanged: second.files + 3 })
    expect(logs.at(-1)).toMatch(/0 bodies written.*release 00000002: 0 added, 0 changed, 0 removed, \d+ unchanged/)
    const a = readManifestOf(release('00000001'))
    const b = readManifestOf(release('00000002'))
    expect([...b]).toEqual([...a])
    for (const name of b.keys()) {
      // A hard link to the previous release's file: the same bytes and ETag by construction.
      expect(inode(path.join(release('00000002'), name))).toBe(inode(path.join(release('00000001'), name)))
    }
    for (const key of ['catalog', 'snapshot', 'archive'] as const) expect({ ...second[key]!, path: '' }, key).toEqual({ ...first[key]!, path: '' })
    const [extrasA, extrasB] = [extrasOf(first), extrasOf(second)]
    for (const [i, name] of extrasB.entries()) expect(inode(path.join(release('00000002'), name)), name).toBe(inode(path.join(release('00000001'), extrasA[i]!)))
    expect(second.manifest.sha256).not.toBe(first.manifest.sha256) // the index names its serial…
    const indexA = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000001'), 'public', first.manifest.path), 'utf8')))
    const indexB = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000002'), 'public', second.manifest.path), 'utf8')))
    expect(indexB.shards).toEqual(indexA.shards) // …but every shard, the part mirrors fetch, is the same
    expect(readChangesOf(release('00000002'), second)).toEqual([])
  })

  it('after an edit of one project rewrites exactly the files whose bytes show the edit, and reports them', async () => {
    const summary = 'Iris, edited once for the incremental test'
    editSummary(data, 'iris', summary)
    const { pointer, changes } = await build()
    const { changed, same } = diffManifests(release('00000002'), release('00000003'))
    const showing = [...readManifestOf(release('00000003')).keys()].filter((n) => n.startsWith('public/api/') && readFileSync(path.join(release('00000003'), n), 'utf8').includes(summary))
    expect(changed.sort()).toEqual(showing.sort())
    expect(changed).toContain('public/api/v1/projects/iris.json')
    expect(changed.length).toBeLessThan(20)
    expect(pointer.changes).toEqual({ added: 0, changed: changed.length, removed: 0, unchanged: same.length })
    // The catalog holds the summary; the snapshot and the archive hold the changed bodies.
    expect(changes).toEqual({ added: 0, changed: changed.length + 3, removed: 0, unchanged: same.length })
    expect(logs.at(-1)).toContain(`release 00000003: 0 added, ${changed.length + 3} changed, 0 removed, ${same.length} unchanged`)
    for (const name of same) expect(inode(path.join(release('00000003'), name))).toBe(inode(path.join(release('00000002'), name)))
    expect(readChangesOf(release('00000003'), pointer).map((c) => (c.kind === 'R' ? c.path : c.entry.path)).sort()).toEqual(changed.sort())
  })

  it('after download counts are folded in rewrites only the bodies that show them', async () => {
    const counters = path.join(root, 'counters.sqlite')
    const iris = { id: await writeIrisCounters(counters, data) }
    const { pointer } = await build({ countersFile: counters })
    const { changed, same } = diffManifests(release('00000003'), release('00000004'))
    expect(changed).toEqual(expect.arrayContaining(['public/api/v1/projects/iris.json', `public/api/v1/versions/${iris.id}.json`, 'public/api/v1/statistics.json']))
    expect(changed).not.toContain('public/api/v1/projects/sodium.json')
    expect(pointer.changes).toMatchObject({ added: 0, changed: changed.length, removed: 0 })
    for (const name of same) expect(inode(path.join(release('00000004'), name))).toBe(inode(path.join(release('00000003'), name)))
    // Every rewritten body differs from the previous one by download numbers only.
    for (const name of changed.filter((n) => n.startsWith('public/api/'))) {
      const strip = (dir: string): string => readFileSync(path.join(dir, name), 'utf8').replace(/\d+/g, '#')
      expect(strip(release('00000004')), name).toBe(strip(release('00000003')))
    }
    rmSync(counters)
  })

  it('after an edit, an addition and a deletion rewrites only the files whose bytes changed and lists them in the feed', async () => {
    editSummary(data, 'sodium', 'An edited summary of Sodium')
    addSodiumVersion(data)
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    removedSha = readManifestOf(release('00000004')).get('public/api/v1/projects/archipelago-survival.json')!.sha256
    const { pointer: fifth } = await build()
    const before = readManifestOf(release('00000004'))
    const after = readManifestOf(release('00000005'))
    const changes = readChangesOf(release('00000005'), fifth)
    const byKind = (k: string): string[] => changes.filter((c) => c.kind === k).map((c) => (c.kind === 'R' ? c.path : c.entry.path))
    expect(byKind('C')).toContain('public/api/v1/projects/sodium.json')
    expect(byKind('A')).toContain('public/api/v1/versions/Zz9Yy8Xx.json')
    expect(byKind('R')).toContain('public/api/v1/projects/archipelago-survival.json')
    expect(fifth.changes).toEqual({ added: byKind('A').length, changed: byKind('C').length, removed: byKind('R').length, unchanged: after.size - byKind('A').length - byKind('C').length })
    // The change file is exactly the difference of the two manifests.
    for (const [name, e] of after) {
      const old = before.get(name)
      const kind = !old ? 'A' : old.sha256 !== e.sha256 ? 'C' : null
      if (kind) expect(byKind(kind)).toContain(name)
      else expect(inode(path.join(release('00000005'), name))).toBe(inode(path.join(release('00000004'), name)))
    }
    for (const name of before.keys()) if (!after.has(name)) expect(byKind('R')).toContain(name)
    expect(fifth.changes.changed + fifth.changes.added).toBeLessThan(after.size / 10)
    // Every entry of a shard hashes to its index entry, and sits in the shard its name selects.
    const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(release('00000005'), 'public', fifth.manifest.path), 'utf8')))
    let files = 0
    for (const ref of index.shards) {
      const text = readGzipText(readFileSync(path.join(release('00000005'), shardFile(ref.sha256))))
      expect(hashBytes(text)).toBe(ref.sha256)
      for (const e of parseShard(text)) expect(shardOf(e.path)).toBe(ref.shard)
      files += ref.files
    }
    expect(files).toBe(after.size)
  })

  it('keeps a bounded feed with an explicit resync point, retires old releases and unreferenced store entries', async () => {
    editSummary(data, 'sodium', 'Edited once more')
    logs.length = 0
    const { pointer: sixth } = await build()
    // Release 4, the one to go, became release 6's tree (recycle.ts, test/recycle.test.ts): the
    // bodies only it named left the store before the release went live, and nothing is removed after.
    const live = logs.findIndex((l) => /^Release 00000006 is live after [\d.]+s$/.test(l))
    const reconciled = logs.findIndex((l) => /^Reconciled the tree of release 00000004 after [\d.]+s of sealing: \d+ of 256 manifest shards unchanged, \d+ names linked, \d+ removed, [1-9]\d* stored bodies no release names removed$/.test(l))
    expect(live, logs.join('\n')).toBeGreaterThan(0)
    expect(reconciled, logs.join('\n')).toBeGreaterThan(0)
    expect(reconciled).toBeLessThan(live)
    expect(logs.some((l) => l.startsWith('Removed '))).toBe(false)
    expect(sixth.feed.changes.map((e) => e.serial)).toEqual([5, 6])
    // A mirror at serial 4 can still apply 5 and 6; below 4 the answer is "resync".
    expect(sixth.feed.oldest).toBe(4)
    expect(readdirSync(path.join(release('00000006'), 'public/mirror/changes')).sort()).toEqual(['5.tsv.gz', '6.tsv.gz'])
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000005', '00000006'])
    // The store keeps only bodies a kept release still names: the deleted project's body is gone.
    const store = path.join(dist, 'store')
    for (const prefix of readdirSync(store)) for (const name of readdirSync(path.join(store, prefix))) expect(statSync(path.join(store, prefix, name)).nlink).toBeGreaterThan(1)
    expect(removedSha).toMatch(/^[0-9a-f]{64}$/)
    expect(() => statSync(path.join(store, removedSha.slice(0, 2), removedSha))).toThrow()
  })

  it('never prunes the live release or the one live before it (KEEP_RELEASES=1, and after a roll-back)', async () => {
    await build({ keepReleases: 1 })
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000006', '00000007'])
    // Roll back by hand to 00000006, then build: 00000006 was live until this build and is kept
    // although it is not among the newest two.
    await build({ keepReleases: 3 })
    const rollback = path.join(dist, '.rollback')
    symlinkSync('releases/00000006', rollback)
    renameSync(rollback, path.join(dist, 'current'))
    const { pointer } = await build({ keepReleases: 2 })
    expect(pointer).toMatchObject({ serial: 9, previous: 6 })
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000006', '00000008', '00000009'])
  })
})

describe('removing a release-sized folder', () => {
  it('removes nested folders, hard links and odd names, leaves the linked inode elsewhere, and ignores a missing folder', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'remove-tree-'))
    const keep = path.join(root, 'store-body')
    writeFileSync(keep, 'body')
    const dir = path.join(root, '-rf')
    mkdirSync(path.join(dir, 'public/api/v1/versions'), { recursive: true })
    for (let i = 0; i < 50; i++) linkSync(keep, path.join(dir, 'public/api/v1/versions', `v${i}.json`))
    writeFileSync(path.join(dir, '--help'), 'x')
    removeTree(dir)
    expect(existsSync(dir)).toBe(false)
    expect(statSync(keep).nlink).toBe(1)
    expect(() => removeTree(path.join(root, 'missing'))).not.toThrow()
    rmSync(root, { recursive: true, force: true })
  })
})

describe('build settings', () => {
  it('are read from the environment by the build command only: FEED_RETENTION, RELEASE_SNAPSHOT, RELEASE_ARCHIVE, KEEP_RELEASES, SOURCE_REVISION', () => {
    const out = path.join(root, 'cli-dist')
    const env = { ...process.env, FEED_RETENTION: '1', RELEASE_SNAPSHOT: '0', RELEASE_ARCHIVE: '0', KEEP_RELEASES: '1', SOURCE_REVISION: 'abc1234', COUNTERS_FILE: path.join(root, 'none.sqlite') }
    const run = (): string => {
      const child = spawnSync(path.resolve('node_modules/.bin/vite-node'), ['build/cli.ts', '--', '--data', data, '--dist', out], { env, encoding: 'utf8' })
      expect(child.status, child.stderr).toBe(0)
      return child.stderr
    }
    run()
    expect(run()).toMatch(/release 00000002: 0 added, 0 changed, 0 removed, \d+ unchanged/)
    const pointer = pointerSchema.parse(JSON.parse(readFileSync(path.join(out, 'current/release.json'), 'utf8')))
    expect(pointer).toMatchObject({ serial: 2, sourceRevision: 'abc1234', snapshot: null, archive: null })
    expect(pointer.feed).toMatchObject({ oldest: 1, changes: [{ serial: 2 }] })
    expect(readdirSync(path.join(out, 'current/public/mirror')).filter((n) => /^(snapshot|tree)-/.test(n))).toEqual([])
    expect(readdirSync(path.join(out, 'releases')).sort()).toEqual(['00000001', '00000002'])
  })

  it('take BUILD_LOAD_WORKER as a count of load workers from 0 to 4, two when unset; refuse anything else naming the variable', () => {
    const workers = (value: string | undefined): number => resolveBuildOptions({}, value === undefined ? {} : { BUILD_LOAD_WORKER: value }).loadWorkers
    expect([undefined, '', '0', '1', '2', '4'].map(workers)).toEqual([2, 2, 0, 1, 2, 4])
    for (const bad of ['5', '-1', '1.5', 'yes', '0x2', ' ']) expect(() => workers(bad), bad).toThrow(new RegExp(`^BUILD_LOAD_WORKER must be an integer from 0 to 4, got ${JSON.stringify(JSON.stringify(bad)).slice(1, -1)}$`))
    expect(() => workers('9')).toThrow(ConfigError)
    for (const [name, bad] of [['KEEP_RELEASES', '0'], ['KEEP_RELEASES', '2 releases'], ['FEED_RETENTION', '-5'], ['FEED_RETENTION', '1e3']] as const) {
      expect(() => resolveBuildOptions({}, { [name]: bad }), `${name}=${bad}`).toThrow(new RegExp(`^${name} must be an integer from 1 up`))
    }
    expect(resolveBuildOptions({}, { KEEP_RELEASES: '5', FEED_RETENTION: '7' })).toMatchObject({ keepReleases: 5, release: { feedRetention: 7 } })
    // Switches are 0 or 1: "false" or "no" must not read as on.
    for (const name of ['RELEASE_SNAPSHOT', 'RELEASE_ARCHIVE', 'BUILD_WRITE_WORKER', 'BUILD_SEARCH_WORKER', 'BUILD_ARCHIVE_WORKER', 'BUILD_SNAPSHOT_WORKER']) {
      for (const bad of ['false', 'no', 'off', '2']) expect(() => resolveBuildOptions({}, { [name]: bad }), `${name}=${bad}`).toThrow(`${name} must be 0 or 1, got "${bad}"`)
    }
    // The snapshot and archive workers are switches: only 0 turns them off.
    const release = (env: Record<string, string>) => resolveBuildOptions({}, env).release
    expect(release({ BUILD_SNAPSHOT_WORKER: '0', BUILD_ARCHIVE_WORKER: '0' })).toMatchObject({ snapshotWorker: false, archiveWorker: false })
    expect(release({})).toMatchObject({ snapshotWorker: true, archiveWorker: true })
    expect([{}, { BUILD_SEARCH_WORKER: '1' }, { BUILD_SEARCH_WORKER: '0' }].map((env) => resolveBuildOptions({}, env).searchWorker)).toEqual([true, true, false])
    expect(release({ RELEASE_SNAPSHOT: '1', RELEASE_ARCHIVE: '' })).toMatchObject({ snapshot: true, archive: true })
  })

  it('take an empty text setting as unset: its default, never the current folder or an empty URL', () => {
    const empty = { DATA_DIR: '', DIST_DIR: '', BASE_URL: '', FILES_BASE_URL: '', COUNTERS_FILE: '', SOURCE_REVISION: '' }
    expect(resolveBuildOptions({}, empty)).toMatchObject({
      dataDir: path.resolve('data'),
      distDir: path.resolve('dist'),
      baseUrl: 'http://localhost:3000',
      filesBaseUrl: '/objects',
      countersFile: path.resolve('dist/counters.sqlite'),
      sourceRevision: null,
    })
    const shim = resolveShimOptions({}, { DIST_DIR: '', HOST: '', FILES_BASE_URL: '', COUNTERS_FILE: '', SNAPSHOT: '', DOWNLOAD_SECRET_FILE: '' })
    expect(shim).toMatchObject({ distDir: path.resolve('dist'), host: '0.0.0.0', filesBaseUrl: '/objects', countersFile: path.resolve('dist/counters.sqlite'), snapshotFile: null, downloadSecretFile: 'auto' })
    // The day secret in memory only is asked for by name; a path is taken as it is.
    expect(resolveShimOptions({}, { DOWNLOAD_SECRET_FILE: 'none' }).downloadSecretFile).toBeNull()
    expect(resolveShimOptions({}, { DOWNLOAD_SECRET_FILE: '/run/catalog/secret.json' }).downloadSecretFile).toBe('/run/catalog/secret.json')
  })

  it('refuse a bad setting at the command line with the variable named, exit 2, before touching anything', () => {
    const out = path.join(root, 'refused-dist')
    for (const [args, env] of [
      [['build/cli.ts', '--', '--data', data, '--dist', out], { RELEASE_SNAPSHOT: 'false' }],
      [['build/rollback-cli.ts', '--', '--dist', out], { KEEP_RELEASES: 'three' }],
    ] as const) {
      const child = spawnSync(path.resolve('node_modules/.bin/vite-node'), args, { env: { ...process.env, ...env }, encoding: 'utf8' })
      expect(child.status, child.stderr).toBe(2)
      const [name, value] = Object.entries(env)[0]!
      expect(child.stderr).toContain(`${name} must be`)
      expect(child.stderr).toContain(`got "${value}"`)
      expect(existsSync(out), args[0]).toBe(false)
    }
  })
})
