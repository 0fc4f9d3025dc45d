/**
 * The manifest shards' gzip members (build/release/shard-gzip.ts): a shard is gzipped as runs of
 * lines ended by the text alone, so a rebuild copies the members of the runs its change left alone
 * from the previous release's shard. Whatever was copied, a shard file must be the bytes gzipShard
 * gives its text (what a mirror rebuilding it from the change feed writes), gunzip to its text, and
 * an index that does not describe the previous shard, or a member the disk changed, must not be
 * trusted.
 */
import { createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { generateCatalog, resolveGenerateOptions } from '../build/generate.ts'
import { mutateCatalog } from '../build/generate/mutate.ts'
import { manifestIndexSchema } from '../build/release/formats.ts'
import { resolveReleaseOptions } from '../build/release/options.ts'
import { indexFile, shardFile } from '../build/release/manifest.ts'
import { shardTextFile } from '../build/release/seal-manifest.ts'
import { carryShardMembers, gzipShard, gzipShardReusing, SHARD_MEMBERS_FORMAT, shardMembersFile, shardRuns, type PreviousShard } from '../build/release/shard-gzip.ts'
import { buildRelease, type BuiltRelease } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'shard-members-'))
const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex')

afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A sorted shard text of `n` lines whose body SHA-256s are drawn from `seed` (so about one line in 64 ends a run). */
function shardText(n: number, seed: string, edit: (i: number) => string | null = () => ''): Buffer {
  const lines: string[] = []
  for (let i = 0; i < n; i++) {
    const suffix = edit(i)
    if (suffix === null) continue
    const name = `public/api/v1/version/${String(i).padStart(6, '0')}.json`
    lines.push(`${name}\t${sha256(`${seed}${i}${suffix}`)}\t${1000 + i}\n`)
  }
  return Buffer.from(lines.join(''))
}

/** The gzip members of a file, each as its own gzip stream (split where each one's header starts, as the index records them). */
function membersOf(gz: Buffer, index: string): Buffer[] {
  const [, ...lines] = index.trim().split('\n')
  const out: Buffer[] = []
  let at = 0
  for (const line of lines) {
    const n = Number(line.split('\t')[0])
    out.push(gz.subarray(at, at + n))
    at += n
  }
  expect(at).toBe(gz.length)
  return out
}

/** Writes a shard's gzip file and member index under `dir`, as a release keeps them; returns the PreviousShard of them. */
function keep(dir: string, text: Buffer): PreviousShard {
  const packed = gzipShardReusing(text, null)
  const gzFile = path.join(dir, `${sha256(text)}.tsv.gz`)
  const membersFile = path.join(dir, `${sha256(text)}.members`)
  writeFileSync(gzFile, packed.gz)
  writeFileSync(membersFile, packed.index)
  return { text, sha256: sha256(text), size: packed.gz.length, gzFile, membersFile }
}

describe('shard gzip members', () => {
  const text = shardText(3000, 'a')

  it('ends a run after each line whose body SHA-256 ends in 00–03, and at the end of the text', () => {
    const ends = shardRuns(text)
    const lines = text.toString('utf8').split('\n').slice(0, -1)
    let at = 0
    const expected: number[] = []
    for (const line of lines) {
      at += Buffer.byteLength(line) + 1
      const tail = line.split('\t')[1]!.slice(-2)
      if (['00', '01', '02', '03'].includes(tail)) expected.push(at)
    }
    if (expected.at(-1) !== text.length) expected.push(text.length)
    expect(ends).toEqual(expected)
    // 3,000 lines at one in 64: dozens of runs, not one.
    expect(ends.length).toBeGreaterThan(20)
    expect(shardRuns(Buffer.alloc(0))).toEqual([])
  })

  it('gzips a shard as one member per run, which gunzips to the text', () => {
    const packed = gzipShardReusing(text, null)
    expect(packed.gz.equals(gzipShard(text))).toBe(true)
    expect(gunzipSync(packed.gz).equals(text)).toBe(true)
    expect(packed.members).toBe(shardRuns(text).length)
    const [header] = packed.index.split('\n')
    expect(header).toBe(`${SHARD_MEMBERS_FORMAT}\t${sha256(text)}\t${packed.gz.length}\t${packed.members}`)
    // Each member is a gzip stream of its run's lines, and its line in the index has its SHA-256.
    const ends = shardRuns(text)
    const members = membersOf(packed.gz, packed.index)
    const lines = packed.index.trim().split('\n').slice(1)
    members.forEach((m, k) => {
      expect(gunzipSync(m).equals(text.subarray(k === 0 ? 0 : ends[k - 1], ends[k]))).toBe(true)
      expect(lines[k]).toBe(`${m.length}\t${sha256(m)}`)
    })
    // An empty shard is one empty member: still a gzip file.
    expect(gunzipSync(gzipShard(Buffer.alloc(0))).length).toBe(0)
  })

  it('copies the members of unchanged runs from the previous shard, and the file is the bytes gzipShard gives', () => {
    const previous = keep(mkdtempSync(path.join(root, 'copy-')), text)
    // One line in 100 changed, one removed in 250, one added after line 1,500.
    const next = shardText(3001, 'a', (i) => (i % 250 === 3 ? null : i % 100 === 50 ? 'edited' : i === 3000 ? 'new' : ''))
    const packed = gzipShardReusing(next, previous)
    expect(packed.gz.equals(gzipShard(next))).toBe(true)
    expect(gunzipSync(packed.gz).equals(next)).toBe(true)
    expect(packed.reused).toBeGreaterThan(0)
    expect(packed.reused).toBeLessThan(packed.members)
    expect(packed.damaged).toBe(0)
    // The same text again copies every member.
    const same = gzipShardReusing(text, previous)
    expect(same).toMatchObject({ reused: same.members, damaged: 0 })
    expect(same.gz.equals(readFileSync(previous.gzFile))).toBe(true)
  })

  it('compresses again a member whose bytes the disk changed, and trusts no index of another shard or format', () => {
    const dir = mkdtempSync(path.join(root, 'damage-'))
    const previous = keep(dir, text)
    const gz = readFileSync(previous.gzFile)
    const [first] = membersOf(gz, readFileSync(previous.membersFile, 'utf8'))
    // A byte inside the first member's deflate data (past its 10-byte header).
    gz[Math.floor(first!.length / 2)]! ^= 0xff
    writeFileSync(previous.gzFile, gz)
    const damaged = gzipShardReusing(text, previous)
    expect(damaged).toMatchObject({ damaged: 1, reused: damaged.members - 1 })
    expect(damaged.gz.equals(gzipShard(text))).toBe(true)

    const clean = keep(mkdtempSync(path.join(root, 'index-')), text)
    const index = readFileSync(clean.membersFile, 'utf8')
    const untrusted: [string, (s: string) => string][] = [
      ['another format', (s) => s.replace(SHARD_MEMBERS_FORMAT, 'manifest-shard-members/0')],
      ['another shard', (s) => s.replace(sha256(text), sha256('other'))],
      ['a member missing', (s) => s.split('\n').slice(0, -2).join('\n') + '\n'],
      ['a bad length', (s) => s.replace(/\n(\d+)\t/, '\nx\t')],
    ]
    for (const [what, change] of untrusted) {
      writeFileSync(clean.membersFile, change(index))
      const packed = gzipShardReusing(text, clean)
      expect(packed.reused, what).toBe(0)
      expect(packed.gz.equals(gzipShard(text)), what).toBe(true)
    }
    // A gzip file of another size than the manifest index gives, or none at all.
    writeFileSync(clean.membersFile, index)
    expect(gzipShardReusing(text, { ...clean, size: clean.size + 1 }).reused).toBe(0)
    rmSync(clean.gzFile)
    expect(gzipShardReusing(text, clean).reused).toBe(0)
  })

  it('carries the index of an unchanged shard on: linked when sound, made again when damaged, none for a gzip file of one stream', () => {
    const dir = mkdtempSync(path.join(root, 'carry-'))
    const previous = keep(dir, text)
    const fresh = gzipShardReusing(text, null).index
    const linked = path.join(dir, 'linked.members')
    expect(carryShardMembers(previous, linked)).toBe(true)
    expect(statSync(linked).ino).toBe(statSync(previous.membersFile).ino)
    // Cut short: not carried on, but made again from the text (the gzip file is gzipShard's).
    writeFileSync(previous.membersFile, fresh.slice(0, 200))
    const remade = path.join(dir, 'remade.members')
    expect(carryShardMembers(previous, remade)).toBe(true)
    expect(readFileSync(remade, 'utf8')).toBe(fresh)
    // A gzip file an older build wrote as one stream: no index describes it.
    const single = gzipSync(text, { level: 1 })
    writeFileSync(previous.gzFile, single)
    const none = path.join(dir, 'none.members')
    expect(carryShardMembers({ ...previous, size: single.length }, none)).toBe(false)
    expect(existsSync(none)).toBe(false)
  })
})

describe('shard members in a rebuild', () => {
  let first: BuiltRelease
  let second: BuiltRelease
  const log: string[] = []

  beforeAll(async () => {
    // 200 projects (about 10,000 names: some 40 a shard), edited as the build benchmark edits the large catalog.
    const data = path.join(root, 'src')
    await generateCatalog(resolveGenerateOptions({ out: data, projects: 200, seed: 'shard-members' }))
    const dist = path.join(root, 'dist')
    first = await buildRelease(data, dist, { release: resolveReleaseOptions({ snapshot: false, archive: false }) })
    mutateCatalog({ dir: data, percent: 2, seed: 'shard-members' })
    second = await buildRelease(data, dist, { release: resolveReleaseOptions({ snapshot: false, archive: false }), log: (line: string) => log.push(line) })
  }, 180_000)

  it('the seal copied members from the previous release, and every shard file is the bytes gzipShard gives its text', () => {
    const line = log.find((l) => /gzip members of its changed shards copied from the previous release/.test(l))
    expect(line, log.join('\n')).toBeDefined()
    const [, reused, total] = /; (\d+) of the (\d+) gzip members/.exec(line!)!
    expect(Number(reused)).toBeGreaterThan(0)
    expect(Number(reused)).toBeLessThan(Number(total))
    for (const built of [first, second]) {
      const index = manifestIndexSchema.parse(JSON.parse(readFileSync(path.join(built.releaseDir, indexFile(built.pointer.id)), 'utf8')))
      for (const ref of index.shards) {
        const gz = readFileSync(path.join(built.releaseDir, shardFile(ref.sha256)))
        const text = readFileSync(path.join(built.releaseDir, shardTextFile(ref.sha256)))
        expect(sha256(gunzipSync(gz)), ref.shard).toBe(ref.sha256)
        expect(gz.length, ref.shard).toBe(ref.size)
        expect(gz.equals(gzipShard(text)), ref.shard).toBe(true)
        // Its member index is kept beside it for the next build.
        expect(existsSync(path.join(built.releaseDir, shardMembersFile(ref.sha256))), ref.shard).toBe(true)
      }
    }
  })
})
