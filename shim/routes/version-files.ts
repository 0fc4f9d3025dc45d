/**
 * Routes of version files (SPEC.md §4 "Files and hash lookup"): identify installed files by hash
 * (single and bulk) and find their updates (single and bulk). Single and bulk update matching run
 * the same query (findUpdatesByHashes), so they agree on every input.
 */
import { createBody, renderRawBody, type Body } from '../../build/render/body.ts'
import type { z } from 'zod'
import {
  algorithmParam,
  hashParam,
  versionFileQuerySchema,
  versionFilesQuerySchema,
  versionFilesUpdateQuerySchema,
  versionFileUpdateQuerySchema,
} from '../../build/schema/query.ts'
import { mutableCacheControl } from '../app.ts'
import { notFound, validationFailed } from '../errors.ts'
import { sendStatic } from '../lookup.ts'
import { readQuery } from '../query.ts'
import { sendBody } from '../respond.ts'
import { findUpdatesByHashes, type HashMatch } from '../versions-query.ts'
import type { Route, RouteInput } from './index.ts'

/**
 * Serialises VersionsByHash `{ data: { <hash>: <Version>, ... } }` from stored Version JSON, so the
 * versions are the same bytes as everywhere else (no re-serialising). Hashes are lowercase hex.
 */
function renderVersionsByHashBody(matches: readonly HashMatch[]): Body {
  const entries = matches.map((m) => `${JSON.stringify(m.hash)}:${m.json}`)
  return createBody(Buffer.from(`{"data":{${entries.join(',')}}}`))
}

const DATA_PREFIX = Buffer.from('{"data":')

/**
 * VersionsByHash from the pre-rendered `/version-files/{hash}` bodies (`{"data":<Version>}`): the
 * build resolved every hash to its newest version by the rule of the single lookup, so the bulk
 * lookup splices those bytes — hot ones from the static cache, the others read from the release —
 * instead of running 100 SQLite lookups per request (about 3 ms of CPU at the large catalog, most of
 * it B-tree pages copied in by pread: bench/results/PROFILE.md). Unknown and hidden hashes have no
 * file and are left out. Hashes are validated lowercase hex, so each names a file safely.
 */
async function renderVersionsByHashFromFiles(ctx: RouteInput['ctx'], hashes: readonly string[]): Promise<Body> {
  const { cache, release } = ctx
  const bodies = await Promise.all(
    hashes.map((h) => {
      const url = `/api/v1/version-files/${h}`
      return cache.get?.(url) ?? cache.read(release.dir, url)
    }),
  )
  const parts: Buffer[] = [Buffer.from('{"data":{')]
  for (const [i, body] of bodies.entries()) {
    if (!body) continue
    const bytes = body.bytes
    // A pre-rendered single lookup is always `{"data":<Version>}`; anything else is a broken release.
    if (bytes.length <= DATA_PREFIX.length || bytes.compare(DATA_PREFIX, 0, DATA_PREFIX.length, 0, DATA_PREFIX.length) !== 0 || bytes[bytes.length - 1] !== 0x7d) {
      throw new Error(`release ${release.id}: /version-files/${hashes[i]} is not a {"data":...} body`)
    }
    parts.push(Buffer.from(`${parts.length > 1 ? ',' : ''}"${hashes[i]}":`), bytes.subarray(DATA_PREFIX.length, bytes.length - 1))
  }
  parts.push(Buffer.from('}}'))
  return createBody(Buffer.concat(parts))
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

/** Each hash once, in the order first asked (two spellings of a hash differ only in case). */
function uniqueHashes(hashes: readonly string[]): string[] {
  return [...new Set(hashes.map((h) => h.toLowerCase()))]
}

/** GET /version-files/{hash}: the newest version containing the file, as pre-rendered for its lowercase hash. */
async function handleVersionFile(input: RouteInput): Promise<void> {
  const { algorithm } = readQuery(input.search, versionFileQuerySchema)
  const hash = readPathHash(input.params.hash!, algorithm)
  await sendStatic(input, `/version-files/${hash}`, `File with hash ${hash}`)
}

/** GET /version-files?hashes=: VersionsByHash of the files; unknown hashes left out. */
async function handleVersionFiles(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, versionFilesQuerySchema)
  sendBody(event, await renderVersionsByHashFromFiles(ctx, uniqueHashes(query.hashes)), mutableCacheControl(ctx))
}

/** GET /version-files/{hash}/update: the newest matching version of the file's project; 404 when none. */
async function handleVersionFileUpdate(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, versionFileUpdateQuerySchema)
  const hash = readPathHash(input.params.hash!, query.algorithm)
  const [match] = await findUpdatesByHashes(ctx.release.db, [hash], query)
  if (!match) throw notFound(`An update of the file with hash ${hash}`)
  sendBody(event, renderRawBody(match.json), mutableCacheControl(ctx))
}

/** GET /version-files/update?hashes=: VersionsByHash of each file's update; no match left out. */
async function handleVersionFilesUpdate(input: RouteInput): Promise<void> {
  const { ctx, event } = input
  const query = readQuery(input.search, versionFilesUpdateQuerySchema)
  const matches = await findUpdatesByHashes(ctx.release.db, uniqueHashes(query.hashes), query)
  sendBody(event, renderVersionsByHashBody(matches), mutableCacheControl(ctx))
}

/** The version-files routes (literal paths first: `update` is not a hash). */
export const versionFilesRoutes: Route[] = [
  { pattern: ['version-files'], handler: handleVersionFiles },
  { pattern: ['version-files', 'update'], handler: handleVersionFilesUpdate },
  { pattern: ['version-files', ':hash'], handler: handleVersionFile },
  { pattern: ['version-files', ':hash', 'update'], handler: handleVersionFileUpdate },
]
