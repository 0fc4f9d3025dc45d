/**
 * Reads a query string into validated parameters. Keys go into a null-prototype map (`__proto__`
 * is just a name); list parameters accept `a,b,c`, a JSON array of strings, or repeats; `loader`
 * is `platform`; a repeated scalar, a malformed list and every schema issue become one 422 listing
 * all problems. Unknown parameters are ignored.
 */
import type { z } from 'zod'
import { listParamNames, paramAliases } from '../build/schema/query.ts'
import { validationFailed } from './errors.ts'
import type { ErrorDetail } from './respond.ts'

const MAX_PARAMS = 64

/** Splits a raw query string into name → values (null prototype). */
export function parseSearch(search: string): Record<string, string[]> {
  const out = Object.create(null) as Record<string, string[]>
  if (search === '') return out
  let count = 0
  for (const [rawName, value] of new URLSearchParams(search)) {
    if (++count > MAX_PARAMS) break
    const name = paramAliases[rawName] ?? rawName
    const list = out[name]
    if (list) list.push(value)
    else out[name] = [value]
  }
  return out
}

/** Splits one list value: a JSON array of strings, or comma-separated values. */
function splitList(name: string, raw: string, problems: ErrorDetail[]): string[] {
  const trimmed = raw.trim()
  if (trimmed.startsWith('[')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(trimmed)
    } catch {
      problems.push({ path: name, message: 'is not a valid JSON array' })
      return []
    }
    if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) {
      problems.push({ path: name, message: 'must be a JSON array of strings' })
      return []
    }
    return (parsed as string[]).map((v) => v.trim()).filter((v) => v !== '')
  }
  return trimmed.split(',').map((v) => v.trim()).filter((v) => v !== '')
}

/** Validates a query string with an endpoint's schema; throws a 422 naming every problem. */
export function readQuery<S extends z.ZodObject>(search: string, schema: S): z.output<S> {
  return readParams(parseSearch(search), schema)
}

/** Validates a query string already split by parseSearch (readQuery). */
function readParams<S extends z.ZodObject>(params: Record<string, string[]>, schema: S): z.output<S> {
  const shape = schema.shape as Record<string, unknown>
  const input = Object.create(null) as Record<string, unknown>
  const problems: ErrorDetail[] = []
  for (const name of Object.keys(params)) {
    if (!(name in shape)) continue
    const values = params[name]!
    if (listParamNames.has(name)) {
      const seen = new Set<string>()
      for (const raw of values) for (const v of splitList(name, raw, problems)) seen.add(v)
      input[name] = [...seen]
    } else if (values.length > 1) {
      problems.push({ path: name, message: 'must be given once' })
    } else {
      input[name] = values[0]
    }
  }
  const result = schema.safeParse({ ...input })
  if (!result.success) {
    for (const issue of result.error.issues) {
      const path = issue.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('') || '(query)'
      problems.push({ path, message: issue.message })
    }
  }
  if (problems.length > 0) throw validationFailed(problems)
  return result.data as z.output<S>
}

/** `hashes=` and lowercase hex digits and commas only (each piece's length is checked after the split). */
const PLAIN_HASH_LIST = /^hashes=[0-9a-f,]+$/

/**
 * The hashes of a query that is nothing but `hashes=` and lowercase SHA-1s or SHA-256s separated by
 * commas, as mod managers send them: each once, in the order first given, exactly what readQuery
 * returns for it with versionFilesQuerySchema. Undefined for any other query (another parameter,
 * uppercase, percent-encoding, a JSON array, an empty value or an empty piece but for one comma
 * after the last hash, a piece of another length, more than `max` distinct hashes), which readQuery
 * reads, naming any problem. A micro-benchmark of 100 hashes: 33 µs, against 43 µs with one regular
 * expression checking each hash's length and 108–115 µs through readQuery (URLSearchParams, zod and
 * its regex per hash; bench/results/PROFILE.md, Sessions 18 and 19). One loop over the characters
 * instead took 36 µs against this 28 (Session 24).
 */
export function readPlainHashList(search: string, max: number): string[] | undefined {
  if (!PLAIN_HASH_LIST.test(search)) return undefined
  const pieces = search.slice('hashes='.length).split(',')
  // One comma after the last hash, as a list built with a trailing separator ends.
  if (pieces.length > 1 && pieces[pieces.length - 1] === '') pieces.pop()
  for (const piece of pieces) if (piece.length !== 40 && piece.length !== 64) return undefined
  const hashes = new Set(pieces)
  return hashes.size > max ? undefined : [...hashes]
}

/**
 * A query that starts with a plain hash list (readPlainHashList) and goes on with other parameters:
 * the hashes, and the rest read by readQuery with `others` (the endpoint's schema without `hashes`;
 * an `algorithm` there must agree with every hash's length). Update checks send their filters after
 * the hashes, and reading 100 hashes through zod cost 70–230 µs a request of CPU and garbage
 * (bench/results/PROFILE.md, Session 18). Undefined when the query has another form, names `hashes`
 * again after them, or has any problem: readQuery then reads it whole, so the answer and every 422
 * are the same as without this path.
 */
export function readPlainHashQuery<S extends z.ZodObject>(search: string, max: number, others: S): { hashes: string[]; rest: z.output<S> } | undefined {
  const amp = search.indexOf('&')
  const hashes = readPlainHashList(amp === -1 ? search : search.slice(0, amp), max)
  if (hashes === undefined) return undefined
  const tail = amp === -1 ? '' : search.slice(amp + 1)
  let rest: z.output<S>
  try {
    if (tail === '') rest = emptyQueryOf(others)
    else {
      // Split once: a repeated `hashes` declines, the rest is read from the same split.
      const params = parseSearch(tail)
      if ('hashes' in params) return undefined
      rest = readParams(params, others)
    }
  } catch {
    return undefined
  }
  const algorithm = (rest as { algorithm?: unknown }).algorithm
  if (algorithm !== undefined) {
    const length = algorithm === 'sha1' ? 40 : 64
    for (const h of hashes) if (h.length !== length) return undefined
  }
  return { hashes, rest }
}

/** What a schema reads from an empty query, read once per schema: a plain bulk lookup has no other parameter. */
const emptyQueries = new WeakMap<z.ZodObject, unknown>()
function emptyQueryOf<S extends z.ZodObject>(schema: S): z.output<S> {
  if (!emptyQueries.has(schema)) emptyQueries.set(schema, readQuery('', schema))
  return emptyQueries.get(schema) as z.output<S>
}
