/**
 * Seeded pseudo-random numbers for the catalog generator. Never Math.random: the same seed must
 * write byte-identical catalogs.
 */

/** A seeded stream of numbers in [0, 1) with the helpers the generator needs. */
export type Random = {
  next: () => number
  int: (min: number, max: number) => number
  chance: (p: number) => boolean
  pick: <T>(items: readonly T[]) => T
  pickWeighted: <T>(items: readonly (readonly [T, number])[]) => T
  normal: () => number
}

/** Hashes a string into four 32-bit words (cyrb128); used to seed sfc32. */
export function hashString(text: string): [number, number, number, number] {
  let h1 = 1779033703
  let h2 = 3144134277
  let h3 = 1013904242
  let h4 = 2773480762
  for (let i = 0; i < text.length; i++) {
    const k = text.charCodeAt(i)
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067)
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233)
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213)
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179)
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067)
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233)
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213)
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179)
  h1 ^= h2 ^ h3 ^ h4
  h2 ^= h1
  h3 ^= h1
  h4 ^= h1
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0]
}

/** Mixes 32-bit words into one well-distributed 32-bit word (murmur3 finaliser). */
export function mixHash(a: number, b: number, c = 0): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35) ^ Math.imul(c + 0x165667b1, 0x27d4eb2f)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

/** A number in [0, 1) fixed by (key, salt, index): lets a record's traits be re-derived without storing them. */
export function hashUnit(key: number, salt: number, index: number): number {
  return mixHash(key, salt, index) / 4294967296
}

/** Creates a sfc32 generator seeded from a string. */
export function createRandom(seed: string): Random {
  let [a, b, c, d] = hashString(seed)
  const next = (): number => {
    a >>>= 0
    b >>>= 0
    c >>>= 0
    d >>>= 0
    let t = (a + b) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    d = (d + 1) | 0
    t = (t + d) | 0
    c = (c + t) | 0
    return (t >>> 0) / 4294967296
  }
  for (let i = 0; i < 12; i++) next()
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1))
  const pick = <T>(items: readonly T[]): T => {
    if (items.length === 0) throw new Error('pick from an empty list')
    return items[Math.floor(next() * items.length)] as T
  }
  const pickWeighted = <T>(items: readonly (readonly [T, number])[]): T => {
    let total = 0
    for (const [, weight] of items) total += weight
    let r = next() * total
    for (const [item, weight] of items) {
      r -= weight
      if (r < 0) return item
    }
    return pick(items)[0]
  }
  const normal = (): number => {
    const u = 1 - next()
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next())
  }
  return { next, int, chance: (p) => next() < p, pick, pickWeighted, normal }
}

/** Picks `count` distinct items (fewer if the list is shorter), in list order. */
export function pickSome<T>(rng: Random, items: readonly T[], count: number): T[] {
  if (count >= items.length) return [...items]
  const chosen = new Set<number>()
  while (chosen.size < count) chosen.add(Math.floor(rng.next() * items.length))
  return [...chosen].sort((x, y) => x - y).map((i) => items[i] as T)
}
