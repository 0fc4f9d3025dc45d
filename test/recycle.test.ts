/**
 * A release written over the tree of a release the build would prune (BUILD_RECYCLE,
 * build/release/recycle.ts): the result is the release a build into an empty folder makes (the
 * same names, bytes and content mtimes, nothing more in the tree), the releases it must keep are
 * never written through, the store keeps only what a release names, and a build that fails after
 * taking the tree loses only that release.
 */
import { createHash } from 'node:crypto'
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import type { BuildOptions } from '../build/context.ts'
import { ConfigError } from '../build/env.ts'
import { runBuild } from '../build/index.ts'
import { contentMtime } from '../build/render/etag.ts'
import { abortRelease, prepareRelease } from '../build/release/publish.ts'
import { hashBytes, shardFile } from '../build/release/manifest.ts'
import { readIndex, shardTextFile } from '../build/release/seal-manifest.ts'
import { SHARD_MEMBERS_FORMAT, shardMembersFile } from '../build/release/shard-gzip.ts'
import { addSodiumVersion, buildRelease, copySampleData, editSummary, readChangesOf, readManifestOf } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'recycle-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
const logs: string[] = []
let deletedSha = ''

const build = (distDir: string, overrides: Partial<BuildOptions> = {}) =>
  buildRelease(data, distDir, { keepReleases: 2, release: { snapshot: true, archive: true, feedRetention: 3, archiveWorker: false, snapshotWorker: false }, log: (l) => logs.push(l), ...overrides })
const release = (id: string, distDir = dist): string => path.join(distDir, 'releases', id)
const sha256Of = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex')

/** Every file and folder under the served tree of a release (public/, without public/mirror), release-relative. */
function walkTree(releaseDir: string): { files: string[]; emptyFolders: string[] } {
  const files: string[] = []
  const emptyFolders: string[] = []
  const walk = (rel: string): void => {
    const entries = readdirSync(path.join(releaseDir, rel), { withFileTypes: true })
    if (entries.length === 0) emptyFolders.push(rel)
    for (const e of entries) {
      const name = `${rel}/${e.name}`
      if (name === 'public/mirror') continue
      if (e.isDirectory()) walk(name)
      else files.push(name)
    }
  }
  walk('public')
  return { files: files.sort(), emptyFolders }
}

/** Checks that each name of a release's manifest holds its bytes, with the content mtime of its SHA-256. */
function expectTreeMatchesManifest(releaseDir: string): void {
  const manifest = readManifestOf(releaseDir)
  const tree = walkTree(releaseDir)
  expect(tree.files).toEqual([...manifest.keys()].sort())
  expect(tree.emptyFolders).toEqual([])
  for (const [name, e] of manifest) {
    const file = path.join(releaseDir, name)
    expect(sha256Of(file), name).toBe(e.sha256)
    expect(Math.floor(statSync(file).mtimeMs / 1000), name).toBe(contentMtime(e.sha256))
  }
}

/**
 * Each manifest shard of a release has its plain copy (the shard's text, which has the SHA-256 the
 * index gives) and its gzip member index (shard-gzip.ts), which names that text and gzip file.
 */
function expectPlainShards(releaseDir: string): void {
  const index = readIndex(releaseDir)!.index
  const kept = index.shards.flatMap((s) => [`${s.sha256}.tsv`, `${s.sha256}.members`])
  expect(readdirSync(path.join(releaseDir, 'manifest-text')).sort()).toEqual([...new Set(kept)].sort())
  for (const ref of index.shards) {
    const plain = readFileSync(path.join(releaseDir, shardTextFile(ref.sha256)))
    expect(plain.equals(gunzipSync(readFileSync(path.join(releaseDir, shardFile(ref.sha256))))), ref.shard).toBe(true)
    expect(hashBytes(plain)).toBe(ref.sha256)
    const header = readFileSync(path.join(releaseDir, shardMembersFile(ref.sha256)), 'utf8').split('\n')[0]!.split('\t')
    expect(header.slice(0, 3), ref.shard).toEqual([SHARD_MEMBERS_FORMAT, ref.sha256, String(ref.size)])
  }
}

/** Every entry of the content store is named by some release (more than the store's own link). */
function expectStoreSwept(distDir: string): void {
  const store = path.join(distDir, 'store')
  for (const prefix of readdirSync(store)) {
    for (const name of readdirSync(path.join(store, prefix))) expect(statSync(path.join(store, prefix, name)).nlink, name).toBeGreaterThan(1)
  }
}

afterAll(() => {
  rmSync(root, { recursive: true, force: true })
})

describe('a release written over a recycled tree', () => {
  it('is the release an empty folder gives, keeps the releases it must, and leaves nothing unnamed in the store', async () => {
    await build(dist)
    editSummary(data, 'iris', 'Iris, as release 2 has it')
    await build(dist)
    const live = release('00000002')
    const liveManifest = readManifestOf(live)
    // Release 3 differs from release 1, the tree it takes over, by both edits, a new version and a
    // deleted project: names changed, added and removed.
    editSummary(data, 'sodium', 'Sodium, as release 3 has it')
    addSodiumVersion(data)
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    const removedSha = readManifestOf(release('00000001')).get('public/api/v1/projects/archipelago-survival.json')!.sha256
    logs.length = 0
    const third = await build(dist)
    expect(logs.join('\n')).toMatch(/^Writing release 00000003 over the tree of release 00000001 \(\d+ names\), which it would have removed \(BUILD_RECYCLE\)$/m)
    const reconciled = logs.find((l) => l.startsWith('Reconciled the tree of release 00000001'))
    expect(reconciled, logs.join('\n')).toMatch(/: \d+ of 256 manifest shards unchanged, [1-9]\d* names linked, [1-9]\d* removed, [1-9]\d* stored bodies no release names removed$/)
    // Nothing was removed after the release went live: the tree it would have removed is this one.
    expect(logs.some((l) => l.startsWith('Removed '))).toBe(false)
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000002', '00000003'])
    // archive-members.tsv: the member index of the archive, which the next build copies members from (build/release/archive.ts);
    // project-bodies.tsv: each project's bodies, which the next build names without rendering them again (build/catalog-memo.ts);
    // manifest-text: the plain copies of the manifest's shards, which the next build compares with (build/release/manifest.ts);
    // snapshot-hash.json: the snapshot's SHA-256 as sealed, which the next build trusts while stat says the file is untouched (build/release/hash-file.ts).
    expect(readdirSync(release('00000003')).sort()).toEqual([
      '.complete',
      'archive-members.tsv',
      'catalog.sqlite',
      'manifest-text',
      'manifest.tsv',
      'project-bodies.tsv',
      'public',
      'release.json',
      'snapshot-hash.json',
    ])
    expectPlainShards(release('00000003'))
    expect(third.pointer.changes.removed).toBeGreaterThan(0)
    expect(third.pointer.changes.added).toBeGreaterThan(0)

    // The tree is its manifest exactly: every name with its bytes and content mtime, no name or
    // folder left over from release 1.
    expectTreeMatchesManifest(release('00000003'))
    expect(readManifestOf(release('00000003')).has('public/api/v1/projects/archipelago-survival.json')).toBe(false)
    // The live release before the build was never written through (its inodes are shared).
    expectTreeMatchesManifest(live)
    expect(readManifestOf(live)).toEqual(liveManifest)
    // Unchanged names are the previous release's inodes, as in a build into an empty folder.
    for (const [name, e] of readManifestOf(release('00000003'))) {
      if (liveManifest.get(name)?.sha256 === e.sha256) expect(statSync(path.join(release('00000003'), name)).ino, name).toBe(statSync(path.join(live, name)).ino)
    }
    // A build of the same data into an empty dist: the same manifest, catalog, snapshot bytes.
    const fresh = path.join(root, 'fresh')
    const other = await build(fresh, { recycle: false })
    expect(readManifestOf(release('00000003'))).toEqual(readManifestOf(release('00000001', fresh)))
    expect(third.pointer.catalog).toEqual(other.pointer.catalog)
    expect(third.pointer.manifest.sha256).not.toBe('')
    expect(readFileSync(path.join(release('00000003'), 'public/mirror/manifest/00000003.json'), 'utf8').replace(/"(serial|id)":("\d+"|\d+)/g, '')).toBe(
      readFileSync(path.join(release('00000001', fresh), 'public/mirror/manifest/00000001.json'), 'utf8').replace(/"(serial|id)":("\d+"|\d+)/g, ''),
    )
    // The store: nothing unnamed is left; the deleted project's body stays while release 2 names it.
    expectStoreSwept(dist)
    expect(statSync(path.join(dist, 'store', removedSha.slice(0, 2), removedSha)).nlink).toBe(3)
    deletedSha = removedSha
  })

  it('works the same with the tree written on the main thread alone (BUILD_WRITE_WORKER=0), and with damaged plain shards', async () => {
    editSummary(data, 'iris', 'Iris, as release 4 has it')
    // The plain copies of the shards of release 2 (the tree taken over) and release 3 (the one
    // compared with) damaged: each is given another shard's text, cut short or removed. Trusted,
    // they would leave names of release 2 in the tree and put wrong lines in the change file; each
    // must be found out and its gzip shard read instead.
    for (const id of ['00000002', '00000003']) {
      const dir = path.join(release(id), 'manifest-text')
      const copies = readdirSync(dir).sort()
      const other = readFileSync(path.join(dir, copies[0]!))
      copies.forEach((name, i) => {
        const file = path.join(dir, name)
        if (i % 3 === 0) rmSync(file)
        else if (i % 3 === 1) writeFileSync(file, readFileSync(file).subarray(0, 100))
        else writeFileSync(file, other)
      })
    }
    const before = readManifestOf(release('00000003'))
    logs.length = 0
    const fourth = await build(dist, { writeWorker: false })
    expect(logs.join('\n')).toContain('Writing release 00000004 over the tree of release 00000002')
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000003', '00000004'])
    expectTreeMatchesManifest(release('00000004'))
    expectTreeMatchesManifest(release('00000003'))
    expectPlainShards(release('00000004'))
    // The change file lists exactly what differs between the two manifests.
    const after = readManifestOf(release('00000004'))
    const expected = [...new Set([...before.keys(), ...after.keys()])]
      .filter((name) => before.get(name)?.sha256 !== after.get(name)?.sha256)
      .map((name) => `${after.has(name) ? (before.has(name) ? 'C' : 'A') : 'R'} ${name}`)
      .sort()
    expect(expected.length).toBeGreaterThan(0)
    expect(readChangesOf(release('00000004'), fourth.pointer).map((c) => `${c.kind} ${c.kind === 'R' ? c.path : c.entry.path}`).sort()).toEqual(expected)
    expectStoreSwept(dist)
    // Release 2, the last to name the deleted project, became release 4: its body left the store.
    expect(statSync(path.join(dist, 'store', deletedSha.slice(0, 2), deletedSha), { throwIfNoEntry: false }), logs.join('\n')).toBeUndefined()
  })

  it('is not used with BUILD_RECYCLE=0: the old release is removed after the new one is live', async () => {
    editSummary(data, 'iris', 'Iris, as release 5 has it')
    logs.length = 0
    await build(dist, { recycle: false })
    expect(logs.some((l) => l.startsWith('Writing release'))).toBe(false)
    expect(logs.join('\n')).toMatch(/^Removed 1 old release\(s\) and \d+ stored bodies no release names in [\d.]+s$/m)
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000004', '00000005'])
    expectTreeMatchesManifest(release('00000005'))
  })

  it('when the build fails after taking the tree, loses only that release: the live one is untouched and the store swept', async () => {
    const live = release('00000005')
    const liveManifest = readManifestOf(live)
    const broken = path.join(data, 'projects', 'iris', 'project.json')
    const good = readFileSync(broken, 'utf8')
    writeFileSync(broken, '{"id": "not a project"')
    logs.length = 0
    const result = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: null, keepReleases: 2, log: (l) => logs.push(l) }))
    expect(result.ok).toBe(false)
    expect(logs.join('\n')).toContain('Writing release 00000006 over the tree of release 00000004')
    // Release 4 was to be removed by this build; the live one is whole, and current still names it.
    expect(readdirSync(path.join(dist, 'releases')).sort()).toEqual(['00000005'])
    expect(readManifestOf(live)).toEqual(liveManifest)
    expectTreeMatchesManifest(live)
    expect(readlinkSync(path.join(dist, 'current'))).toBe('releases/00000005')
    expectStoreSwept(dist)
    // The next build has no release to take over, and starts from an empty folder. It also clears
    // what a killed build would leave: its folder, a body only that folder named, a half-written
    // store entry.
    writeFileSync(broken, good)
    const killed = path.join(dist, 'releases', '.tmp-00000006')
    mkdirSync(path.join(killed, 'public'), { recursive: true })
    const orphan = path.join(dist, 'store', 'ff', 'f'.repeat(64))
    mkdirSync(path.dirname(orphan), { recursive: true })
    writeFileSync(orphan, 'a body only a killed build named')
    linkSync(orphan, path.join(killed, 'public', 'orphan.json'))
    writeFileSync(`${orphan}.tmp-999999`, 'half')
    logs.length = 0
    await build(dist)
    expect(logs.some((l) => l.startsWith('Writing release'))).toBe(false)
    expectTreeMatchesManifest(release('00000006'))
    expect(existsSync(orphan)).toBe(false)
    expect(existsSync(`${orphan}.tmp-999999`)).toBe(false)
    expectStoreSwept(dist)
  })

  it("moves the taken release's catalog, snapshot and manifests out of the way at once and removes them beside the build; a killed build's are removed by the next", async () => {
    const own = path.join(root, 'discard')
    await build(own)
    await build(own)
    await build(own)
    // Release 4 is written over release 2's tree: what release 2 had beside its served tree goes to
    // .discard-00000004, and is being removed while prepareRelease has already returned.
    const taken = readIndex(release('00000002', own))!
    const pending = prepareRelease(own, 2)
    try {
      expect(pending.recycled?.serial).toBe(2)
      expect(readdirSync(pending.dir).sort()).toEqual(['.recycled', 'public'])
      expect(readdirSync(path.join(pending.dir, 'public'))).not.toContain('mirror')
      expect(readdirSync(path.join(pending.dir, '.recycled')).filter((n) => n.endsWith('.tsv.gz')).length).toBe(new Set(taken.index.shards.map((s) => s.sha256)).size)
      await pending.discarded
      expect(readdirSync(path.join(own, 'releases')).sort()).toEqual(['.tmp-00000004', '00000003'])
    } finally {
      abortRelease(own, pending)
    }
    // A build killed while the removal ran leaves the folder: the next build removes it, and no
    // stored body is lost with it (it holds no served name).
    const left = path.join(own, 'releases', '.discard-00000004')
    mkdirSync(path.join(left, 'mirror'), { recursive: true })
    writeFileSync(path.join(left, 'mirror', 'snapshot-00000002.sqlite'), 'a snapshot being removed')
    writeFileSync(path.join(left, 'manifest.tsv'), 'public/x.json\t' + '0'.repeat(64) + '\t1\n')
    await build(own)
    expect(readdirSync(path.join(own, 'releases')).sort()).toEqual(['00000003', '00000004'])
    expectTreeMatchesManifest(release('00000004', own))
    expectStoreSwept(own)
  })

  it('is switched by BUILD_RECYCLE, on when unset; anything but 0 or 1 is refused naming the variable', () => {
    expect(resolveBuildOptions({}, {}).recycle).toBe(true)
    expect(resolveBuildOptions({}, { BUILD_RECYCLE: '0' }).recycle).toBe(false)
    expect(resolveBuildOptions({}, { BUILD_RECYCLE: '1' }).recycle).toBe(true)
    expect(() => resolveBuildOptions({}, { BUILD_RECYCLE: 'yes' })).toThrow(ConfigError)
    expect(() => resolveBuildOptions({}, { BUILD_RECYCLE: 'yes' })).toThrow(/BUILD_RECYCLE/)
  })
})
