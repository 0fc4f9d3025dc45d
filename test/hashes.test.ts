/**
 * The hashes the release format is defined by, computed independently (a `createHash` object) and
 * compared with the one-shot `crypto.hash` the build uses: a name's manifest shard is the first byte
 * of the SHA-256 of the name (mirrors compute it too), a body's store name is its SHA-256, and its
 * ETag comes from that SHA-256 and its size. The build renders bytes without an ETag (`…Bytes`);
 * they are the bytes of the body the shim renders with one.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { hashFile, hashFileOffThread } from '../build/release/hash-file.ts'
import { hashBytes, listShards, shardIndexOf, shardOf } from '../build/release/manifest.ts'
import { hashBody } from '../build/release/writer.ts'
import { createBody, renderBody, renderBodyBytes, renderPageMeta, renderRawBody, renderRawBytes, renderRawListBody, renderRawListBytes } from '../build/render/body.ts'
import { contentEtag } from '../build/render/etag.ts'

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex')

describe('release hashes', () => {
  const names = ['public/api/v1/projects.json', 'public/api/v1/projects/sodium/versions/0.5.8.json', 'public/api/v1/users/Émilie.json', 'public/api/v1/search.json']

  it('puts a name in the shard named by the first byte of the SHA-256 of its UTF-8 bytes', () => {
    for (const name of names) {
      expect(shardOf(name)).toBe(sha256(Buffer.from(name, 'utf8')).slice(0, 2))
      expect(shardOf(name)).toMatch(/^[0-9a-f]{2}$/)
    }
    // Different names land in different shards: the shard depends on the name, not a constant.
    expect(new Set(names.map(shardOf)).size).toBeGreaterThan(1)
    // The recorder's numeric shard is the same shard: its index in listShards.
    for (const name of names) expect(listShards()[shardIndexOf(name)]).toBe(shardOf(name))
  })

  it('hashes bodies and texts as SHA-256 in lowercase hex', () => {
    const body = Buffer.from('{"data":{"id":"AANobbMI","name":"Sodium ✓"}}')
    expect(hashBody(body)).toBe(sha256(body))
    expect(hashBytes(body)).toBe(sha256(body))
    expect(hashBytes('some text ✓')).toBe(sha256(Buffer.from('some text ✓')))
    expect(hashBody(Buffer.alloc(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  })

  it('derives a body ETag from its SHA-256 and size', () => {
    const bytes = Buffer.from('{"data":[1,2,3]}')
    const digest = createHash('sha256').update(bytes).digest()
    expect(createBody(bytes).etag).toBe(contentEtag(digest, bytes.length))
    expect(createBody(bytes).etag).toBe(contentEtag(sha256(bytes), bytes.length))
    expect(createBody(Buffer.from('{"data":[1,2,4]}')).etag).not.toBe(createBody(bytes).etag)
  })

  it('renders the same bytes with and without an ETag', () => {
    const meta = renderPageMeta(2, 20, 45)
    const data = { id: 'x', list: ['é', 1, null] }
    expect(renderBodyBytes(data).equals(renderBody(data).bytes)).toBe(true)
    expect(renderBodyBytes(data, meta).equals(renderBody(data, meta).bytes)).toBe(true)
    expect(JSON.parse(renderBodyBytes(data, meta).toString())).toEqual({ data, meta })
    const items = ['{"a":1}', '{"b":"ü"}']
    expect(renderRawListBytes(items, meta).equals(renderRawListBody(items, meta).bytes)).toBe(true)
    expect(JSON.parse(renderRawListBytes(items).toString())).toEqual({ data: [{ a: 1 }, { b: 'ü' }] })
    expect(renderRawBytes(items[1]!).equals(renderRawBody(items[1]!).bytes)).toBe(true)
    expect(renderRawBytes(items[1]!).toString()).toBe('{"data":{"b":"ü"}}')
  })

  describe('files', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'hash-file-test-'))
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    it('hashes a file on a worker thread as hashFile does, across their 8 MB and 4 MB reads', async () => {
      // 8 MB and a bit, of varied bytes: two reads on the thread and three for hashFile, the last short; and an empty file.
      const bytes = Buffer.alloc((8 << 20) + 12_345)
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 13)) & 0xff
      const file = path.join(dir, 'large.bin')
      writeFileSync(file, bytes)
      const expected = { sha256: sha256(bytes), size: bytes.length }
      expect(await hashFileOffThread(file)).toEqual(expected)
      expect(await hashFile(file)).toEqual(expected)
      const empty = path.join(dir, 'empty.bin')
      writeFileSync(empty, '')
      expect(await hashFileOffThread(empty)).toEqual({ sha256: sha256(''), size: 0 })
      expect(await hashFile(empty)).toEqual({ sha256: sha256(''), size: 0 })
    })

    it('rejects with the reading error for a file that is not there', async () => {
      const missing = path.join(dir, 'missing.bin')
      await expect(hashFileOffThread(missing)).rejects.toThrow(/ENOENT.*missing\.bin/)
      await expect(hashFile(missing)).rejects.toThrow(/ENOENT.*missing\.bin/)
    })
  })
})
