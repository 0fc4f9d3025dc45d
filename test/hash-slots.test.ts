/**
 * The static cache's table of single hash lookups (shim/hash-slots.ts), on its own against a Map,
 * and inside the cache: a bare hash is found there exactly while the cache holds it.
 */
import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createRandom } from '../bench/zipf.ts'
import { createHashSlots, HASH_SLOT_BYTES } from '../shim/hash-slots.ts'
import { createStaticCache, ENTRY_OVERHEAD_BYTES } from '../shim/static-cache.ts'

/** A pool of keys: SHA-1 and SHA-256 hex, with near twins (the same but the last digit; a SHA-256 that starts with a SHA-1 of the pool). */
function keyPool(count: number): string[] {
  const keys: string[] = []
  for (let i = 0; keys.length < count; i++) {
    const sha1 = createHash('sha1').update(`k${i}`).digest('hex')
    const sha256 = createHash('sha256').update(`k${i}`).digest('hex')
    const last = (hex: string): string => `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`
    keys.push(sha1, sha256, last(sha1), last(sha256), `${sha1}${sha256.slice(40)}`)
  }
  return keys.slice(0, count)
}

describe('hash slots', () => {
  it('find what a Map would through thousands of seeded sets, deletes, growths and clears, at up to half full', () => {
    for (const seed of [1, 2, 3, 4]) {
      const random = createRandom(seed)
      // 48 keys in slots starting at 2: runs of taken slots that wrap around the end, deletions in them.
      const keys = keyPool(48)
      const slots = createHashSlots<number>(2)
      const model = new Map<string, number>()
      for (let op = 0; op < 6_000; op++) {
        const key = keys[Math.floor(random() * keys.length)]!
        const roll = random()
        if (roll < 0.5) {
          expect(slots.set(key, op)).toBe(true)
          model.set(key, op)
        } else if (roll < 0.995) {
          expect(slots.delete(key)).toBe(model.delete(key))
        } else {
          slots.clear()
          model.clear()
        }
        expect(slots.size).toBe(model.size)
        if (op % 7 === 0) for (const k of keys) expect(slots.get(k), `seed ${seed}, op ${op}, ${k}`).toBe(model.get(k))
      }
      expect(slots.bytes).toBeLessThanOrEqual(128 * HASH_SLOT_BYTES)
    }
  })

  it('keep no key that is not a lowercase hex SHA-1 or SHA-256, and tell get() so with null', () => {
    const slots = createHashSlots<string>()
    const sha1 = 'ab'.repeat(20)
    const sha256 = '0f'.repeat(32)
    expect(slots.bytes).toBe(0)
    for (const bad of [sha1.toUpperCase(), `${sha1}0`, sha1.slice(1), `${sha256}a`, `/${sha256.slice(1)}`, `${sha1.slice(0, 39)}g`, `${sha1.slice(0, 39)}:`, `${sha256.slice(0, 63)}\u0660`, '']) {
      expect([slots.set(bad, 'x'), slots.get(bad), slots.delete(bad)], bad).toEqual([false, null, false])
    }
    expect([slots.size, slots.bytes]).toEqual([0, 0])
    expect([slots.get(sha1), slots.set(sha1, 'one'), slots.set(sha256, 'two'), slots.get(sha1), slots.get(sha256)]).toEqual([undefined, true, true, 'one', 'two'])
    // A SHA-256 that starts with the SHA-1's digits, and a SHA-1 that is a SHA-256's start, are other keys.
    expect([slots.get(`${sha1}${'0'.repeat(24)}`), slots.get(sha256.slice(0, 40))]).toEqual([undefined, undefined])
    expect([slots.set(sha1, 'again'), slots.get(sha1), slots.size]).toEqual([true, 'again', 2])
    const bytes = slots.bytes
    expect(bytes).toBe(1024 * HASH_SLOT_BYTES)
    slots.clear()
    expect([slots.get(sha1), slots.size, slots.bytes]).toEqual([undefined, 0, bytes])
    expect(() => createHashSlots(3)).toThrow(/power of two/)
  })
})

describe('static cache single lookups', () => {
  it('are found by their hash exactly while the cache holds them, through eviction, refusal, drop and clear', () => {
    const random = createRandom(7)
    const keys = keyPool(400)
    const bodyOf = (key: string): Buffer => Buffer.from(`{"data":{"hash":"${key}","pad":"${'x'.repeat(key.length * 3)}"}}`)
    // Room for about 40 of the 400: the window and the main space evict, and newcomers are refused.
    const cache = createStaticCache(40 * (ENTRY_OVERHEAD_BYTES + 260) + 64 * HASH_SLOT_BYTES)
    let hits = 0
    for (let op = 0; op < 20_000; op++) {
      // Skewed: a few keys asked often, so some are kept and some turned away.
      const key = keys[Math.floor(keys.length * random() ** 3)]!
      const asked = random() < 0.5 ? key : `/api/v1/version-files/${key}`
      const roll = random()
      if (roll < 0.9) {
        const hit = cache.get!(asked)
        if (hit !== undefined) {
          hits++
          expect(hit.bytes.equals(bodyOf(key))).toBe(true)
        } else {
          const made = { bytes: bodyOf(key), etag: `"${key}"` }
          // Kept or not, put answers with the key's body.
          expect(cache.put!(asked, made, cache.generation).bytes.equals(bodyOf(key)), `op ${op}`).toBe(true)
        }
      } else if (roll < 0.95) {
        const ref = cache.refOf!(asked)
        expect(ref === undefined || cache.hit!(ref)?.bytes.equals(bodyOf(key)) === true).toBe(true)
      } else if (roll < 0.999) {
        cache.drop!(asked)
        expect(cache.refOf!(key)).toBeUndefined()
      } else {
        cache.clear()
      }
      // Every entry the cache counts is found by its hash, and nothing it let go of.
      if (op % 50 === 0) expect(keys.filter((k) => cache.refOf!(k) !== undefined).length, `op ${op}`).toBe(cache.size)
    }
    expect(hits).toBeGreaterThan(5_000)
    expect(cache.size).toBeGreaterThan(10)
    expect(cache.size).toBeLessThanOrEqual(40)
  })

  it('count the slots against the bound', () => {
    const ENTRY = 100 + ENTRY_OVERHEAD_BYTES
    const sized = (i: number): { bytes: Buffer; etag: string } => ({ bytes: Buffer.from(`{"data":"${String(i).padStart(89, '0')}"}`), etag: `"${i}"` })
    // Room for 20 entries of 100 bytes under paths, or for 20 less the 64 slots' share under bare hashes.
    const byPath = createStaticCache(20 * ENTRY)
    const byHash = createStaticCache(20 * ENTRY)
    const keys = keyPool(100).filter((k) => k.length === 40)
    for (let round = 0; round < 3; round++) {
      for (const [i, key] of keys.entries()) {
        byPath.put!(`/api/v1/projects/${key}`, sized(i), byPath.generation)
        byHash.put!(key, sized(i), byHash.generation)
      }
    }
    expect(byPath.size).toBe(20)
    expect(byHash.size).toBe(20 - Math.ceil((64 * HASH_SLOT_BYTES) / ENTRY))
  })
})
