/** Deterministic randomness for workloads: a seeded PRNG and a Zipf sampler over ranks. */

/** A seeded PRNG returning floats in [0, 1) (mulberry32: small, fast, reproducible). */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * A sampler of ranks 0..n-1 with P(rank r) ∝ 1/(r+1)^s — the skew of real traffic, where a few
 * popular projects get most requests and the long tail still shows up.
 */
export function createZipf(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n)
  let sum = 0
  for (let r = 0; r < n; r++) cdf[r] = sum += 1 / Math.pow(r + 1, s)
  return () => {
    const x = random() * sum
    let lo = 0
    let hi = n - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (cdf[mid]! < x) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** Picks one element uniformly. */
export function pick<T>(items: readonly T[], random: () => number): T {
  const item = items[Math.floor(random() * items.length)]
  if (item === undefined) throw new Error('pick from an empty list')
  return item
}
