/**
 * A rebuild's offline snapshot copies from the previous release's snapshot every body it still has
 * and every run of names whose body did not change (build/release/snapshot.ts), and must be the
 * same bytes as the snapshot of a full build of the same data. A previous snapshot that is gone or
 * whose bytes are not those its release gives is not used, and the snapshot is still right.
 */
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { readOrderLines, removeBodyOrder, writeBodyOrder, writePathOrder } from '../build/release/body-order.ts'
import { hashAhead, hashFile, recordedHash, recordHash } from '../build/release/hash-file.ts'
import { collectNameChanges } from '../build/release/name-changes.ts'
import { precedes, SNAPSHOT_HASH_RECORD, verifyPrevious, writeSnapshot } from '../build/release/snapshot.ts'
import { addSodiumVersion, buildRelease, copySampleData, editSummary, readManifestOf, type BuiltRelease } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'snapshot-reuse-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
let logs: string[] = []
let fullRuns = 0

const rebuild = (): Promise<BuiltRelease> => {
  logs = []
  return buildRelease(data, dist, { log: (l) => logs.push(l) })
}
/** The snapshot's SHA-256 from a full build of the same data into a dist of its own. */
const fullSnapshot = async (): Promise<string> => (await buildRelease(data, path.join(root, `full-${++fullRuns}`))).pointer.snapshot!.sha256

/**
 * The build log's line on what the snapshot copied: [bodies copied, bodies, names copied, names], or
 * null. The seal gives the snapshot the manifest's change list, so the names go by it.
 */
function reuse(): [number, number, number, number] | null {
  const m = logs
    .map((l) =>
      l.match(/(\d+) of (\d+) bodies and (\d+) of (\d+) names copied from the previous snapshot, the names by the change list \(checked by the SHA-256 (?:recorded when it was sealed|the build took ahead)\)$/),
    )
    .find((x) => x)
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])] : null
}
/** How the last build vouched for the previous snapshot's bytes: by the hash its build recorded, or one it took ahead itself. */
const checkedBy = (): 'recorded' | 'ahead' | null =>
  logs.some((l) => l.endsWith('(checked by the SHA-256 recorded when it was sealed)'))
    ? 'recorded'
    : logs.some((l) => l.endsWith('(checked by the SHA-256 the build took ahead)'))
      ? 'ahead'
      : null
const notReused = (): string | undefined => logs.find((l) => l.includes('the previous snapshot was not reused: '))

function snapshotFile(built: BuiltRelease): string {
  return path.join(built.releaseDir, 'public', built.pointer.snapshot!.path)
}

beforeAll(async () => {
  // Files changed within the last 2 s are read again by every build (racy): let the copy age.
  await sleep(2100)
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("a rebuild's snapshot copied from the previous one", () => {
  let live: BuiltRelease

  it('copies what did not change, inserts the rest, and is the bytes of a full build', async () => {
    const first = await rebuild()
    expect(logs.some((l) => /its catalog from the copy made during the render; no previous snapshot: \d+ bodies and \d+ names inserted$/.test(l)), logs.join('\n')).toBe(true)
    // Bodies changed (a summary), added (a version and its jar) and removed (a project and its files).
    editSummary(data, 'iris', 'Shaders, rendered fast: a summary the first release did not have.')
    addSodiumVersion(data)
    rmSync(path.join(data, 'projects', 'archipelago-survival'), { recursive: true })
    live = await rebuild()
    const counts = reuse()
    expect(counts, logs.join('\n')).not.toBeNull()
    // The first release's snapshot was not read to be hashed: its build recorded the hash when it sealed it.
    expect(checkedBy()).toBe('recorded')
    const record = JSON.parse(readFileSync(path.join(first.releaseDir, SNAPSHOT_HASH_RECORD), 'utf8'))
    expect(record).toMatchObject({ format: 1, file: path.join('public', first.pointer.snapshot!.path), sha256: first.pointer.snapshot!.sha256, size: first.pointer.snapshot!.size })
    expect(JSON.parse(readFileSync(path.join(live.releaseDir, SNAPSHOT_HASH_RECORD), 'utf8'))).toMatchObject({ sha256: live.pointer.snapshot!.sha256 })
    // The snapshot took the copy of the catalog the build made during the render: none is left.
    expect(logs.some((l) => l.includes('its catalog from the copy made during the render; '))).toBe(true)
    expect(existsSync(path.join(live.releaseDir, 'catalog.sqlite.snapshot'))).toBe(false)
    const [bodiesCopied, bodies, namesCopied, names] = counts!
    expect(bodiesCopied).toBeGreaterThan(bodies / 2)
    expect(bodiesCopied).toBeLessThan(bodies)
    expect(namesCopied).toBeGreaterThan(names / 2)
    expect(namesCopied).toBeLessThan(names)
    expect(live.pointer.snapshot!.sha256).not.toBe(first.pointer.snapshot!.sha256)
    expect(live.pointer.snapshot!.sha256).toBe(await fullSnapshot())

    // Every served name, with its body, and nothing else: the removed project's pages are gone.
    const api = [...readManifestOf(live.releaseDir)].filter(([name]) => name.startsWith('public/api/'))
    expect(names).toBe(api.length)
    const db = await openDb(snapshotFile(live), { readonly: true })
    try {
      const rows = await db.all<{ path: string; sha256: string; size: number }>(`SELECT path, sha256, length(body) AS size FROM static_paths JOIN static_bodies USING (sha256) ORDER BY path`)
      expect(rows.map((r) => [r.path, { sha256: r.sha256, size: r.size }])).toEqual(api.sort(([a], [b]) => (a < b ? -1 : 1)))
      expect(rows.some((r) => r.path.includes('archipelago-survival'))).toBe(false)
      const [{ n }] = (await db.all<{ n: number }>(`SELECT count(*) AS n FROM static_bodies`)) as [{ n: number }]
      expect(n).toBe(bodies)
    } finally {
      await db.close()
    }
  })

  it('hashes the previous snapshot ahead when stat says something wrote it since its hash was recorded', async () => {
    // The times set anew (the bytes untouched): the record no longer vouches for the file, which is hashed and taken.
    const file = snapshotFile(live)
    const { atime, mtime } = statSync(file)
    utimesSync(file, atime, mtime)
    editSummary(data, 'sodium', 'A summary edited once the snapshot was touched.')
    live = await rebuild()
    expect(reuse(), logs.join('\n')).not.toBeNull()
    expect(checkedBy()).toBe('ahead')
    expect(live.pointer.snapshot!.sha256).toBe(await fullSnapshot())
  })

  it('is the same file again when nothing changed', async () => {
    const again = await rebuild()
    const [bodiesCopied, bodies, namesCopied, names] = reuse()!
    expect([bodiesCopied, namesCopied]).toEqual([bodies, names])
    expect(again.pointer.snapshot).toEqual({ ...live.pointer.snapshot!, path: again.pointer.snapshot!.path })
    live = again
  })

  it('does not copy from a previous snapshot whose bytes are not those its release gives', async () => {
    // One byte of a body inside the live snapshot, flipped in place (the size stays): as bit rot would.
    const file = snapshotFile(live)
    const bytes = readFileSync(file)
    const at = bytes.indexOf('Shaders, rendered fast')
    expect(at).toBeGreaterThan(0)
    const fd = openSync(file, 'r+')
    writeSync(fd, Buffer.from('s'), 0, 1, at)
    closeSync(fd)
    editSummary(data, 'sodium', 'A summary edited once the snapshot rotted.')
    live = await rebuild()
    expect(reuse()).toBeNull()
    // Refused at once by the hash taken ahead; the second attempt, from the bodies alone, copies the catalog itself.
    expect(notReused(), logs.join('\n')).toMatch(/its catalog copied in the seal; the previous snapshot was not reused: .* is not the file its release gives \(SHA-256 [0-9a-f]{64}\)$/)
    expect(live.pointer.snapshot!.sha256).toBe(await fullSnapshot())
    expect(readFileSync(snapshotFile(live)).indexOf('Shaders, rendered fast')).toBeGreaterThan(0)
  })

  it('inserts every body when the previous snapshot is gone', async () => {
    rmSync(snapshotFile(live))
    editSummary(data, 'sodium', 'A summary edited once the snapshot was gone.')
    const built = await rebuild()
    expect(notReused(), logs.join('\n')).toMatch(/no snapshot at .*snapshot-\d{8}\.sqlite$/)
    expect(built.pointer.snapshot!.sha256).toBe(await fullSnapshot())
  })
})

describe('the names copied by the change list', () => {
  it('gives the bytes of a full build, never sorts the path order, and falls back to it when the list and the previous snapshot do not add up', async () => {
    const names = path.join(root, 'by-changes')
    const own = copySampleData(names)
    const first = await buildRelease(own, path.join(names, 'dist'))
    editSummary(own, 'iris', 'Shaders, rendered fast: a summary the first release did not have.')
    addSodiumVersion(own)
    rmSync(path.join(own, 'projects', 'archipelago-survival'), { recursive: true })
    const second = await buildRelease(own, path.join(names, 'dist'))
    // The change list as the seal's manifest finds it: every API name added, changed or removed.
    const before = readManifestOf(first.releaseDir)
    const after = readManifestOf(second.releaseDir)
    const changes = collectNameChanges()
    for (const [name, entry] of after) {
      const was = before.get(name)
      if (!was) changes.add({ kind: 'A', entry: { path: name, ...entry } })
      else if (was.sha256 !== entry.sha256) changes.add({ kind: 'C', entry: { path: name, ...entry } })
    }
    for (const name of before.keys()) if (!after.has(name)) changes.add({ kind: 'R', path: name })
    changes.add({ kind: 'A', entry: { path: 'public/mirror/not-an-api-name.json', sha256: '0'.repeat(64), size: 1 } })
    const list = changes.write(path.join(names, 'changes.tsv'))!
    const lines = readFileSync(list, 'utf8').trim().split('\n')
    expect(lines.some((l) => !l.includes('\t') && l.includes('archipelago-survival'))).toBe(true)
    expect(lines.some((l) => l.includes('not-an-api-name'))).toBe(false)
    expect([...lines].sort((a, b) => (precedes(a, b) ? -1 : 1))).toEqual(lines)

    const bodyOrder = await writeBodyOrder(second.releaseDir)
    const pathOrder = await writePathOrder(second.releaseDir)
    let sorts = 0
    const sortPathOrder = async (): Promise<string> => (sorts++, pathOrder)
    const previous = { snapshot: snapshotFile(first), expected: { sha256: first.pointer.snapshot!.sha256, size: first.pointer.snapshot!.size } }
    const write = (file: string, nameChanges: string | null) =>
      writeSnapshot(second.releaseDir, bodyOrder, sortPathOrder, path.join(names, file), second.pointer.catalog.sha256, { previous, nameChanges })
    try {
      const byList = await write('by-list.sqlite', list)
      expect(byList.sha256).toBe(second.pointer.snapshot!.sha256)
      expect(byList).toMatchObject({ namesByChanges: true, paths: [...after.keys()].filter((n) => n.startsWith('public/api/')).length })
      expect(byList.reusedPaths).toBe(byList.paths - lines.filter((l) => l.includes('\t')).length)
      expect(byList.note).toMatch(/names copied from the previous snapshot, the names by the change list \(checked by its SHA-256, taken beside the copy\)$/)
      expect(sorts).toBe(0)

      // Without a list, the path order is asked for and merged with the previous snapshot's keys: the same bytes.
      const byWalk = await write('by-walk.sqlite', null)
      expect(byWalk).toMatchObject({ sha256: second.pointer.snapshot!.sha256, namesByChanges: false, reusedPaths: byList.reusedPaths })
      expect(sorts).toBe(1)

      // A list that leaves out an added name does not add up with the previous snapshot: written again from the bodies, right.
      const added = lines.find((l) => l.includes('\t') && !before.has(l.slice(0, l.indexOf('\t'))))!
      const short = path.join(names, 'short.tsv')
      writeFileSync(short, lines.filter((l) => l !== added).map((l) => `${l}\n`).join(''))
      const fallback = await write('fallback.sqlite', short)
      expect(fallback.sha256).toBe(second.pointer.snapshot!.sha256)
      expect(fallback.notReused).toBe(`${previous.snapshot} and the change list give ${byList.paths - 1} names, the release ${byList.paths}`)
      expect(fallback.reusedPaths).toBe(0)
      expect(existsSync(path.join(names, 'fallback.sqlite.tmp'))).toBe(false)

      // A list that cannot be had fails the snapshot with why, and leaves no file behind.
      const failing = writeSnapshot(second.releaseDir, bodyOrder, sortPathOrder, path.join(names, 'failed.sqlite'), second.pointer.catalog.sha256, {
        previous,
        nameChanges: Promise.reject(new Error('the manifest could not be written')),
      })
      await expect(failing).rejects.toThrow('the manifest could not be written')
      expect(existsSync(path.join(names, 'failed.sqlite'))).toBe(false)
      expect(existsSync(path.join(names, 'failed.sqlite.tmp'))).toBe(false)
    } finally {
      removeBodyOrder(bodyOrder)
      removeBodyOrder(pathOrder)
    }
  })

  it('is dropped past its limit, telling the seal at once so the path order can be sorted, and keeps only API names', () => {
    let overflows = 0
    const changes = collectNameChanges(() => overflows++, 2)
    const entry = (name: string) => ({ kind: 'A' as const, entry: { path: name, sha256: '1'.repeat(64), size: 1 } })
    changes.add(entry('public/mirror/changes/2.tsv.gz'))
    changes.add(entry('public/api/v1/projects/b.json'))
    changes.add({ kind: 'R', path: 'public/api/v1/projects/a.json' })
    expect(overflows).toBe(0)
    const file = path.join(root, 'limit.tsv')
    expect(changes.write(file)).toBe(file)
    expect(readFileSync(file, 'utf8')).toBe(`public/api/v1/projects/a.json\npublic/api/v1/projects/b.json\t${'1'.repeat(64)}\n`)
    changes.add(entry('public/api/v1/projects/c.json'))
    changes.add(entry('public/api/v1/projects/d.json'))
    expect(overflows).toBe(1)
    expect(changes.write(file)).toBeNull()
  })
})

describe("the previous snapshot's SHA-256 taken ahead", () => {
  const file = path.join(root, 'ahead.bin')
  const write = (text: string): void => writeFileSync(file, text.repeat(50_000))

  it('is used while stat says nothing wrote the file since, and the file is hashed again once something did', async () => {
    write('a published snapshot ')
    const expected = await hashFile(file)
    const hashed = await hashAhead(file)
    expect(hashed).toMatchObject({ ...expected, file })
    const untouched = verifyPrevious({ snapshot: file, expected, hashed })
    expect(untouched.ahead).toBe(true)
    expect(await untouched.verdict).toBeNull()
    // The hash given is the one judged (not the file read again): a wrong one refuses the file.
    const wrong = verifyPrevious({ snapshot: file, expected, hashed: { ...hashed!, sha256: 'f'.repeat(64) } })
    expect(wrong.ahead).toBe(true)
    expect(await wrong.verdict).toBe(`${file} is not the file its release gives (SHA-256 ${'f'.repeat(64)})`)
    // Another file's hash is not this one's.
    expect(verifyPrevious({ snapshot: file, expected, hashed: { ...hashed!, file: `${file}.other` } }).ahead).toBe(false)

    // One byte changed in place, the size kept: hashed again, and refused. (After a pause: file
    // times are taken from a clock that ticks every few milliseconds.)
    await sleep(50)
    const fd = openSync(file, 'r+')
    writeSync(fd, Buffer.from('A'), 0, 1, 0)
    closeSync(fd)
    const rotted = verifyPrevious({ snapshot: file, expected, hashed })
    expect(rotted.ahead).toBe(false)
    expect(await rotted.verdict).toBe(`${file} is not the file its release gives (SHA-256 ${(await hashFile(file)).sha256})`)
    // The same bytes written back: the identity stays changed, and the file, hashed again, is taken.
    write('a published snapshot ')
    const restored = verifyPrevious({ snapshot: file, expected, hashed })
    expect(restored.ahead).toBe(false)
    expect(await restored.verdict).toBeNull()
  })

  it('gives null for a file it cannot read', async () => {
    expect(await hashAhead(path.join(root, 'no-such-snapshot.sqlite'))).toBeNull()
  })

  it('is taken from the record its build left while stat gives the file the identity recorded, and never otherwise', async () => {
    const dir = mkdtempSync(path.join(root, 'record-'))
    const sealed = path.join(dir, 'public', 'snapshot.bin')
    mkdirSync(path.dirname(sealed))
    writeFileSync(sealed, 'a sealed snapshot '.repeat(1000))
    const expected = await hashFile(sealed)
    const record = path.join(dir, SNAPSHOT_HASH_RECORD)
    expect(recordedHash(record, sealed, expected)).toBeNull()
    recordHash(record, sealed, expected)
    expect(JSON.parse(readFileSync(record, 'utf8'))).toMatchObject({ format: 1, file: path.join('public', 'snapshot.bin'), ...expected })
    const found = recordedHash(record, sealed, expected)
    expect(found).toMatchObject({ ...expected, file: sealed, recorded: true })
    // verifyPrevious judges by it without reading the file.
    const check = verifyPrevious({ snapshot: sealed, expected, hashed: found })
    expect(check.ahead).toBe(true)
    expect(await check.verdict).toBeNull()
    // Not for a hash or size other than the release gives, nor for another file.
    expect(recordedHash(record, sealed, { ...expected, sha256: 'e'.repeat(64) })).toBeNull()
    expect(recordedHash(record, sealed, { ...expected, size: expected.size + 1 })).toBeNull()
    const other = path.join(dir, 'public', 'other.bin')
    writeFileSync(other, readFileSync(sealed))
    expect(recordedHash(record, other, expected)).toBeNull()
    // Not from a record that is not one.
    writeFileSync(`${record}.bad`, '{"format":1,"file":"public/snapshot.bin"}')
    expect(recordedHash(`${record}.bad`, sealed, expected)).toBeNull()
    writeFileSync(`${record}.bad`, 'not json')
    expect(recordedHash(`${record}.bad`, sealed, expected)).toBeNull()
    // Not once anything wrote the file: the same bytes written again, or only its times set.
    await sleep(50)
    writeFileSync(sealed, readFileSync(other))
    expect(recordedHash(record, sealed, expected)).toBeNull()
    recordHash(record, sealed, expected)
    expect(recordedHash(record, sealed, expected)).not.toBeNull()
    await sleep(50)
    const { atime, mtime } = statSync(sealed)
    utimesSync(sealed, atime, mtime)
    expect(recordedHash(record, sealed, expected)).toBeNull()
  })
})

describe('readOrderLines', () => {
  it('gives every API line of a list of several megabytes once, in order, whatever falls on a read boundary', async () => {
    const file = path.join(root, 'order.tsv')
    const lines: string[] = []
    // Lines of many lengths (and a multi-byte name), so the 1 MB reads end inside lines and inside characters.
    for (let i = 0; i < 40_000; i++) lines.push(`public/api/v1/${'x'.repeat(i % 97)}é${i}.json\t${String(i).padStart(64, '0')}\t${i}`)
    const text = [lines.slice(0, 10), ['public/mirror/catalog.sqlite\t' + 'f'.repeat(64) + '\t1'], lines.slice(10)].flat().join('\n')
    // The last line without its line end.
    writeFileSync(file, text)
    expect(statSync(file).size).toBeGreaterThan(3 << 20)
    const read: string[] = []
    let batches = 0
    for await (const batch of readOrderLines(file)) {
      read.push(...batch.lines)
      batches++
      expect(batch.wide).toBe(false)
    }
    expect(batches).toBeGreaterThan(3)
    expect(read).toEqual(lines)
    writeFileSync(file, `public/api/v1/z\u{1F600}.json\t${'0'.repeat(64)}\t1\n`)
    const wide = []
    for await (const batch of readOrderLines(file)) wide.push(batch)
    expect(wide).toEqual([{ lines: [`public/api/v1/z\u{1F600}.json\t${'0'.repeat(64)}\t1`], wide: true }])
  })
})

describe('precedes', () => {
  it('orders names as SQLite and sort in the C locale do: by their UTF-8 bytes', () => {
    const names = ['a', 'ab', 'b', 'B', '', 'é', 'z\u{1F600}', 'z\uFF5E', 'z\uE000', 'zz', 'a/b', 'a-b', 'a.b']
    const byBytes = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))
    for (const a of names) for (const b of names) expect(precedes(a, b), `${a} < ${b}`).toBe(byBytes.indexOf(a) < byBytes.indexOf(b))
    // Where UTF-16 and UTF-8 disagree: U+1F600 is a surrogate pair (below U+E000 in UTF-16), above it in UTF-8.
    expect('z\u{1F600}' < 'z\uE000').toBe(true)
    expect(precedes('z\u{1F600}', 'z\uE000')).toBe(false)
  })
})
