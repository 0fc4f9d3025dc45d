/**
 * Routes of version files (SPEC.md §4 "Files and hash lookup"): identify installed files by hash
 * (single and bulk) and find their updates (single and bulk). Single and bulk update matching run
 * the same query (findUpdatesByHashes), so they agree on every input; an answer asked for a second
 * time is kept in the static cache for the live release, so a repeated check does not run it again
 * (cachedUpdate). A bulk hash lookup keeps the plan of its answer there (SplicePlan), so a repeated
 * one splices the kept single lookups without reading its query again. A hash the catalog's index
 * of known hashes rules out (build/hash-index.ts) is answered as unknown without a query, and a
 * known one's version is read by the rowid it gives.
 */
import { createBody, type Body } from '../../build/render/body.ts'
import type { z } from 'zod'
import {
  algorithmParam,
  MAX_BULK_HASHES,
  hashParam,
  versionFileQuerySchema,
  versionFilesOtherParamsSchema,
  versionFilesQuerySchema,
  versionFilesUpdateOtherParamsSchema,
  versionFilesUpdateQuerySchema,
  versionFileUpdateQuerySchema,
} from '../../build/schema/query.ts'
import { candidatesOfHashes, holdsHash, possiblyKnownHashes } from '../../build/hash-index.ts'
import { compileTargetFilter, newestMatching } from '../../build/version-targets.ts'
import { mutableCacheControl } from '../app.ts'
import { notFound, validationFailed } from '../errors.ts'
import { sendStatic } from '../lookup.ts'
import { readPlainHashQuery, readQuery } from '../query.ts'
import type { Release } from '../release.ts'
import { createDerivedBodyParts, sendBody, sendBodyParts, Splice, type BodyParts } from '../respond.ts'
import { answerCacheKey, type KeptBody, type KeptRef, type OwnableBody, type StaticCache } from '../static-cache.ts'
import {
  findSingleLookupsByHashes,
  findSingleLookupsByRowids,
  findUpdatesByHashes,
  findVersionsByRowids,
  type HashLookup,
  type RowidLookup,
  type VersionFilters,
} from '../versions-query.ts'
import type { Route, RouteInput } from './index.ts'

/**
 * Serialises VersionsByHash `{ data: { <hash>: <Version>, ... } }` from stored Version JSON bytes
 * (findUpdatesByHashes'), so the versions are the same bytes as everywhere else (no
 * re-serialising), written once into one buffer. Hashes are lowercase hex.
 */
function renderVersionsByHashBody(matches: readonly HashLookup[]): Body {
  let length = '{"data":{}}'.length
  for (const [i, m] of matches.entries()) length += (i === 0 ? 0 : 1) + m.hash.length + 3 + m.body.length
  const bytes = Buffer.allocUnsafe(length)
  let at = bytes.write('{"data":{', 'latin1')
  for (const [i, m] of matches.entries()) {
    at += bytes.write(`${i === 0 ? '' : ','}"${m.hash}":`, at, 'latin1')
    at += m.body.copy(bytes, at)
  }
  bytes.write('}}', at, 'latin1')
  return createBody(bytes)
}

/**
 * What a bulk hash lookup's answer is made of, kept in the static cache under the query's exact
 * text (answerCacheKey 'hashes'): references to the cache entries of the single lookups it splices
 * (refOf), the text between them (`bytes`, with `ends`), and the answer's derived ETag (`etag`). A
 * repeat of the request is answered from it without parsing the query, looking up 100 keys,
 * building the text or hashing it. An entry's body never changes (the cache never replaces one; it
 * only lets go of it when the entry leaves), so a reference yields the very body the ETag was
 * derived from, or nothing, and then the plan is made again. Bodies are not held by a plan.
 */
interface SplicePlan extends KeptBody {
  refs: KeptRef[]
  ends: number[]
  heapBytes: number
}

/**
 * VersionsByHash `{"data":{"<hash>":<Version>,...}}` spliced from single lookups'
 * `{"data":<Version>}` bodies (the same bytes as everywhere else, no re-serialising), in the order
 * given; hashes are lowercase hex. The text between the versions is made as one string and one
 * buffer (a Buffer per hash cost a native call each), and the ETag is derived from the hashes and
 * the bodies' own ETags (createDerivedBodyParts), not from the 100 KB of bytes. Returns the plan of
 * the answer too (SplicePlan).
 */
function spliceVersionsByHash(hashes: readonly string[], bodies: readonly Body[], releaseId: string): { answer: BodyParts; between: Buffer; ends: number[] } {
  let text = ''
  const ends: number[] = []
  for (const [i, hash] of hashes.entries()) {
    text += `${i === 0 ? '{"data":{' : ','}"${hash}":`
    ends.push(text.length)
  }
  text += hashes.length === 0 ? '{"data":{}}' : '}}'
  // Hex hashes and ASCII punctuation: one byte per character.
  const between = Buffer.from(text, 'latin1')
  const spliced = spliceParts(between, ends, (i) => bodies[i], releaseId, hashes)!
  // The text between the versions names the hashes in order, and has no line break; each body's
  // ETag (quoted, no line break either) follows on a line of its own.
  const identity = ['VersionsByHash\n', between, `\n${bodies.map((b) => b.etag).join('\n')}`]
  return { answer: createDerivedBodyParts(spliced, identity), between, ends }
}

/**
 * The parts of a VersionsByHash answer: the text between the versions (`between`, cut at `ends`)
 * and, in turn, the `{"data":<Version>}` bytes of each single lookup `bodyAt` gives, spliced in
 * whole with their wrapper trimmed (Splice); undefined when it gives none for one of them (a plan's
 * body that left the cache). `hashes` name the bodies in the error of a broken release (their ETags
 * otherwise).
 */
function spliceParts(
  between: Buffer,
  ends: readonly number[],
  bodyAt: (i: number) => Body | undefined,
  releaseId: string,
  hashes?: readonly string[],
): { parts: Splice; length: number } | undefined {
  const n = ends.length
  const pieces = new Array<Uint8Array>(n)
  let length = between.length
  for (let i = 0; i < n; i++) {
    const body = bodyAt(i)
    if (body === undefined) return undefined
    if (body instanceof SingleLookupBody) {
      pieces[i] = body.bytes
      length += body.byteLength - WRAPPER_BYTES
    } else {
      pieces[i] = wrappedData(body, releaseId, hashes?.[i] ?? body.etag)
      length += body.bytes.length - WRAPPER_BYTES
    }
  }
  return { parts: new Splice(between, ends, pieces, DATA_PREFIX.length, CLOSE_BRACE.length), length }
}

/**
 * What a plan adds to the heap beyond its bytes, per body: two array slots (8 bytes each, a number
 * boxed up to 16 more) and the entry it refers to once that has left the cache (about 40 bytes).
 */
const PLAN_HEAP_BYTES_PER_BODY = 8 + 24 + 40

/** The answer a plan describes, from the bodies in the cache now: undefined when one of them left it. */
function answerFromPlan(cache: StaticCache, plan: SplicePlan, releaseId: string): BodyParts | undefined {
  const spliced = spliceParts(plan.bytes, plan.ends, (i) => cache.hit!(plan.refs[i]!), releaseId)
  return spliced && { etag: plan.etag, ...spliced }
}

const DATA_PREFIX = Buffer.from('{"data":')
const CLOSE_BRACE = Buffer.from('}')
/** The bytes of a single lookup's `{"data":<Version>}` around its `<Version>`. */
const WRAPPER_BYTES = DATA_PREFIX.length + CLOSE_BRACE.length

/**
 * A single lookup's body made here from SQL's answer (singleLookupOf): it is `{"data":<Version>}`
 * by construction, so it is spliced without reading the wrapper. Checking the wrapper read each
 * body's first and last bytes, two cache misses a hash, about 0.7 µs a hash of a one-off bulk lookup
 * (bench/results/PROFILE.md, Session 17). A body the static path read from its file is of another
 * class and is checked (wrappedData).
 *
 * One class, so every such body has one hidden class. Made as `{ ...createBody(bytes), wrapped:
 * true }` and copied again by the cache (ownBytes' spread), they came in about seven, and the loads
 * of their fields in spliceParts and spliceVersionsByHash went megamorphic: V8's global stub cache,
 * missed and refilled through the runtime (bench/results/PROFILE.md, Session 23). `byteLength` is
 * that of `bytes`, read once. `bytes` is at first a view of the query's one BLOB; the cache asks
 * for a copy of its own (owned) only for what it keeps, so with the cache off nothing is copied.
 */
class SingleLookupBody implements OwnableBody {
  readonly bytes: Buffer
  readonly etag: string
  readonly byteLength: number
  constructor(bytes: Buffer, etag: string) {
    this.bytes = bytes
    this.etag = etag
    this.byteLength = bytes.length
  }

  /** The same body with bytes of its own (for the cache: ownBytes). */
  owned(): SingleLookupBody {
    const own = Buffer.allocUnsafeSlow(this.byteLength)
    this.bytes.copy(own)
    return new SingleLookupBody(own, this.etag)
  }
}

/**
 * A single lookup's `{"data":<Version>}` bytes as SQL made them (findSingleLookupsByHashes or
 * findSingleLookupsByRowids): a view of the query's one BLOB, with the ETag the catalog stored for
 * them (versions.body_etag), or else the one their bytes have.
 */
function singleLookupOf(bytes: Buffer, etag: string | undefined): SingleLookupBody {
  return new SingleLookupBody(bytes, etag ?? createBody(bytes).etag)
}

/**
 * VersionsByHash of the hashes: a hash whose single lookup (`/version-files/{hash}`, pre-rendered as
 * `{"data":<Version>}`) is in the static cache is spliced from those bytes; the others are found in
 * one SQL batch (findSingleLookupsByHashes: the rule the build rendered those files by, so its Version
 * JSON wrapped as `{"data":...}` is the file's exact bytes) and kept in the cache under their single
 * lookup's path for the next request. At the large catalog a hash through SQLite costs about 30 µs
 * of CPU, most of it B-tree pages copied in by pread, and a cached one a few µs
 * (bench/results/PROFILE.md); reading the files instead cost more than SQLite (about 130 µs each
 * through fs.promises). The bulk lookup is tested against the single one, cold and warm.
 */
async function renderVersionsByHash(ctx: RouteInput['ctx'], hashes: readonly string[]): Promise<{ answer: BodyParts; plan: SplicePlan | undefined }> {
  const { cache } = ctx
  const generation = cache.generation
  // A single lookup is kept under its bare hash (the cache's keyOf), which the query's reading has
  // hashed for the Map already: no `/api/v1/version-files/<hash>` made per hash. One lookup a hash:
  // the entry's reference, for the plan, and its body through it. One loop and arrays of the
  // list's length, so a list whose hashes are all kept allocates nothing per hash.
  const n = hashes.length
  const refs = new Array<KeptRef | undefined>(n)
  const bodies = new Array<Body | undefined>(n)
  const missing: string[] = []
  for (let i = 0; i < n; i++) {
    const ref = cache.refOf?.(hashes[i]!)
    const body = ref === undefined ? undefined : cache.hit?.(ref)
    refs[i] = ref
    bodies[i] = body
    if (body === undefined) missing.push(hashes[i]!)
  }
  let known = n - missing.length
  if (missing.length > 0) {
    const found = await findSingleLookups(ctx.release, missing)
    for (let i = 0; i < n; i++) {
      const hash = hashes[i]!
      const lookup = bodies[i] === undefined ? found.get(hash) : undefined
      if (lookup === undefined) continue
      const rendered = singleLookupOf(lookup.body, lookup.etag)
      bodies[i] = cache.put?.(hash, rendered, generation) ?? rendered
      refs[i] = cache.refOf?.(hash)
      known++
    }
  }
  // The hashes found, in the order asked: most often all of them, and then the arrays as they are.
  const all = known === n
  const { answer, between, ends } = spliceVersionsByHash(
    all ? hashes : hashes.filter((_, i) => bodies[i] !== undefined),
    (all ? bodies : bodies.filter((b) => b !== undefined)) as Body[],
    ctx.release.id,
  )
  const knownRefs = all ? refs : refs.filter((_, i) => bodies[i] !== undefined)
  // A plan only when every body is kept (not when the cache had no room or a release went live).
  const plan: SplicePlan | undefined = knownRefs.every((r) => r !== undefined)
    ? { bytes: between, etag: answer.etag, refs: knownRefs as KeptRef[], ends, heapBytes: 256 + PLAN_HEAP_BYTES_PER_BODY * knownRefs.length }
    : undefined
  return { answer, plan }
}

/** The bytes of a single lookup's `{"data":<Version>}` body, checked; anything else is a broken release. */
function wrappedData(body: Body, releaseId: string, what: string): Buffer {
  const bytes = body.bytes
  // Byte by byte in JavaScript: Buffer.compare's native call was 7% of a bulk lookup.
  let ok = bytes.length > DATA_PREFIX.length && bytes[bytes.length - 1] === 0x7d
  for (let i = 0; ok && i < DATA_PREFIX.length; i++) ok = bytes[i] === DATA_PREFIX[i]
  if (!ok) throw new Error(`release ${releaseId}: a single lookup (${what}) is not a {"data":...} body`)
  return bytes
}

/**
 * Which of a hash's candidate versions (the hash index's, newest first) holds it: the index in
 * `rowids` of the first whose JSON (`jsonOf`, from byte `from` on) holds the hash's holder text, or
 * -1 when none does (a made-up hash with a real file's prefix). The one rule of hash lookups and
 * update matching alike (build/hash-index.ts).
 */
function firstHolder(rowids: readonly number[], jsonOf: (rowid: number) => Buffer | undefined, hash: string, from: number): number {
  for (let c = 0; c < rowids.length; c++) {
    const json = jsonOf(rowids[c]!)
    if (json !== undefined && holdsHash(json, hash, from)) return c
  }
  return -1
}

/**
 * The single lookups `{"data":<Version>}` of these hashes, by hash; unknown hashes left out. Through
 * the catalog's hash index (build/hash-index.ts): a hash it holds no prefix of runs no query, and the
 * others' candidate versions are read by rowid in one batch (findSingleLookupsByRowids), the first
 * whose JSON holds the hash being its single lookup (the candidates come newest first). A catalog
 * without the index finds them through the files' hash indexes (findSingleLookupsByHashes).
 */
async function findSingleLookups(release: Release, hashes: readonly string[]): Promise<Map<string, RowidLookup>> {
  const index = release.hashIndex
  if (index === undefined) {
    return new Map((await findSingleLookupsByHashes(release.db, hashes, release.filesVersionRowid)).map((m) => [m.hash, { body: m.body, etag: undefined }]))
  }
  const candidates = candidatesOfHashes(index, hashes)
  const rowids = [...new Set(candidates.flat())]
  const found = new Map<string, RowidLookup>()
  if (rowids.length === 0) return found
  const versions = await findSingleLookupsByRowids(release.db, rowids, release.versionsBodyEtag)
  const bodyOf = (rowid: number): Buffer | undefined => versions.get(rowid)?.body
  for (const [i, hash] of hashes.entries()) {
    const rowids = candidates[i]!
    const holder = firstHolder(rowids, bodyOf, hash, DATA_PREFIX.length)
    if (holder >= 0) found.set(hash, versions.get(rowids[holder]!)!)
  }
  return found
}

/**
 * The hashes the catalog's hash index does not rule out (build/hash-index.ts), in order; all of them
 * for a catalog without one. A hash it rules out is not a file of the catalog, so no query is run
 * for it: a lookup whose other hashes are kept in memory then runs none.
 */
function possiblyKnown(release: Release, hashes: readonly string[]): readonly string[] {
  const index = release.hashIndex
  return index === undefined ? hashes : possiblyKnownHashes(index, hashes)
}

/**
 * Update matching: for each hash, the newest version of its file's project that matches the filters;
 * left out when none does or the hash is no file of the catalog. Single and bulk update checks both
 * come here, so they agree on every input.
 *
 * With the catalog's hash index (build/hash-index.ts) and version targets (build/version-targets.ts),
 * the answer is worked out in memory before anything is read, and at most one query reads JSON:
 * 1. the index gives each hash's candidate versions (none: no file of the catalog);
 * 2. for each candidate, the targets give the newest matching version of its project (newestMatching);
 * 3. a hash none of whose candidates' projects has a matching version is left out: unread and
 *    unchecked, as whichever candidate held it, the answer would be none. An update check whose
 *    filters no project of its files meets runs no query at all;
 * 4. for the others, one query reads by rowid the JSON of their candidates and of those newest
 *    versions (findVersionsByRowids; most often the same row, when the installed file is the newest);
 * 5. a hash takes the answer of its first candidate whose JSON holds it (firstHolder), as a hash
 *    lookup does: a 32-bit prefix names candidates, it does not prove one. A made-up hash with a real
 *    file's prefix is held by none, and left out.
 *
 * At the large catalog, finding each file's version through the covering files_sha256 and
 * files_sha1 indexes (Session 25's first step) was about 300 µs of SQLite's CPU of a 100-hash check;
 * most of the bench's checks find an update for about 13 of their hashes, and their rows are all
 * this reads (bench/results/PROFILE.md, Session 26). The build rejects a file shared by two
 * projects, so every version holding a hash is of one project, and which of them holds it does not
 * change the answer. A catalog built before either table walks each project's versions in SQL
 * (findUpdatesByHashes); test/version-targets.test.ts compares the two.
 */
async function findUpdates(release: Release, hashes: readonly string[], filters: VersionFilters): Promise<HashLookup[]> {
  const index = release.hashIndex
  const targets = release.versionTargets
  if (index === undefined || targets === undefined) {
    const known = possiblyKnown(release, hashes)
    return known.length === 0 ? [] : findUpdatesByHashes(release.db, known, filters)
  }
  const candidates = candidatesOfHashes(index, hashes)
  const filter = compileTargetFilter(targets, filters)
  const newest = candidates.map((rowids) => rowids.map((rowid) => newestMatching(targets, filter, rowid)))
  const wanted = new Set<number>()
  const open: number[] = []
  for (let i = 0; i < hashes.length; i++) {
    const answers = newest[i]!
    if (!answers.some((rowid) => rowid !== 0)) continue
    open.push(i)
    for (const rowid of candidates[i]!) wanted.add(rowid)
    for (const rowid of answers) if (rowid !== 0) wanted.add(rowid)
  }
  if (open.length === 0) return []
  const versions = await findVersionsByRowids(release.db, [...wanted])
  const found: HashLookup[] = []
  const jsonOf = (rowid: number): Buffer | undefined => versions.get(rowid)
  for (const i of open) {
    const hash = hashes[i]!
    const holder = firstHolder(candidates[i]!, jsonOf, hash, 0)
    const rowid = holder < 0 ? 0 : newest[i]![holder]!
    if (rowid === 0) continue
    const body = versions.get(rowid)
    if (body === undefined) throw new Error(`release ${release.id}: the version targets name version rowid ${rowid}, which its catalog does not hold`)
    found.push({ hash, body })
  }
  return found
}

/**
 * Reads the `{hash}` path parameter (lowercased). A malformed hash is a 422 naming `hash` rather
 * than a 404: it can never name a file, and the client learns its input is wrong, not missing.
 * An `algorithm` that disagrees with the hash length is a 422 too (DESIGN "Hashes").
 */
function readPathHash(raw: string, algorithm: z.output<typeof algorithmParam> | undefined): string {
  const parsed = hashParam.safeParse(raw)
  if (!parsed.success) throw validationFailed([{ path: 'hash', message: parsed.error.issues[0]?.message ?? 'is not a valid hash' }])
  const length = algorithm === 'sha1' ? 40 : 64
  if (algorithm && parsed.data.length !== length) {
    throw validationFailed([{ path: 'hash', message: `is not a ${algorithm} hash (${length} hex characters) as algorithm says` }])
  }
  return parsed.data
}

/**
 * A bulk query's hashes, each once, and its other parameters (`others`: the endpoint's schema without
 * `hashes`). A plain list of lowercase hashes, as mod managers send it, is read without
 * URLSearchParams and zod (readPlainHashQuery); any other query, and every problem, through `whole`.
 */
function readHashQuery<O extends z.ZodObject>(search: string, others: O, whole: z.ZodObject): { hashes: string[]; rest: z.output<O> } {
  const plain = readPlainHashQuery(search, MAX_BULK_HASHES, others)
  if (plain) return plain
  const query = readQuery(search, whole) as { hashes: string[] } & z.output<O>
  return { hashes: uniqueHashes(query.hashes), rest: query }
}

/**
 * Each hash once, in the order first asked. The query's hashes are already lowercase (hashParam), so
 * two spellings of a hash, which differ only in case, are the same string here.
 */
function uniqueHashes(hashes: readonly string[]): string[] {
  return [...new Set(hashes)]
}

/** GET /version-files/{hash}: the newest version containing the file, as pre-rendered for its lowercase hash. */
async function handleVersionFile(input: RouteInput): Promise<void> {
  const { algorithm } = readQuery(input.search, versionFileQuerySchema)
  const hash = readPathHash(input.params.hash!, algorithm)
  if (possiblyKnown(input.ctx.release, [hash]).length === 0) throw notFound(`File with hash ${hash}`)
  await sendStatic(input, `/version-files/${hash}`, `File with hash ${hash}`)
}

/**
 * GET /version-files?hashes=: VersionsByHash of the files; unknown hashes left out. A request asked
 * before in this release is answered from its plan (SplicePlan) while the bodies it splices are
 * kept; otherwise the query is read and the answer made, and its plan is kept from the second time
 * the request is asked (StaticCache.admit).
 */
async function handleVersionFiles(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const { cache } = ctx
  // No key is made for a store that keeps nothing (CACHE_BYTES=0, a snapshot): it has no get.
  const key = cache.get === undefined ? undefined : answerCacheKey('hashes', input.search)
  const plan = key === undefined ? undefined : (cache.get?.(key) as SplicePlan | undefined)
  const kept = plan && answerFromPlan(cache, plan, ctx.release.id)
  if (kept) return sendBodyParts(event, kept, mutableCacheControl(ctx))
  const generation = cache.generation
  const { hashes } = readHashQuery(input.search, versionFilesOtherParamsSchema, versionFilesQuerySchema)
  const made = await renderVersionsByHash(ctx, hashes)
  // A plan with a body that left the cache is replaced by one that refers to the entries kept now;
  // a request asked for the first time is only noted (admit), and its plan kept when it comes again.
  if (key !== undefined) {
    if (plan && cache.get?.(key) === plan) cache.drop?.(key)
    if (made.plan && (plan !== undefined || cache.admit?.(key) === true)) cache.put?.(key, made.plan, generation)
  }
  sendBodyParts(event, made.answer, mutableCacheControl(ctx))
}

/**
 * An update-matching answer through the static cache: a request asked before in this release is
 * answered with the body kept for it, without SQLite; otherwise `make` runs the query, and its body
 * is offered to the cache the second time it is asked (StaticCache.admit; not when a release swap
 * happened meanwhile: the cache's generation), which keeps it when it is asked more often than what
 * it would evict. A mod manager checking a modpack sends the same hashes and filters as
 * every other user of that modpack, so the same request comes again and again, while a one-off list
 * of installed files would only take the place of answers that are asked for. The entries share CACHE_BYTES and its eviction (W-TinyLFU) with the
 * static bodies (their memory is bounded by the same limit, ENTRY_OVERHEAD_BYTES included), they are
 * dropped with them when a new release goes live, and with CACHE_BYTES=0 every request runs its
 * query (bench/results/serve.md measures both). Only answers are kept: a request `make` refuses
 * (422) or finds nothing for (a single file without an update: 404) throws, and runs again when
 * asked again.
 */
async function cachedUpdate(ctx: RouteInput['ctx'], kind: 'update' | 'updates', target: string, make: () => Promise<Body>): Promise<Body> {
  const { cache } = ctx
  // A store that keeps nothing (CACHE_BYTES=0, a snapshot) has no get: no key is made for it.
  if (cache.get === undefined) return await make()
  const key = answerCacheKey(kind, target)
  const kept = cache.get(key)
  if (kept !== undefined) return kept
  const generation = cache.generation
  const body = await make()
  // Kept when asked again (admit): a one-off check would only evict what others ask for.
  return cache.admit?.(key) === true ? (cache.put?.(key, body, generation) ?? body) : body
}

/** GET /version-files/{hash}/update: the newest matching version of the file's project; 404 when none. */
async function handleVersionFileUpdate(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const rawHash = input.params.hash!
  const body = await cachedUpdate(ctx, 'update', JSON.stringify([rawHash, input.search]), async () => {
    const query = readQuery(input.search, versionFileUpdateQuerySchema)
    const hash = readPathHash(rawHash, query.algorithm)
    const [match] = await findUpdates(ctx.release, [hash], query)
    if (!match) throw notFound(`An update of the file with hash ${hash}`)
    return createBody(Buffer.concat([DATA_PREFIX, match.body, CLOSE_BRACE]))
  })
  sendBody(event, body, mutableCacheControl(ctx))
}

/** GET /version-files/update?hashes=: VersionsByHash of each file's update; no match left out. */
async function handleVersionFilesUpdate(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const body = await cachedUpdate(ctx, 'updates', input.search, async () => {
    const { hashes, rest } = readHashQuery(input.search, versionFilesUpdateOtherParamsSchema, versionFilesUpdateQuerySchema)
    return renderVersionsByHashBody(await findUpdates(ctx.release, hashes, rest))
  })
  sendBody(event, body, mutableCacheControl(ctx))
}

/** The version-files routes (literal paths first: `update` is not a hash). */
export const versionFilesRoutes: Route[] = [
  { pattern: ['version-files'], handler: handleVersionFiles },
  { pattern: ['version-files', 'update'], handler: handleVersionFilesUpdate },
  { pattern: ['version-files', ':hash'], handler: handleVersionFile },
  { pattern: ['version-files', ':hash', 'update'], handler: handleVersionFileUpdate },
]
