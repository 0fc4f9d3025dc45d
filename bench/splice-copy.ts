/**
 * A micro-benchmark of how a bulk hash lookup's answer is copied into its buffer
 * (shim/respond.ts Splice), against the views it was made of before Session 54: 100
 * `{"data":<Version>}` bodies of 0.6–1.5 KB drawn at random from 100,000 (so most are not in the
 * CPU's caches, as in the shim's static cache at the large catalog), the text between them made as
 * shim/routes/version-files.ts makes it, alternated in one process over 40 rounds of 500 answers.
 * Prints the median µs an answer of each (the first four rounds left out as the JIT's).
 *
 *   npx vite-node bench/splice-copy.ts
 */
import { randomBytes } from 'node:crypto'
import { Splice } from '../shim/respond.ts'
import { median } from './stats.ts'

const BODIES = 100_000
const PER_ANSWER = 100
const PREFIX = Buffer.from('{"data":')

/** A kept single lookup as the route's class holds it, with the fields the views were made from. */
class Kept {
  readonly bytes: Buffer
  readonly memory: ArrayBuffer
  readonly offset: number
  readonly byteLength: number
  constructor(bytes: Buffer) {
    this.bytes = bytes
    this.memory = bytes.buffer as ArrayBuffer
    this.offset = bytes.byteOffset
    this.byteLength = bytes.length
  }
  version(): Uint8Array {
    return new Uint8Array(this.memory, this.offset + PREFIX.length, this.byteLength - PREFIX.length - 1)
  }
}

const bodies: Kept[] = []
for (let i = 0; i < BODIES; i++) {
  const length = 600 + Math.floor(Math.random() * 900)
  const bytes = Buffer.allocUnsafeSlow(length + PREFIX.length + 1)
  PREFIX.copy(bytes)
  bytes.fill(0x61, PREFIX.length, bytes.length - 1)
  bytes[bytes.length - 1] = 0x7d
  bodies.push(new Kept(bytes))
}
const hashes = Array.from({ length: 5000 }, () => randomBytes(32).toString('hex'))
const draws = Array.from({ length: 2000 }, () => Array.from({ length: PER_ANSWER }, () => Math.floor(Math.random() * BODIES)))
const out = Buffer.allocUnsafeSlow(256 * 1024)

function textOf(q: number): { between: Buffer; ends: number[] } {
  let text = ''
  const ends: number[] = []
  for (let i = 0; i < PER_ANSWER; i++) {
    text += `${i === 0 ? '{"data":{' : ','}"${hashes[(q * PER_ANSWER + i) % hashes.length]}":`
    ends.push(text.length)
  }
  text += '}}'
  return { between: Buffer.from(text, 'latin1'), ends }
}

/** Before: a view of the text before each body and of each body's `<Version>`, each `set` in turn. */
function views(draw: readonly number[], q: number): number {
  const { between, ends } = textOf(q)
  const parts = new Array<Uint8Array>(2 * PER_ANSWER + 1)
  let at = 0
  for (let i = 0; i < PER_ANSWER; i++) {
    parts[2 * i] = new Uint8Array(between.buffer, between.byteOffset + at, ends[i]! - at)
    parts[2 * i + 1] = bodies[draw[i]!]!.version()
    at = ends[i]!
  }
  parts[2 * PER_ANSWER] = new Uint8Array(between.buffer, between.byteOffset + at, between.length - at)
  let o = 0
  for (const part of parts) {
    out.set(part, o)
    o += part.length
  }
  return out[o >> 1]!
}

/** After: the bodies whole, the text copied over their wrappers (Splice). */
function spliced(draw: readonly number[], q: number): number {
  const { between, ends } = textOf(q)
  const pieces = new Array<Uint8Array>(PER_ANSWER)
  let length = between.length
  for (let i = 0; i < PER_ANSWER; i++) {
    const body = bodies[draw[i]!]!
    pieces[i] = body.bytes
    length += body.byteLength - PREFIX.length - 1
  }
  new Splice(between, ends, pieces, PREFIX.length, 1).copyInto(out, length)
  return out[length >> 1]!
}

const times: Record<'views' | 'spliced', number[]> = { views: [], spliced: [] }
let sink = 0
for (let round = 0; round < 40; round++) {
  const order = round % 2 === 0 ? (['spliced', 'views'] as const) : (['views', 'spliced'] as const)
  for (const name of order) {
    const fn = name === 'views' ? views : spliced
    const t0 = process.hrtime.bigint()
    for (let k = 0, q = (round * 50) % draws.length; k < 500; k++, q = (q + 1) % draws.length) sink += fn(draws[q]!, q)
    times[name].push(Number(process.hrtime.bigint() - t0) / 500 / 1000)
  }
}
/** The median of the rounds after the first four (the JIT's). */
const settled = (values: number[]): number => median(values.slice(4))
console.log(`views ${settled(times.views).toFixed(1)} µs, spliced ${settled(times.spliced).toFixed(1)} µs an answer of ${PER_ANSWER} bodies (median of 36 alternated rounds of 500)`)
if (sink < 0) console.log(sink)
