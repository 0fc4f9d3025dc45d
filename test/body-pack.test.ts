/**
 * The body pack (issue 7): the snapshot and the archive read the bodies from the one file the
 * writer appended them to, not from the tree, and give the same bytes as from the tree; the reader
 * names a missing body; the build leaves no pack behind.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { writeArchive } from '../build/release/archive.ts'
import { writeArchiveInChild } from '../build/release/seal-child.ts'
import { removeBodyOrder, writeBodyOrder, writePathOrder } from '../build/release/body-order.ts'
import { createBodyPackWriter, hasBodyPack, openBodyReader, removeBodyPack, sortBodyPack } from '../build/release/body-pack.ts'
import { hashBytes } from '../build/release/manifest.ts'
import { snapshotSchema, writeSnapshot } from '../build/release/snapshot.ts'
import { storeFile } from '../build/release/tree.ts'
import { openDb } from '../build/db/sqlite.ts'
import { createWritePool } from '../build/release/write-pool.ts'
import { createReleaseWriter } from '../build/release/writer.ts'
import { buildRelease, copySampleData } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'body-pack-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Bodies of several sizes (one of 5 MB, past a flush), some repeated under other names. */
const body = (k: number): Buffer => Buffer.from(JSON.stringify({ data: { k, pad: 'y'.repeat(k === 7 ? 5 << 20 : (k * 37) % 900) } }))
const bodies = Array.from({ length: 3000 }, (_, i) => body(i % 2500))
const names = (i: number): string[] => [`public/api/v1/p/${i}.json`, `public/api/v1/q/${i % 40}/${i}.json`]

describe('body pack', () => {
  it('reads every body back in SHA-256 order, once per body, and names one that is missing', async () => {
    const dir = mkdtempSync(path.join(root, 'reader-'))
    const pack = createBodyPackWriter(dir)
    for (const bytes of bodies) pack.append(hashBytes(bytes), bytes)
    pack.finish()
    const files = await sortBodyPack(dir)
    // One line per distinct body: 2,500 (the repeats are in the pack twice, in the sorted index once).
    expect(readFileSync(files.sortedIndex, 'utf8').trim().split('\n')).toHaveLength(2500)
    const byHash = new Map(bodies.map((b) => [hashBytes(b), b]))
    const reader = openBodyReader(dir, files)
    for (const sha256 of [...byHash.keys()].sort()) expect((await reader.read(`x/${sha256}`, sha256)).equals(byHash.get(sha256)!), sha256).toBe(true)
    await reader.close()
    // Out of order (or absent): the reader cannot go back, and says which body and name.
    const again = openBodyReader(dir, files)
    const sorted = [...byHash.keys()].sort()
    await again.read('a', sorted[10]!)
    await expect(again.read('public/api/v1/early.json', sorted[3]!)).rejects.toThrow(
      `body pack: no body ${sorted[3]} (for public/api/v1/early.json) in the pack, the previous snapshot (none) or the content store (none), or the bodies were not asked in SHA-256 order`,
    )
    await again.close()
    removeBodyPack(dir)
    expect(readdirSync(dir)).toEqual([])
  })

  it('reads a body left out of the pack from the previous snapshot, else the content store, each checked against its SHA-256', async () => {
    const dir = mkdtempSync(path.join(root, 'elsewhere-'))
    const distinct = [...new Map(bodies.map((b) => [hashBytes(b), b])).entries()].sort(([a], [b]) => (a < b ? -1 : 1))
    // Every third body in the pack; of the others, the snapshot has those at an even index, the store the rest (and one rotten in the snapshot).
    const pack = createBodyPackWriter(dir)
    for (const [i, [sha256, bytes]] of distinct.entries()) if (i % 3 === 0) pack.append(sha256, bytes)
    pack.finish()
    const snapshotFile = path.join(dir, 'previous.sqlite')
    const db = await openDb(snapshotFile)
    await db.exec(snapshotSchema)
    for (const [i, [sha256, bytes]] of distinct.entries()) {
      // One body the disk changed in the snapshot: the store's copy is used instead.
      if (i % 2 === 0) await db.run(`INSERT INTO static_bodies (sha256, body) VALUES (?, ?)`, [sha256, i === 4 ? Buffer.from('{"data":"rot"}') : bytes])
    }
    await db.close()
    const store = path.join(dir, 'store')
    for (const [i, [sha256, bytes]] of distinct.entries()) {
      if (i % 2 === 0 && i !== 4) continue
      mkdirSync(path.dirname(storeFile(store, sha256)), { recursive: true })
      writeFileSync(storeFile(store, sha256), bytes)
    }
    const files = { ...(await sortBodyPack(dir)), elsewhere: { snapshot: snapshotFile, store } }
    const reader = openBodyReader(dir, files)
    for (const [sha256, bytes] of distinct) expect((await reader.read(`x/${sha256}`, sha256)).equals(bytes), sha256).toBe(true)
    await reader.close()
    // Gone from the store and rotten in the snapshot: named, with where it was looked for.
    const [missing] = distinct[4]!
    rmSync(storeFile(store, missing))
    const again = openBodyReader(dir, files)
    await expect(again.read('public/api/v1/v/four.json', missing)).rejects.toThrow(`body pack: no body ${missing} (for public/api/v1/v/four.json) in the pack, the previous snapshot (${snapshotFile}) or the content store (${store})`)
    await again.close()
    // A snapshot SQLite cannot open is passed over for the store.
    const third = openBodyReader(dir, { ...files, elsewhere: { snapshot: path.join(dir, 'gone.sqlite'), store } })
    const [shaOne, bytesOne] = distinct[1]!
    expect((await third.read('x', shaOne)).equals(bytesOne)).toBe(true)
    await third.close()
  })

  it('is what the snapshot and the archive read: the same bytes as from the tree, with the tree gone', async () => {
    for (const pool of [false, true]) {
      const dir = mkdtempSync(path.join(root, `writer-${pool}-`))
      if (pool) {
        const sink = createWritePool(dir, () => {}, null, { packBodies: true })
        for (const [i, bytes] of bodies.entries()) sink.write(names(i), bytes)
        await sink.finish()
        await sink.close()
      } else {
        const writer = createReleaseWriter(dir, () => {}, null, { packBodies: true })
        for (const [i, bytes] of bodies.entries()) writer.write(names(i), bytes)
        await writer.finish()
      }
      expect(hasBodyPack(dir)).toBe(true)
      const order = await writeBodyOrder(dir)
      const pathOrder = await writePathOrder(dir)
      const files = await sortBodyPack(dir)
      // From the tree (no pack) first, the reference.
      await writeArchive(dir, order, path.join(dir, 'tree.tar.gz'))
      const catalog = path.join(dir, 'catalog.sqlite')
      await buildEmptyCatalog(catalog)
      await writeSnapshot(dir, order, pathOrder, path.join(dir, 'tree.sqlite'), 'c'.repeat(64))
      // Then with every first name of the tree removed: only the pack has those bodies now.
      for (const i of bodies.keys()) unlinkSync(path.join(dir, names(i)[0]!))
      await expect(writeArchive(dir, order, path.join(dir, 'fails.tar.gz'))).rejects.toThrow(/ENOENT/)
      await writeArchive(dir, order, path.join(dir, 'pack.tar.gz'), files)
      await writeArchiveInChild(dir, order, path.join(dir, 'child.tar.gz'), files)
      await writeSnapshot(dir, order, pathOrder, path.join(dir, 'pack.sqlite'), 'c'.repeat(64), { pack: files })
      const sha = (name: string): string => hashBytes(readFileSync(path.join(dir, name)))
      expect(sha('pack.tar.gz'), `pool ${pool}`).toBe(sha('tree.tar.gz'))
      expect(sha('child.tar.gz'), `pool ${pool}`).toBe(sha('tree.tar.gz'))
      expect(sha('pack.sqlite'), `pool ${pool}`).toBe(sha('tree.sqlite'))
      removeBodyOrder(order)
      removeBodyOrder(pathOrder)
    }
  })

  it('is left out of the published release; a writer not asked for one writes none', async () => {
    const data = copySampleData(path.join(root, 'build'))
    const built = await buildRelease(data, path.join(root, 'build/dist'))
    expect(readdirSync(built.releaseDir).filter((n) => n.startsWith('.bodies'))).toEqual([])
    expect(built.pointer.snapshot).not.toBeNull()
    expect(built.pointer.archive).not.toBeNull()
    // The build asks for a pack only when it writes a snapshot or an archive (build/index.ts).
    const dir = mkdtempSync(path.join(root, 'nopack-'))
    const writer = createReleaseWriter(dir, () => {}, null, { packBodies: false })
    writer.write(names(0), bodies[0]!)
    await writer.finish()
    expect(existsSync(path.join(dir, '.bodies.pack'))).toBe(false)
    expect(hasBodyPack(dir)).toBe(false)
  })
})

/** A minimal catalog file for writeSnapshot to copy (it only needs a SQLite database). */
async function buildEmptyCatalog(file: string): Promise<void> {
  const { openDb } = await import('../build/db/sqlite.ts')
  const db = await openDb(file)
  await db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)`)
  await db.close()
}
