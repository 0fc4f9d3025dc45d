/**
 * Static bodies of the live release kept in memory, bounded in bytes. A hit costs one Map lookup,
 * a flag write and four counters of the frequency sketch: no disk read and no hashing per request
 * (PERF-BASELINE: a disk read per request is about 4x slower), and no Map reordering either.
 * Eviction is W-TinyLFU with a CLOCK main space (createStaticCache).
 *
 * Keys are request paths (`/api/v1/projects/sodium`), so the listener's fast path looks up the
 * request's own `req.url` string: no file name built, flattened and hashed per request (about 1 µs
 * of a 20 µs static read at the large catalog, bench/results/PROFILE.md). A key means "in the live
 * release": clear() at a release swap starts a new generation, and a read that began before the swap
 * does not store what it read.
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createBody, type Body } from '../build/render/body.ts'
import { createDoorkeeper } from './doorkeeper.ts'
import { createFrequencySketch, keyHash } from './frequency-sketch.ts'

/**
 * What an entry costs beside its body's bytes, in RSS: the key, the Map slot, the entry, the Body,
 * its ETag string and the Buffer (about 600 bytes of JavaScript heap), and the buffer's backing
 * store outside the heap (its C++ objects and malloc's overhead). Measured by filling a cache with
 * 100,000 bodies of 1,100 bytes and 40,000 of 2,300: RSS grew by the body plus 1,210 and 1,550
 * bytes per entry (`node --expose-gc`, after two full collections). Counted against the bound, so
 * CACHE_BYTES bounds the memory the cache holds, not just its bodies, even when it is full of tiny
 * bodies (`{"data":[]}` under thousands of URLs, or single hash lookups kept by the bulk lookup);
 * the shim's heap limit relies on it (shim/heap.ts).
 */
export const ENTRY_OVERHEAD_BYTES = 1200

/**
 * A bounded in-memory store of the pre-rendered bodies of the live release, by request path. Where
 * a method takes a path it also takes a single hash lookup's bare lowercase hash, which stands for
 * `/api/v1/version-files/<hash>` (the key that path is kept under: keyOf).
 */
export interface StaticCache {
  /** The cached body of a request path (`/api/v1/...`; a hit, synchronously: no promise on the hot path), or undefined. Optional: a store without memory has no hits. */
  get?(urlPath: string): Body | undefined
  /** The body of a request path in the release folder `releaseDir` (its `public<path>.json`), or null when there is no such file. */
  read(releaseDir: string, urlPath: string): Promise<Body | null>
  /**
   * Keeps a body the caller made with exactly the bytes of urlPath's file (e.g. a single hash lookup
   * rendered from the catalog), or an answer of the live release under a key that is not a path
   * (answerCacheKey's: it never starts with `/`) — unless
   * `generation` is no longer live (a swap happened while it was being made), or the cache, full,
   * does not admit it (its key asked no more often recently than the entry it would evict: see
   * createStaticCache). Returns the body to answer with (the one kept, or the one given). Counts as
   * an ask of the key. Optional like get.
   */
  put?<B extends KeptBody>(urlPath: string, body: B, generation: number): B
  /**
   * A reference to what is kept under a key (undefined when nothing is), for a plan that reads the
   * same entries on every request (a bulk lookup's, shim/routes/version-files.ts): through hit() it
   * costs no Map lookup. A Map lookup with a key string made per request costs about 1.5 µs at
   * 100,000 entries, against 0.15 µs with the very string object the Map holds (a micro-benchmark; the
   * mechanism inside V8 was not pinned down): 100 of them were a sixth of
   * a bulk hash lookup answered from memory (bench/results/PROFILE.md, Session 11).
   */
  refOf?(urlPath: string): KeptRef | undefined
  /** The body a reference points to, counted as a hit (as get), or undefined once it was evicted, dropped or cleared. */
  hit?(ref: KeptRef): KeptBody | undefined
  /** Forgets what is kept under a key (a plan to be replaced), if anything. */
  drop?(urlPath: string): void
  /**
   * Whether an answer (answerCacheKey's key) may be kept: true when the same key was asked before
   * in this generation, recently (shim/doorkeeper.ts: while fewer than 16,384 other first-time keys
   * came after it). The first time, the key is only noted and false returned. A mod manager
   * checking a modpack repeats its request, and the repeat is kept; a one-off list of installed
   * files is never asked again, and keeping it would evict bodies that are: at the large catalog,
   * one-off bulk lookups at 32 in flight took 1.5–1.7 ms of CPU each with their plans kept, and
   * 0.7–0.9 ms without (bench/results/PROFILE.md, Session 12). Optional like get: without it
   * nothing is kept.
   */
  admit?(key: string): boolean
  /** Forgets every body (a new release went live) and starts a new generation. */
  clear(): void
  /** The live generation: read it before making a body for put(). */
  readonly generation: number
  readonly size: number
}

/**
 * The body with bytes of their own: a small Buffer.from() is a slice of an 8 KB pool slab, which a
 * cache entry would keep alive whole while counting only the slice (CACHE_BYTES would not bound it).
 * Bodies read from files already own theirs. Other fields a route keeps with its body (a bulk
 * lookup's plan, shim/routes/version-files.ts) are kept too; a body that knows how to copy itself
 * (OwnableBody: a single lookup SQL made, whose class the route relies on) is asked to.
 */
function ownBytes<B extends Body>(body: B): B {
  if (body.bytes.byteOffset === 0 && body.bytes.buffer.byteLength === body.bytes.length) return body
  const ownable = body as Partial<OwnableBody>
  if (typeof ownable.owned === 'function') return ownable.owned() as unknown as B
  const bytes = Buffer.allocUnsafeSlow(body.bytes.length)
  body.bytes.copy(bytes)
  return { ...body, bytes }
}

/** A body whose bytes may share memory, which makes a copy of itself, of its own class, with bytes of their own (ownBytes). */
export interface OwnableBody extends Body {
  owned(): OwnableBody
}

/** A kept value: a body, and the JavaScript heap of any fields a route keeps with it beyond bytes and ETag. */
export interface KeptBody extends Body {
  /** Counted against the bound with the body and ENTRY_OVERHEAD_BYTES (a plan's references and offsets). */
  heapBytes?: number
}

/**
 * A kept entry as a plan refers to it. Opaque: read through StaticCache.hit. Its body never changes
 * (put never replaces an entry's body), and once the entry is evicted, dropped or cleared it holds
 * none, so a reference yields the body it was made for or nothing, and never keeps alive bytes the
 * bound no longer counts.
 */
export interface KeptRef {
  readonly kept: unknown
}

/** What an entry counts against the bound. */
function sizeOf(body: KeptBody): number {
  return body.bytes.length + ENTRY_OVERHEAD_BYTES + (body.heapBytes ?? 0)
}

/**
 * The static cache's key of an answer kept for a query (shim/routes/version-files.ts keeps them):
 * `kind` (`update`, a single file's `{"data":<Version>}`, whose `target` is the JSON array of the
 * path's hash as sent and the query string, so no hash and query can pass for another pair;
 * `updates`, the bulk VersionsByHash of update matching, and `hashes`, the plan of a bulk hash
 * lookup's answer, whose target is the query string) and a SHA-256 of the target exactly as sent.
 * The answer is a function of that text and the live release, so a hit needs no parsing or
 * validation: at the large catalog, reading and validating a query of 100 hashes was two thirds of
 * the CPU of an answer found in the cache (bench/results/PROFILE.md, Session 10). Mod managers send
 * one modpack's check in one spelling, so spellings are not made canonical. A key is 50 or 51
 * characters however long the request, and never starts with `/`, so it can never be a request
 * path the fast path looks up (PLAIN_API_PATH), nor the path of a file.
 */
export function answerCacheKey(kind: 'update' | 'updates' | 'hashes', target: string): string {
  return `${kind}:${createHash('sha256').update(target).digest('base64url')}`
}

/** The request path of a single hash lookup, before its hash. */
const SINGLE_LOOKUP_PREFIX = '/api/v1/version-files/'
const SINGLE_LOOKUP_PATH = /^\/api\/v1\/version-files\/(?:[0-9a-f]{40}|[0-9a-f]{64})$/

/**
 * The key a request path is kept under: the path itself, except a single hash lookup's
 * (`/api/v1/version-files/<lowercase sha1 or sha256>`), kept under its bare hash. A bulk lookup
 * looks up 100 single lookups a request with the hashes it already has (hashed once by the Map, for
 * the query's duplicates): building `/api/v1/version-files/<hash>` for each was a rope, copied flat
 * and hashed again on every lookup (bench/results/PROFILE.md, Session 23). Unambiguous: a path starts
 * with `/`, an answer key (answerCacheKey) has a `:`, a bare hash is hex and nothing else. Only a
 * path of the two hash lengths is matched by the regular expression.
 */
function keyOf(urlPath: string): string {
  const length = urlPath.length
  return (length === SINGLE_LOOKUP_PREFIX.length + 64 || length === SINGLE_LOOKUP_PREFIX.length + 40) && SINGLE_LOOKUP_PATH.test(urlPath)
    ? urlPath.slice(SINGLE_LOOKUP_PREFIX.length)
    : urlPath
}

/** The file of a request path (`/api/v1/...`) in a release folder. */
export function releaseFileOf(releaseDir: string, urlPath: string): string {
  return `${releaseDir}/public${urlPath}.json`
}

/**
 * A flat copy of a key for the Map to hold. A key made by concatenation (a bulk lookup's
 * `/api/v1/version-files/<hash>`) is a rope in V8 (a ConsString, pointing to its flat copy once
 * hashed), and every later lookup compared against it followed it: one cache miss more a lookup,
 * and 32 bytes more an entry. Its 100 lookups were about a quarter of the CPU of a one-off bulk
 * lookup at the large catalog; a micro-benchmark at 50,000 entries measured 1,070 → 900 ns a
 * lookup (bench/results/PROFILE.md, Session 17). JSON's round trip copies any string exactly,
 * lone surrogates included; it runs once an entry, when it is kept.
 */
function flatKey(key: string): string {
  return JSON.parse(JSON.stringify(key)) as string
}

interface Entry extends KeptRef {
  /** The body; undefined once the entry left the cache (references may outlive it). */
  kept: KeptBody | undefined
  /** Set by a hit; eviction clears it once (second chance) before evicting. */
  used: boolean
  /** Its key's hash in the frequency sketch (keyHash): a hit counts without hashing the key. */
  readonly hash: number
  /**
   * What it counts against the bound (sizeOf of its body, once): bodies come in many hidden classes
   * (files', single lookups', plans', update answers'), and reading `bytes` and `heapBytes` of each
   * again at every eviction was a megamorphic load, a runtime call when V8's stub cache missed.
   */
  readonly size: number
}

/** The share of the bound for the admission window, where new entries wait before they compete for the main space (W-TinyLFU's 1%). */
const WINDOW_SHARE = 0.01
/**
 * Bytes of the bound per counter of the frequency sketch: about 16 counters for each of the large
 * catalog's entries of 2 KB, as Caffeine sizes its sketch (1,048,576 4-bit counters, 512 KB, at 128 MB).
 */
const BYTES_PER_COUNTER = 128
/** Bytes of the bound per addition between two halvings of the sketch: about ten for each entry held, as Caffeine's (671,088 at 128 MB). */
const BYTES_PER_ADDITION = 200

/**
 * Creates a cache holding at most maxBytes of bodies (each counted with ENTRY_OVERHEAD_BYTES), and
 * its doorkeeper of answers (64 KB, shim/doorkeeper.ts).
 *
 * Eviction is W-TinyLFU (Caffeine's policy, without its hill climbing): a new entry waits in a
 * window of 1% of the bound (first in, first out); the one that leaves it comes into the main space
 * while there is room, and once the main space is full only if its key was asked more often
 * recently than the entry it would evict (shim/frequency-sketch.ts counts every hit and every miss
 * that made a body; a tie keeps the old entry). The main space evicts by CLOCK (second chance):
 * a hit sets a flag and reorders nothing, as re-inserting every hit for exact LRU order cost about
 * 3% of a static read (bench/results/serve.md). Plain CLOCK, as LRU, kept nothing of a list longer
 * than the cache that its users cycle through (each entry evicted is the one asked next): at the
 * large catalog the bench's bulk lookups, once their single lookups overflowed the bound by a few
 * percent, went to SQLite for every hash (bench/results/PROFILE.md, Sessions 17 and 18). With
 * admission by frequency, the entries kept keep their place and the rest are read or made when
 * asked; a one-off scan (a crawler reading every project once) is never asked more often than what
 * it would push out, so it pushes out nothing.
 *
 * With no bytes to keep anything in (CACHE_BYTES=0) it is a store without memory (readStatic): none
 * of the optional methods, so the routes neither look anything up nor make keys for it.
 */
export function createStaticCache(maxBytes: number): StaticCache {
  if (maxBytes === 0) return readStatic()
  // Insertion order is each space's order: the first entries are the oldest (the window's next to
  // leave, the main space's clock hand).
  const window = new Map<string, Entry>()
  const main = new Map<string, Entry>()
  const windowMax = Math.floor(maxBytes * WINDOW_SHARE)
  let windowBytes = 0
  let mainBytes = 0
  let generation = 0
  const doorkeeper = createDoorkeeper()
  const sketch = createFrequencySketch(maxBytes / BYTES_PER_COUNTER, maxBytes / BYTES_PER_ADDITION)
  const lookup = (key: string): Entry | undefined => main.get(key) ?? window.get(key)
  /** A key as given to the cache's methods: a request path (keyOf), an answer key, or a single lookup's bare hash. */
  const find = (given: string): Entry | undefined => lookup(keyOf(given))
  /** The main space's next entry to evict: the clock hand gives each entry hit since it last passed a second chance. */
  const victim = (): [string, Entry] | undefined => {
    for (const [key, entry] of main) {
      if (!entry.used) return [key, entry]
      entry.used = false
      main.delete(key)
      main.set(key, entry)
    }
    return undefined
  }
  /** Evicts from the main space until the cache is within its bound. */
  const shrink = (): void => {
    while (windowBytes + mainBytes > maxBytes) {
      const next = victim()
      if (next === undefined) return
      main.delete(next[0])
      mainBytes -= next[1].size
      next[1].kept = undefined
    }
  }
  /** Moves what overflows the window into the main space, each entry admitted or not by its frequency against the victim's. */
  const settle = (): void => {
    for (const [key, candidate] of window) {
      if (windowBytes <= windowMax) break
      const size = candidate.size
      window.delete(key)
      windowBytes -= size
      if (windowBytes + mainBytes + size > maxBytes) {
        const next = victim()
        if (next !== undefined && sketch.estimate(candidate.hash) <= sketch.estimate(next[1].hash)) {
          candidate.kept = undefined
          continue
        }
      }
      main.set(key, candidate)
      mainBytes += size
      shrink()
    }
    shrink()
  }
  /** A hit: the entry's flag for CLOCK and its count in the sketch; its body, or undefined once it left the cache. */
  const touch = (entry: Entry): KeptBody | undefined => {
    if (entry.kept === undefined) return undefined
    entry.used = true
    sketch.add(entry.hash)
    return entry.kept
  }
  const get = (urlPath: string): Body | undefined => {
    const entry = find(urlPath)
    return entry === undefined ? undefined : touch(entry)
  }
  /** Keeps body under urlPath unless made in another generation; the entry kept is the one returned. */
  const store = <B extends KeptBody>(urlPath: string, body: B, madeIn: number): B => {
    // Made from a release that is no longer live: answer with it, keep nothing under its path.
    if (madeIn !== generation) return body
    const key = keyOf(urlPath)
    // Another request may have made the same body meanwhile: keep one entry, count its bytes once.
    const raced = lookup(key)
    if (raced) return raced.kept as B
    // The miss that made this body is an ask of its key.
    const hash = keyHash(key)
    sketch.add(hash)
    const size = sizeOf(body)
    if (size > maxBytes) return body
    const kept = ownBytes(body)
    const entry: Entry = { kept, used: false, hash, size }
    window.set(flatKey(key), entry)
    windowBytes += size
    settle()
    // Not admitted: the caller answers with its body all the same.
    return entry.kept === undefined ? body : kept
  }
  return {
    get,
    put: store,
    refOf: find,
    hit: (ref) => touch(ref as Entry),
    drop(urlPath) {
      const key = keyOf(urlPath)
      const inMain = main.get(key)
      const entry = inMain ?? window.get(key)
      if (entry === undefined) return
      const size = entry.size
      if (inMain) {
        main.delete(key)
        mainBytes -= size
      } else {
        window.delete(key)
        windowBytes -= size
      }
      entry.kept = undefined
    },
    admit(key) {
      if (!doorkeeper.seen(key)) return false
      // The ask the doorkeeper noted counts as the first (TinyLFU's doorkeeper is the sketch's first count).
      sketch.add(keyHash(key))
      return true
    },
    async read(releaseDir, urlPath) {
      const hit = get(urlPath)
      if (hit) return hit
      const started = generation
      const body = await readReleaseBody(releaseDir, urlPath)
      return body === null ? null : store(urlPath, body, started)
    },
    clear() {
      for (const entry of main.values()) entry.kept = undefined
      for (const entry of window.values()) entry.kept = undefined
      main.clear()
      window.clear()
      doorkeeper.clear()
      sketch.clear()
      windowBytes = 0
      mainBytes = 0
      generation++
    },
    get generation() {
      return generation
    },
    get size() {
      return main.size + window.size
    },
  }
}

/** The body of a request path's file in the release folder, read from disk; null when there is no such file. */
async function readReleaseBody(releaseDir: string, urlPath: string): Promise<Body | null> {
  let bytes: Buffer
  try {
    bytes = await readFile(releaseFileOf(releaseDir, urlPath))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENAMETOOLONG') return null
    throw err
  }
  return createBody(bytes)
}

/**
 * The static store of CACHE_BYTES=0: every body read from its file, nothing kept, and none of the
 * optional methods. With the memory's methods there (as before), a cache-off bulk hash lookup still
 * made its answer key, a SHA-256 of the 6.5 KB query (3.4% of the event loop at 32 in flight), and
 * looked up its 100 hashes in empty maps, all for a cache that could keep nothing.
 */
function readStatic(): StaticCache {
  let generation = 0
  return {
    read: readReleaseBody,
    clear() {
      generation++
    },
    get generation() {
      return generation
    },
    size: 0,
  }
}
