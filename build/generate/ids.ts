/**
 * Record ids of generated catalogs: a keyed Feistel permutation of a per-kind counter, written
 * as 8 base62 characters. A permutation is a bijection, so distinct counters can never collide,
 * yet the ids look random (Modrinth-style `AANobbMI`) and change with the seed.
 */
import { hashString, mixHash } from './random.ts'

export const idKinds = ['project', 'version', 'file', 'user', 'screenshot'] as const
export type IdKind = (typeof idKinds)[number]

/** Round keys of one kind's permutation. */
export type IdKey = readonly [number, number, number, number]

const HALF_BITS = 23
const HALF = 2 ** HALF_BITS
const MASK = HALF - 1
/** Counters must stay below 2^46 (< 62^8, so every id has exactly 8 characters). */
export const MAX_ID_COUNTER = HALF * HALF
/** Versions of project `p` use counters `p * VERSION_SLOTS + k`, so any project's k-th version id can be re-derived. */
export const VERSION_SLOTS = 8192
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** Creates the round keys of one kind's permutation for a seed. */
export function createIdKey(seed: string, kind: IdKind): IdKey {
  return hashString(`${seed}\u0000id\u0000${kind}`)
}

/** Renders the id of a kind's `counter`-th record. */
export function renderId(key: IdKey, counter: number): string {
  if (!Number.isInteger(counter) || counter < 0 || counter >= MAX_ID_COUNTER) {
    throw new RangeError(`id counter out of range: ${counter}`)
  }
  let left = Math.floor(counter / HALF)
  let right = counter & MASK
  for (let round = 0; round < 4; round++) {
    const next = (left ^ (mixHash(right, key[round] as number, round) & MASK)) & MASK
    left = right
    right = next
  }
  let value = left * HALF + right
  let id = ''
  for (let i = 0; i < 8; i++) {
    id = ALPHABET[value % 62] + id
    value = Math.floor(value / 62)
  }
  return id
}
