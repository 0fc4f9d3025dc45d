/**
 * Project names/slugs and usernames that are unique by construction: the n-th name of a kind is a
 * permutation of n decoded into one word per list, plus a numeric suffix once the lists run out.
 * Nothing has to be remembered to avoid duplicates, so memory stays flat.
 */
import type { ProjectType } from './reference.ts'
import { hashString } from './random.ts'
import {
  adjectives,
  mapKinds,
  mapPlaces,
  modKinds,
  modTopics,
  skinCharacters,
  skinKinds,
  userFirst,
  userSecond,
} from './words.ts'

/** A name composed of word lists, and how the n-th one is chosen. */
export type NameScheme = { lists: readonly (readonly string[])[]; size: number; multiplier: number; offset: number }

/** Word lists of each project type; the last lists are disjoint across types, so slugs never collide across types. */
const projectLists: Record<ProjectType, readonly (readonly string[])[]> = {
  mod: [adjectives, modTopics, modKinds],
  map: [adjectives, mapPlaces, mapKinds],
  skin: [adjectives, skinCharacters, skinKinds],
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/** Creates the permutation over the lists' combinations for one seed. */
export function createNameScheme(seed: string, salt: string, lists: readonly (readonly string[])[]): NameScheme {
  const size = lists.reduce((n, list) => n * list.length, 1)
  const [h1, h2] = hashString(`${seed}\u0000names\u0000${salt}`)
  let multiplier = Math.floor(size * 0.618) + (h1 % 997)
  while (gcd(multiplier, size) !== 1) multiplier++
  return { lists, size, multiplier, offset: h2 % size }
}

/** Creates the name schemes of the three project types. */
export function createProjectNameSchemes(seed: string): Record<ProjectType, NameScheme> {
  const last = [modKinds, mapKinds, skinKinds].flat()
  if (new Set(last).size !== last.length) throw new Error('kind word lists must be disjoint across project types')
  return {
    mod: createNameScheme(seed, 'mod', projectLists.mod),
    map: createNameScheme(seed, 'map', projectLists.map),
    skin: createNameScheme(seed, 'skin', projectLists.skin),
  }
}

/** Decodes the n-th combination: its words and how many times the lists wrapped around. */
export function getNameWords(scheme: NameScheme, ordinal: number): { words: string[]; round: number } {
  const round = Math.floor(ordinal / scheme.size)
  let rest = ((ordinal % scheme.size) * scheme.multiplier + scheme.offset) % scheme.size
  const words: string[] = []
  for (const list of scheme.lists) {
    words.push(list[rest % list.length] as string)
    rest = Math.floor(rest / list.length)
  }
  return { words, round }
}

/** Renders the n-th project name of a type and its slug (always with a hyphen, so never equal to an id). */
export function renderProjectName(scheme: NameScheme, ordinal: number): { name: string; slug: string; words: string[] } {
  const { words, round } = getNameWords(scheme, ordinal)
  const suffix = round > 0 ? ` ${round + 1}` : ''
  const name = words.join(' ') + suffix
  return { name, slug: name.toLowerCase().replaceAll(' ', '-'), words }
}

/** Creates the username scheme for a seed. */
export function createUserNameScheme(seed: string): NameScheme {
  const joined = userFirst.flatMap((first) => userSecond.map((second) => first + second))
  if (new Set(joined).size !== joined.length) throw new Error('username words must not concatenate ambiguously')
  return createNameScheme(seed, 'user', [userFirst, userSecond, ['_', '-', '']])
}

/** Renders the n-th username and display name; the separator and suffix keep every username distinct. */
export function renderUserName(scheme: NameScheme, ordinal: number): { username: string; name: string } {
  const { words, round } = getNameWords(scheme, ordinal)
  const [first, second, sep] = words as [string, string, string]
  const suffix = round > 0 ? String(round) : ''
  const username = `${first}${sep}${second}${suffix}`
  const name = `${first[0]?.toUpperCase()}${first.slice(1)} ${second[0]?.toUpperCase()}${second.slice(1)}${suffix}`
  return { username, name }
}
