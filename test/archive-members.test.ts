/**
 * The archive's gzip members (build/release/archive.ts): one per range of the body order, so a
 * rebuild copies the members its change left alone from the previous release's archive. The copied
 * archive must be the same bytes as one written whole, unpack to the same tree, and a member index
 * that does not describe the previous archive must not be trusted.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ARCHIVE_MEMBERS, describeReuse, rangeDigits, writeArchive, type PreviousArchive } from '../build/release/archive.ts'
import { removeBodyOrder, writeBodyOrder } from '../build/release/body-order.ts'
import { writeArchiveInChild } from '../build/release/seal-child.ts'
import { hashBytes } from '../build/release/manifest.ts'
import { generateCatalog, resolveGenerateOptions } from '../build/generate.ts'
import { mutateCatalog } from '../build/generate/mutate.ts'
import { buildRelease, type BuiltRelease } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'archive-members-'))
const sha256Of = (file: string): string => hashBytes(readFileSync(file))
let first: BuiltRelease
let second: BuiltRelease
let log: string[]
let order: string

beforeAll(async () => {
  // A generated catalog of 400 projects (about 5,800 bodies: 256 ranges), edited as the build
  // benchmark edits the large one (1% of the projects).
  const data = path.join(root, 'src')
  await generateCatalog(resolveGenerateOptions({ out: data, projects: 400, seed: 'archive-members' }))
  const dist = path.join(root, 'dist')
  first = await buildRelease(data, dist)
  mutateCatalog({ dir: data, percent: 1, seed: 'archive-members' })
  log = []
  second = await buildRelease(data, dist, { log: (line: string) => log.push(line) })
  order = await writeBodyOrder(second.releaseDir)
}, 180_000)

afterAll(() => {
  removeBodyOrder(order)
  rmSync(root, { recursive: true, force: true })
})

const previousOf = (built: BuiltRelease): PreviousArchive => ({
  archive: path.join(built.releaseDir, 'public', built.pointer.archive!.path),
  members: path.join(built.releaseDir, ARCHIVE_MEMBERS),
  expected: { sha256: built.pointer.archive!.sha256, size: built.pointer.archive!.size },
})

/** The member index of a release: its header fields and its lines. */
function membersOf(releaseDir: string): { header: string[]; lines: string[][] } {
  const [header, ...lines] = readFileSync(path.join(releaseDir, ARCHIVE_MEMBERS), 'utf8').trim().split('\n')
  return { header: header!.split('\t'), lines: lines.map((l) => l.split('\t')) }
}

describe('archive members', () => {
  it('the rebuild copied most members from the previous archive and published the bytes an archive written whole has', async () => {
    const line = log.find((l) => /members copied from the previous archive/.test(l))
    expect(line, log.join('\n')).toBeDefined()
    const [, reused, members] = /(\d+) of (\d+) members copied/.exec(line!)!.map(Number)
    // The change reaches a few dozen bodies; every other range is copied.
    expect(reused).toBeGreaterThan(0)
    expect(reused).toBeLessThan(members!)
    expect(members).toBe(membersOf(second.releaseDir).lines.length)

    const whole = path.join(root, 'whole.tar.gz')
    const written = await writeArchive(second.releaseDir, order, whole)
    expect(written).toMatchObject({ sha256: second.pointer.archive!.sha256, size: second.pointer.archive!.size, reused: 0, members })
    expect(sha256Of(whole)).toBe(second.pointer.archive!.sha256)
    expect(sha256Of(path.join(second.releaseDir, 'public', second.pointer.archive!.path))).toBe(second.pointer.archive!.sha256)
  })

  it('widens its ranges with the count of bodies: about 16 or more a member, at most four hex digits', () => {
    expect([0, 1, 255, 256, 4095, 4096, 65_535, 65_536, 1_048_576, 1_419_768, 1e9].map(rangeDigits)).toEqual([0, 0, 0, 1, 1, 2, 2, 3, 4, 4, 4])
    expect(second.pointer.bodies).toBeGreaterThan(4096)
    expect(second.pointer.bodies).toBeLessThan(65_536)
  })

  it('indexes every member: one per range of two hex digits here, in order, end to end, each a gzip of its entries', () => {
    const archive = readFileSync(path.join(second.releaseDir, 'public', second.pointer.archive!.path))
    const { header, lines } = membersOf(second.releaseDir)
    expect(header).toEqual(['tar.gz-members/2 range-digits=2 gzip-level=1', second.pointer.archive!.sha256, String(second.pointer.archive!.size)])
    const prefixes = lines.map((l) => l[0]!)
    expect(prefixes.every((p) => /^[0-9a-f]{2}$/.test(p))).toBe(true)
    // Every range has bodies at this size.
    expect(prefixes).toHaveLength(256)
    expect([...prefixes].sort()).toEqual(prefixes)
    expect(new Set(prefixes).size).toBe(prefixes.length)
    let offset = 0
    for (const [prefix, , at, length, sha256] of lines) {
      expect(Number(at), prefix).toBe(offset)
      const member = archive.subarray(offset, offset + Number(length))
      expect(hashBytes(member), prefix).toBe(sha256)
      expect(member.subarray(0, 2).toString('hex'), prefix).toBe('1f8b')
      // Each member alone is whole tar entries of its range: a multiple of 512 bytes, starting with a header block.
      const tar = gunzipSync(member)
      expect(tar.length % 512, prefix).toBe(0)
      expect(tar.subarray(257, 262).toString(), prefix).toBe('ustar')
      offset += Number(length)
    }
    // What follows the last indexed member is the end-of-archive member: 1024 zero bytes.
    expect(gunzipSync(archive.subarray(offset))).toEqual(Buffer.alloc(1024))
    // tar reads the members as one stream: every API name of the release, bodies as the manifest gives them.
    const listing = execFileSync('tar', ['-tzf', path.join(second.releaseDir, 'public', second.pointer.archive!.path)], { maxBuffer: 256 << 20 }).toString().trim().split('\n')
    const names = readFileSync(path.join(second.releaseDir, 'manifest.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t')[0]!).filter((n) => n.startsWith('public/api/'))
    expect([...listing].sort()).toEqual([...names].sort())
  })

  it('unpacks into the release tree', () => {
    const out = path.join(root, 'unpacked')
    execFileSync('mkdir', ['-p', out])
    execFileSync('tar', ['-xzf', path.join(second.releaseDir, 'public', second.pointer.archive!.path), '-C', out])
    const manifest = readFileSync(path.join(second.releaseDir, 'manifest.tsv'), 'utf8').trim().split('\n').map((l) => l.split('\t') as [string, string])
    for (const [name, sha256] of manifest.filter(([n]) => n.startsWith('public/api/'))) expect(sha256Of(path.join(out, name)), name).toBe(sha256)
  })

  it('copies members in the worker process too, to the same bytes', async () => {
    const target = path.join(root, 'child.tar.gz')
    const usage = await writeArchiveInChild(second.releaseDir, order, target, null, previousOf(first))
    expect(usage.written).toEqual({ sha256: second.pointer.archive!.sha256, size: statSync(target).size })
    expect(usage.note).toMatch(/^[1-9]\d* of \d+ members copied from the previous archive$/)
  })

  it('copies every member from an archive of the same tree, and none from one whose index does not describe it', async () => {
    const same = await writeArchive(second.releaseDir, order, path.join(root, 'same.tar.gz'), null, previousOf(second))
    expect(same).toMatchObject({ sha256: second.pointer.archive!.sha256, reused: membersOf(second.releaseDir).lines.length })
    expect(same.notReused).toBeUndefined()

    // An index whose header names another archive, or whose lines point past the end, is not used; the bytes are the same.
    const index = readFileSync(path.join(first.releaseDir, ARCHIVE_MEMBERS), 'utf8')
    const cases: [string, string, RegExp][] = [
      ['other.tsv', index.replace(first.pointer.archive!.sha256, 'f'.repeat(64)), /describes another archive/],
      ['format.tsv', index.replace(/^[^\t]+/, 'tar.gz-members/2 range-digits=3 gzip-level=1'), /another format or range width/],
      // The last member's length made to run past the end of the archive.
      ['bad.tsv', index.replace(/\t\d+(\t[0-9a-f]{64}\n)$/, '\t99999999999$1'), /bad line/],
      // A line without the member's SHA-256 (as an index of format 1 had).
      ['short.tsv', index.replace(/\t[0-9a-f]{64}\n$/, '\n'), /bad line/],
    ]
    for (const [file, text, reason] of cases) {
      writeFileSync(path.join(root, file), text)
      const w = await writeArchive(second.releaseDir, order, path.join(root, `from-${file}.tar.gz`), null, { ...previousOf(first), members: path.join(root, file) })
      expect(w.notReused, file).toMatch(reason)
      expect(w).toMatchObject({ sha256: second.pointer.archive!.sha256, reused: 0 })
      // The width a previous index names is only a guess (format.tsv's is 3): the bodies counted as it writes decide, and the index written says so.
      expect(membersOf(second.releaseDir).header, file).toEqual(['tar.gz-members/2 range-digits=2 gzip-level=1', second.pointer.archive!.sha256, String(second.pointer.archive!.size)])
    }
    // Bytes of the previous archive changed on disk since (its index and size still right): that
    // member is compressed again, the others copied, the same bytes as ever.
    const damagedArchive = path.join(root, 'damaged.tar.gz')
    const bytes = readFileSync(previousOf(first).archive)
    const [, , at, length] = membersOf(first.releaseDir).lines[7]!
    bytes[Number(at) + Math.floor(Number(length) / 2)]! ^= 0xff
    writeFileSync(damagedArchive, bytes)
    const repaired = await writeArchive(second.releaseDir, order, path.join(root, 'repaired.tar.gz'), null, { ...previousOf(first), archive: damagedArchive })
    expect(repaired).toMatchObject({ sha256: second.pointer.archive!.sha256, damaged: 1 })
    expect(describeReuse(repaired)).toMatch(/^\d+ of 256 members copied from the previous archive \(1 whose bytes no longer matched its index compressed again\)$/)

    const missing = await writeArchive(second.releaseDir, order, path.join(root, 'missing.tar.gz'), null, { ...previousOf(first), members: path.join(root, 'none.tsv') })
    expect(missing.notReused).toMatch(/no member index/)
    expect(missing.sha256).toBe(second.pointer.archive!.sha256)
  })
})
