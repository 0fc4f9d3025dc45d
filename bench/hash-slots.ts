/**
 * A micro-benchmark of the static cache's index of single hash lookups (shim/hash-slots.ts) against
 * the Map it stands in for: 100,000 entries under SHA-1 and SHA-256 hex keys (one in four SHA-256),
 * each with a body of 0.6–1.5 KB (about 100 MB, so most are not in the CPU's caches, as in the
 * shim's cache at the large catalog), and requests of 100 keys drawn at random, split from one query
 * string as readPlainHashList splits it (fresh strings each time). Each key is looked up, its entry
 * flagged as a hit does, and, in the first figure, its body copied into an answer buffer. The two
 * are alternated in one process; prints the median µs a request of each (the first two rounds left
 * out as the JIT's).
 *
 *   npx vite-node bench/hash-slots.ts
 */
import { randomBytes } from 'node:crypto'
import { createHashSlots } from '../shim/hash-slots.ts'

const ENTRIES = 100_000
const PER_REQUEST = 100
const REQUESTS = 3_000
const ROUNDS = 12

interface Entry {
  kept: { bytes: Buffer; etag: string } | undefined
  used: boolean
}

const keys: string[] = []
const entries: Entry[] = []
for (let i = 0; i < ENTRIES; i++) {
  keys.push(randomBytes(i % 4 === 0 ? 32 : 20).toString('hex'))
  const bytes = Buffer.allocUnsafeSlow(600 + Math.floor(Math.random() * 900)).fill(0x61)
  entries.push({ kept: { bytes, etag: `"${i}"` }, used: false })
}
// Inserted in another order than asked, as a cache fills.
const order = [...entries.keys()].sort(() => Math.random() - 0.5)
const map = new Map<string, Entry>()
const slots = createHashSlots<Entry>()
for (const i of order) {
  // Flat copies, as the cache's flatKey keeps.
  map.set(JSON.parse(JSON.stringify(keys[i])) as string, entries[i]!)
  slots.set(keys[i]!, entries[i]!)
}
const queries = Array.from({ length: REQUESTS }, () => Array.from({ length: PER_REQUEST }, () => keys[Math.floor(Math.random() * ENTRIES)]).join(','))
const out = Buffer.allocUnsafeSlow(256 * 1024)

/** µs a request: each key looked up (`get`), its entry flagged, and its body copied when `copy`. */
function run(get: (key: string) => Entry | undefined | null, copy: boolean): number {
  let copied = 0
  const started = process.hrtime.bigint()
  for (const query of queries) {
    let offset = 0
    for (const key of query.split(',')) {
      const entry = get(key)
      if (!entry?.kept) throw new Error(`${key} not found`)
      entry.used = true
      if (copy) offset += entry.kept.bytes.copy(out, offset)
    }
    copied += offset
  }
  if (copy && copied === 0) throw new Error('nothing copied')
  return Number(process.hrtime.bigint() - started) / 1000 / REQUESTS
}

const median = (values: number[]): string => {
  const sorted = values.slice(2).sort((a, b) => a - b)
  return sorted[sorted.length >> 1]!.toFixed(1)
}
const byMap = (key: string): Entry | undefined => map.get(key)
const bySlots = (key: string): Entry | undefined | null => slots.get(key)
for (const copy of [true, false]) {
  const times = { map: [] as number[], slots: [] as number[] }
  for (let round = 0; round < ROUNDS; round++) {
    times.map.push(run(byMap, copy))
    times.slots.push(run(bySlots, copy))
  }
  console.log(`${copy ? '100 lookups and copies' : '100 lookups'}: Map ${median(times.map)} µs, slots ${median(times.slots)} µs a request`)
}
