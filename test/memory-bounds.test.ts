/**
 * The shim's memory bound (shim/heap.ts): the static cache counts each entry's JavaScript objects
 * against CACHE_BYTES, and the shim refuses to start with a heap limit too small for its cache.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { createBody } from '../build/render/body.ts'
import {
  checkHeapLimit,
  HEAP_HEADROOM_BYTES,
  SHIM_HEAP_MB_DEFAULT,
  SHIM_INITIAL_OLD_SPACE_MB_DEFAULT,
  SHIM_MALLOC_ARENA_MAX_DEFAULT,
  SHIM_SEMI_SPACE_MB_DEFAULT,
  SHIM_V8_FLAGS,
} from '../shim/heap.ts'
import { KEYS_PER_FILTER } from '../shim/doorkeeper.ts'
import { createFrequencySketch, keyHash } from '../shim/frequency-sketch.ts'
import { answerCacheKey, createStaticCache, ENTRY_OVERHEAD_BYTES, type StaticCache } from '../shim/static-cache.ts'

const MB = 1024 * 1024

describe('static cache bound', () => {
  it('counts every entry with its overhead, so tiny bodies cannot grow the heap past CACHE_BYTES', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cache-bound-'))
    mkdirSync(path.join(dir, 'public/api/v1'), { recursive: true })
    const files = Array.from({ length: 50 }, (_, i) => {
      writeFileSync(path.join(dir, `public/api/v1/${i}.json`), '{"data":[]}')
      return `/api/v1/${i}`
    })
    // Room for 10 entries of 11 bytes each with their overhead, not for 50 bare bodies of 11 bytes.
    const cache = createStaticCache(10 * (11 + ENTRY_OVERHEAD_BYTES))
    for (const file of files) expect((await cache.read(dir, file))?.bytes.toString()).toBe('{"data":[]}')
    expect(cache.size).toBe(10)
    // Each asked once: a newcomer is no more asked than the entry it would evict, so the first ten stay.
    expect(cache.get!(files[0]!)?.bytes.toString()).toBe('{"data":[]}')
    expect(cache.get!(files[49]!)).toBeUndefined()
  })
})

describe('static cache references', () => {
  const body = (text: string): { bytes: Buffer; etag: string } => ({ bytes: Buffer.from(text), etag: `"${text.length}"` })

  it('read the kept body without a lookup, count as hits, and let go of it when it is evicted, dropped or cleared', () => {
    // Room for three bodies of 18 bytes.
    const cache = createStaticCache(3 * (18 + ENTRY_OVERHEAD_BYTES))
    for (const k of ['a', 'b', 'c']) cache.put!(`/api/v1/${k}`, body(`{"data":"${k}-12345"}`), cache.generation)
    expect(cache.size).toBe(3)
    const [a, b, c] = ['a', 'b', 'c'].map((k) => cache.refOf!(`/api/v1/${k}`)!)
    expect(cache.hit!(a!)?.bytes.toString()).toBe('{"data":"a-12345"}')
    // d asked once is not asked more than b, the entry it would evict (a was hit: second chance),
    // so it is not kept; asked again it is, b is evicted, and b's reference lets go of its body.
    const d = body('{"data":"d-12345"}')
    expect(cache.put!('/api/v1/d', d, cache.generation)).toBe(d)
    expect([cache.get!('/api/v1/d'), cache.refOf!('/api/v1/b')]).toEqual([undefined, b])
    cache.put!('/api/v1/d', body('{"data":"d-12345"}'), cache.generation)
    expect(cache.get!('/api/v1/d')?.bytes.toString()).toBe('{"data":"d-12345"}')
    expect(cache.hit!(b!)).toBeUndefined()
    expect(cache.get!('/api/v1/b')).toBeUndefined()
    expect(cache.hit!(a!)?.bytes.toString()).toBe('{"data":"a-12345"}')
    cache.drop!('/api/v1/c')
    expect([cache.hit!(c!), cache.get!('/api/v1/c'), cache.size]).toEqual([undefined, undefined, 2])
    cache.clear()
    expect([cache.hit!(a!), cache.refOf!('/api/v1/a'), cache.size]).toEqual([undefined, undefined, 0])
  })

  it('find an entry by any string equal to its key, whatever characters it holds and however it was made', () => {
    const cache = createStaticCache(1024 * 1024)
    const hash = 'ab'.repeat(32)
    const keys = [`/api/v1/version-files/${hash}`, '/api/v1/projects/é-ü', '/api/v1/x\ud800y', 'hashes:Zm9v']
    for (const [i, key] of keys.entries()) cache.put!(key, body(`{"data":${i}}`), cache.generation)
    // Built again another way: sliced, joined, decoded.
    const again = [['/api/v1', 'version-files', hash].join('/'), decodeURIComponent('/api/v1/projects/%C3%A9-%C3%BC'), `/api/v1/x${String.fromCharCode(0xd800)}y`, 'xhashes:Zm9v'.slice(1)]
    expect(again.map((k) => cache.get!(k)?.bytes.toString())).toEqual(keys.map((_, i) => `{"data":${i}}`))
    expect(again.map((k) => cache.refOf!(k) !== undefined)).toEqual([true, true, true, true])
    cache.drop!(again[2]!)
    expect([cache.get!(keys[2]!), cache.size]).toEqual([undefined, 3])
  })

  it('keep a single hash lookup under its bare hash: its path and its hash name one entry, any other path is its own key', () => {
    const cache = createStaticCache(1024 * 1024)
    const sha256 = 'cd'.repeat(32)
    const sha1 = 'ef'.repeat(20)
    cache.put!(`/api/v1/version-files/${sha256}`, body('{"data":"by path"}'), cache.generation)
    cache.put!(sha1, body('{"data":"by hash"}'), cache.generation)
    expect([cache.get!(sha256)?.bytes.toString(), cache.get!(`/api/v1/version-files/${sha1}`)?.bytes.toString(), cache.size]).toEqual([
      '{"data":"by path"}',
      '{"data":"by hash"}',
      2,
    ])
    // The same body again under the other name is the entry already kept, counted once.
    const again = body('{"data":"by path"}')
    expect(cache.put!(sha256, again, cache.generation)).not.toBe(again)
    expect(cache.refOf!(sha256)).toBe(cache.refOf!(`/api/v1/version-files/${sha256}`))
    // Not a single lookup's key: upper case (no such file), another length, another folder.
    for (const other of [`/api/v1/version-files/${sha256.toUpperCase()}`, `/api/v1/version-files/${sha256}0`, `/api/v1/version-file/${sha256}`, '/api/v1/version-files/update']) {
      expect(cache.get!(other), other).toBeUndefined()
    }
    cache.drop!(`/api/v1/version-files/${sha1}`)
    expect([cache.get!(sha1), cache.size]).toEqual([undefined, 1])
  })

  it('count the heap a kept value declares against the bound', () => {
    // Room for two bodies of 17 bytes, or one that declares as much heap again.
    const cache = createStaticCache(2 * (17 + ENTRY_OVERHEAD_BYTES))
    cache.put!('/api/v1/a', body('{"data":"a-1234"}'), cache.generation)
    cache.put!('/api/v1/b', body('{"data":"b-1234"}'), cache.generation)
    expect(cache.size).toBe(2)
    cache.clear()
    cache.put!('/api/v1/a', body('{"data":"a-1234"}'), cache.generation)
    const plan = { ...body('{"data":"p-1234"}'), heapBytes: 17 + ENTRY_OVERHEAD_BYTES }
    // The plan counts twice its body's share: a and the plan no longer fit together. Asked once, it
    // is not asked more than a, so a stays; asked twice, it takes a's place.
    cache.put!('plan', plan, cache.generation)
    expect([cache.size, cache.get!('plan'), cache.refOf!('/api/v1/a') !== undefined]).toEqual([1, undefined, true])
    cache.put!('plan', plan, cache.generation)
    expect(cache.size).toBe(1)
    expect(cache.get!('/api/v1/a')).toBeUndefined()
    expect(cache.get!('plan')?.bytes.toString()).toBe('{"data":"p-1234"}')
  })

  it('drop frees what the entry counted, in the window or the main space', () => {
    const ENTRY = 19 + ENTRY_OVERHEAD_BYTES
    // A window of 1% of 200 entries' bytes: the newest one or two wait there, the rest are in the main space.
    const cache = createStaticCache(200 * ENTRY)
    const key = (i: number): string => `/api/v1/${String(i).padStart(3, '0')}`
    for (let i = 0; i < 200; i++) cache.put!(key(i), body(`{"data":"${String(i).padStart(8, '0')}"}`), cache.generation)
    expect(cache.size).toBe(200)
    // The oldest (main space) and the newest (window) dropped: two new entries fit without evicting any.
    cache.drop!(key(0))
    cache.drop!(key(199))
    cache.drop!(key(199))
    expect(cache.size).toBe(198)
    for (const i of [200, 201]) cache.put!(key(i), body(`{"data":"${String(i).padStart(8, '0')}"}`), cache.generation)
    expect(cache.size).toBe(200)
    for (let i = 1; i < 199; i++) expect(cache.refOf!(key(i)), key(i)).toBeDefined()
  })
})

describe('static cache eviction (W-TinyLFU)', () => {
  const body = (text: string): { bytes: Buffer; etag: string } => ({ bytes: Buffer.from(text), etag: `"${text.length}"` })
  /** A body of exactly 100 bytes for key i. */
  const sized = (i: number): { bytes: Buffer; etag: string } => body(`{"data":"${String(i).padStart(89, '0')}"}`)
  const ENTRY = 100 + ENTRY_OVERHEAD_BYTES
  /** Asks for key i as a route does: a hit, or a miss whose body is made and put. */
  const ask = (cache: StaticCache, i: number): boolean => {
    const key = `/api/v1/version-files/${i}`
    if (cache.get!(key) !== undefined) return true
    cache.put!(key, sized(i), cache.generation)
    return false
  }

  it('keeps most of a list a little longer than the cache that is cycled through (CLOCK and LRU keep none of it)', () => {
    const cache = createStaticCache(1000 * ENTRY)
    let hits = 0
    for (let pass = 0; pass < 8; pass++) {
      for (let i = 0; i < 1100; i++) if (ask(cache, i) && pass >= 4) hits++
    }
    expect(cache.size).toBeLessThanOrEqual(1000)
    // The best any cache of 1,000 can do is 1,000 hits a pass of 1,100.
    expect(hits / (4 * 1100)).toBeGreaterThan(0.8)
  })

  it('does not let a one-off scan push out what is asked again and again', () => {
    const cache = createStaticCache(1000 * ENTRY)
    for (let round = 0; round < 4; round++) for (let i = 0; i < 900; i++) ask(cache, i)
    // A crawler reads 5,000 other keys once each.
    for (let i = 0; i < 5_000; i++) ask(cache, 1_000_000 + i)
    let kept = 0
    for (let i = 0; i < 900; i++) if (cache.refOf!(`/api/v1/version-files/${i}`) !== undefined) kept++
    expect(kept).toBeGreaterThanOrEqual(890)
    expect(cache.size).toBeLessThanOrEqual(1000)
  })

  it('admits a newcomer hit while it waits in the window over entries asked once, and not the newcomers asked once', () => {
    // A window of 1% of 100,000 entries' bytes: about 1,000 entries wait there.
    const cache = createStaticCache(100_000 * ENTRY)
    for (let i = 0; i < 100_000; i++) ask(cache, i)
    expect(cache.size).toBe(100_000)
    ask(cache, 500_000)
    expect(ask(cache, 500_000)).toBe(true)
    expect(ask(cache, 500_000)).toBe(true)
    // 2,000 more newcomers, each asked once, push it out of the window.
    for (let i = 0; i < 2_000; i++) ask(cache, 600_000 + i)
    expect(cache.refOf!('/api/v1/version-files/500000')).toBeDefined()
    let newcomers = 0
    for (let i = 0; i < 1_000; i++) if (cache.refOf!(`/api/v1/version-files/${600_000 + i}`) !== undefined) newcomers++
    expect(newcomers).toBeLessThan(20)
    expect(cache.size).toBeLessThanOrEqual(100_000)
  })
})

describe('frequency sketch', () => {
  it('counts asks up to 15, halves every count after its period, and forgets at clear', () => {
    const sketch = createFrequencySketch(1 << 17, 10_000)
    const [a, b] = [keyHash('/api/v1/projects/a'), keyHash('/api/v1/projects/b')]
    for (let i = 0; i < 5; i++) sketch.add(a)
    expect([sketch.estimate(a), sketch.estimate(b)]).toEqual([5, 0])
    for (let i = 0; i < 30; i++) sketch.add(b)
    expect(sketch.estimate(b)).toBe(15)
    // 10,000 additions in all: every count is halved.
    for (let i = 35; i < 10_000; i++) sketch.add(keyHash(`/api/v1/other/${i}`))
    expect([sketch.estimate(a), sketch.estimate(b)]).toEqual([2, 7])
    sketch.clear()
    expect([sketch.estimate(a), sketch.estimate(b)]).toEqual([0, 0])
    expect(sketch.bytes).toBe(1 << 16)
  })
})

describe('static cache admission of answers', () => {
  const key = (i: number): string => answerCacheKey('hashes', `hashes=${i}`)

  it('admits a key asked before, while fewer than 16,384 first-time keys came after it, and forgets them at a release swap', () => {
    const cache = createStaticCache(128 * MB)
    expect([cache.admit!(key(1)), cache.admit!(key(1)), cache.admit!(key(1))]).toEqual([false, true, true])
    // Recognised after 16,383 other first-time keys (the newer filter takes 16,384).
    const fresh = createStaticCache(128 * MB)
    expect(fresh.admit!(key(0))).toBe(false)
    let falsePositives = 0
    for (let i = 1; i < KEYS_PER_FILTER; i++) if (fresh.admit!(key(1_000_000 + i))) falsePositives++
    expect(fresh.admit!(key(0))).toBe(true)
    // Still recognised after the filter it was noted in became the older one: noted in the middle
    // of a filter, then 16,383 more keys (the rotation comes within them).
    for (let i = 0; i < KEYS_PER_FILTER / 2; i++) if (fresh.admit!(key(3_000_000 + i))) falsePositives++
    expect(fresh.admit!(key(7))).toBe(false)
    for (let i = 1; i < KEYS_PER_FILTER; i++) if (fresh.admit!(key(4_000_000 + i))) falsePositives++
    expect(fresh.admit!(key(7))).toBe(true)
    // Forgotten after 32,768 more: new again, then admitted when asked once more.
    for (let i = 0; i < 2 * KEYS_PER_FILTER; i++) if (fresh.admit!(key(2_000_000 + i))) falsePositives++
    expect([fresh.admit!(key(0)), fresh.admit!(key(0))]).toEqual([false, true])
    // A Bloom filter's false positives: a first-time key taken for a repeat, rarely (about 0.3%).
    expect(falsePositives / (4.5 * KEYS_PER_FILTER)).toBeLessThan(0.01)
    // A new release: what was noted for the old one counts for nothing.
    cache.clear()
    expect(cache.admit!(key(1))).toBe(false)
  })
})

describe('static cache keys', () => {
  /** Two release folders holding different bodies under the same request path. */
  const twoReleases = (): { a: string; b: string } => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'cache-gen-'))
    for (const name of ['a', 'b']) {
      mkdirSync(path.join(root, name, 'public/api/v1/projects'), { recursive: true })
      writeFileSync(path.join(root, name, 'public/api/v1/projects/x.json'), `{"data":"${name}"}`)
    }
    return { a: path.join(root, 'a'), b: path.join(root, 'b') }
  }

  it('are request paths of the live release: after clear() the same path reads the new release', async () => {
    const { a, b } = twoReleases()
    const cache = createStaticCache(1024 * 1024)
    expect((await cache.read(a, '/api/v1/projects/x'))?.bytes.toString()).toBe('{"data":"a"}')
    expect(cache.get!('/api/v1/projects/x')?.bytes.toString()).toBe('{"data":"a"}')
    cache.clear()
    expect(cache.get!('/api/v1/projects/x')).toBeUndefined()
    expect((await cache.read(b, '/api/v1/projects/x'))?.bytes.toString()).toBe('{"data":"b"}')
    expect(cache.get!('/api/v1/projects/x')?.bytes.toString()).toBe('{"data":"b"}')
    expect(await cache.read(b, '/api/v1/projects/none')).toBeNull()
  })

  it('do not keep a body read from a release that stopped being live while the read was in flight', async () => {
    const { a, b } = twoReleases()
    const cache = createStaticCache(1024 * 1024)
    const inFlight = cache.read(a, '/api/v1/projects/x')
    cache.clear() // the swap happens while the old release's file is being read
    expect((await inFlight)?.bytes.toString()).toBe('{"data":"a"}')
    expect(cache.size).toBe(0)
    expect(cache.get!('/api/v1/projects/x')).toBeUndefined()
    expect((await cache.read(b, '/api/v1/projects/x'))?.bytes.toString()).toBe('{"data":"b"}')
  })

  it('with no bytes (CACHE_BYTES=0) there is no memory to ask: every read is the file\'s bytes as they are now, nothing is kept', async () => {
    const { a, b } = twoReleases()
    const cache = createStaticCache(0)
    // None of the optional methods: the routes then make no answer key and look nothing up.
    expect([cache.get, cache.put, cache.refOf, cache.hit, cache.drop, cache.admit]).toEqual([undefined, undefined, undefined, undefined, undefined, undefined])
    const first = await cache.read(a, '/api/v1/projects/x')
    expect([first?.bytes.toString(), first?.etag]).toEqual(['{"data":"a"}', createBody(Buffer.from('{"data":"a"}')).etag])
    // Read again after the file changed: its new bytes, not a kept copy.
    writeFileSync(path.join(a, 'public/api/v1/projects/x.json'), '{"data":"a2"}')
    expect((await cache.read(a, '/api/v1/projects/x'))?.bytes.toString()).toBe('{"data":"a2"}')
    expect(await cache.read(a, '/api/v1/projects/none')).toBeNull()
    expect(cache.size).toBe(0)
    const generation = cache.generation
    cache.clear()
    expect(cache.generation).toBe(generation + 1)
    expect((await cache.read(b, '/api/v1/projects/x'))?.bytes.toString()).toBe('{"data":"b"}')
  })
})

describe('heap limit', () => {
  it('is enough for the cache plus the headroom, and names the fix when it is not', () => {
    expect(checkHeapLimit(128 * MB, 224 * MB)).toBeNull()
    expect(checkHeapLimit(128 * MB, 128 * MB + HEAP_HEADROOM_BYTES)).toBeNull()
    const problem = checkHeapLimit(512 * MB, 224 * MB)
    expect(problem).toContain('224 MB')
    expect(problem).toContain('CACHE_BYTES (512 MB)')
    expect(problem).toContain('at least 576')
  })

  it('npm run serve sets the default heap limit the shim (and the benchmark) assume, enough for the default cache', () => {
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts
    expect(scripts.serve).toContain(
      `MALLOC_ARENA_MAX=\${MALLOC_ARENA_MAX:-${SHIM_MALLOC_ARENA_MAX_DEFAULT}} node --max-old-space-size=\${SHIM_HEAP_MB:-${SHIM_HEAP_MB_DEFAULT}} --max-semi-space-size=\${SHIM_SEMI_SPACE_MB:-${SHIM_SEMI_SPACE_MB_DEFAULT}} --initial-old-space-size=\${SHIM_INITIAL_OLD_SPACE_MB:-${SHIM_INITIAL_OLD_SPACE_MB_DEFAULT}} ${SHIM_V8_FLAGS.join(' ')} .out/shim/cli.js`,
    )
    expect(checkHeapLimit(128 * MB, SHIM_HEAP_MB_DEFAULT * MB)).toBeNull()
  })

  it('node on this machine takes the serve script\'s V8 flags (one it does not know stops it before the shim starts)', () => {
    const start = (flags: readonly string[]) => spawnSync(process.execPath, [...flags, '-e', 'process.stdout.write("up")'], { encoding: 'utf8', timeout: 30_000 })
    const run = start(SHIM_V8_FLAGS)
    expect(run.stderr).toBe('')
    expect(run.status).toBe(0)
    expect(run.stdout).toBe('up')
    const unknown = start([...SHIM_V8_FLAGS, '--no-such-v8-flag-here'])
    expect(unknown.status).not.toBe(0)
    expect(unknown.stdout).toBe('')
  })

  it('the shim exits with that message instead of serving with a heap that a full cache would overflow', () => {
    const run = spawnSync(process.execPath, ['--max-old-space-size=100', 'node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'], {
      env: { ...process.env, CACHE_BYTES: String(512 * MB), DIST_DIR: mkdtempSync(path.join(os.tmpdir(), 'heap-dist-')), PORT: '0' },
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(run.status).toBe(1)
    expect(run.stderr).toContain('Not starting: the JavaScript heap limit')
    expect(run.stderr).toContain('CACHE_BYTES (512 MB)')
  })

  it('the shim names a bad setting and exits 2 before listening, with no stack trace', () => {
    for (const [name, value, message] of [
      ['CACHE_SCOPE', 'publik', 'CACHE_SCOPE must be one of private, public, got "publik"'],
      ['CACHE_BYTES', '128M', 'CACHE_BYTES must be an integer from 0 up, got "128M"'],
    ] as const) {
      const run = spawnSync(process.execPath, ['node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'], {
        env: { ...process.env, [name]: value, DIST_DIR: mkdtempSync(path.join(os.tmpdir(), 'config-dist-')), PORT: '0' },
        encoding: 'utf8',
        timeout: 60_000,
      })
      expect(run.status, run.stderr).toBe(2)
      expect(run.stderr).toContain(`Not starting: ${message}`)
      expect(run.stderr).not.toMatch(/\n\s+at /)
    }
  })
})
