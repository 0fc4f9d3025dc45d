/**
 * sendBodyParts copies a multi-part answer (a bulk hash lookup's) into a buffer of a small pool and
 * sends it whole; the buffer goes back to the pool only once the response has been handed to the
 * kernel (shim/respond.ts). A Splice (pieces of other bodies, trimmed, in a text: a bulk lookup's
 * `{"data":<Version>}` bodies) is copied there whole, piece by piece, and must give the same bytes
 * as the trimmed pieces and the text concatenated, whatever their lengths. Here with a response whose `end` finishes when the test says so, as a
 * client that reads slowly makes a real one: the bytes of an answer still being sent are never
 * written over by the next answer. The answers' bytes through a real server are checked in
 * test/version-files.test.ts, many at once.
 */
import type { H3Event } from 'h3'
import { describe, expect, it } from 'vitest'
import { createRandom as random } from '../bench/zipf.ts'
import { sendBodyParts, Splice, type BodyParts } from '../shim/respond.ts'

/** A response whose `end` keeps the chunk sent and finishes (calls back) when `finish` is called. */
function heldResponse(method = 'GET', ifNoneMatch?: string) {
  const sent: { chunk: Buffer | undefined; finish: () => void; headers: Record<string, unknown>; status: number }[] = []
  const headers: Record<string, unknown> = {}
  const res = {
    statusCode: 0,
    setHeader(name: string, value: unknown) {
      headers[name.toLowerCase()] = value
    },
    end(chunk?: Buffer, callback?: () => void) {
      sent.push({ chunk, finish: callback ?? (() => {}), headers: { ...headers }, status: res.statusCode })
    },
  }
  const req = { method, headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch } }
  return { event: { node: { req, res } } as unknown as H3Event, sent }
}

/** An answer of `n` parts of `size` bytes, part i filled with the byte `fill + i`. */
function partsOf(n: number, size: number, fill: number): BodyParts & { expected: Buffer } {
  const parts = Array.from({ length: n }, (_, i) => Buffer.alloc(size, fill + i))
  const expected = Buffer.concat(parts)
  return { etag: `"${fill}"`, length: expected.length, parts, expected }
}

describe('answers sent from the pool of buffers', () => {
  it('sends the parts as one buffer, and never hands out a buffer whose response has not finished', () => {
    const first = heldResponse()
    const a = partsOf(100, 1000, 1)
    sendBodyParts(first.event, a, 'no-cache')
    expect(first.sent).toHaveLength(1)
    expect(Buffer.compare(first.sent[0]!.chunk!, a.expected)).toBe(0)
    expect(first.sent[0]!.headers['content-length']).toBe(a.length)
    expect(first.sent[0]!.status).toBe(200)
    // While the first answer is still being sent, a second one is copied elsewhere: the first's bytes stay.
    const second = heldResponse()
    const b = partsOf(100, 1000, 101)
    sendBodyParts(second.event, b, 'no-cache')
    expect(Buffer.compare(first.sent[0]!.chunk!, a.expected)).toBe(0)
    expect(Buffer.compare(second.sent[0]!.chunk!, b.expected)).toBe(0)
    expect(second.sent[0]!.chunk!.buffer).not.toBe(first.sent[0]!.chunk!.buffer)
    // Once the first has finished, its buffer is used again.
    first.sent[0]!.finish()
    const third = heldResponse()
    const c = partsOf(50, 1000, 201)
    sendBodyParts(third.event, c, 'no-cache')
    expect(third.sent[0]!.chunk!.buffer).toBe(first.sent[0]!.chunk!.buffer)
    expect(Buffer.compare(third.sent[0]!.chunk!, c.expected)).toBe(0)
    expect(Buffer.compare(second.sent[0]!.chunk!, b.expected)).toBe(0)
    second.sent[0]!.finish()
    third.sent[0]!.finish()
  })

  it('gives an answer larger than the pool\'s buffers one of its own, and sends nothing for a 304 or a HEAD', () => {
    const big = heldResponse()
    const large = partsOf(300, 1000, 7)
    sendBodyParts(big.event, large, 'no-cache')
    expect(big.sent[0]!.chunk!.length).toBe(300_000)
    expect(Buffer.compare(big.sent[0]!.chunk!, large.expected)).toBe(0)
    big.sent[0]!.finish()
    const notModified = heldResponse('GET', '"9"')
    sendBodyParts(notModified.event, partsOf(10, 10, 9), 'no-cache')
    expect([notModified.sent[0]!.status, notModified.sent[0]!.chunk]).toEqual([304, undefined])
    const head = heldResponse('HEAD')
    sendBodyParts(head.event, partsOf(10, 10, 9), 'no-cache')
    expect([head.sent[0]!.status, head.sent[0]!.chunk, head.sent[0]!.headers['content-length']]).toEqual([200, undefined, 100])
  })
})

/**
 * A splice of `n` pieces into a text, each piece `trimStart` bytes of 0xee, its content and
 * `trimEnd` bytes of 0xff, so a trimmed byte that reached the answer shows; the segments of text
 * and the contents have lengths from `lengthOf`, never below what the splice needs. With the
 * concatenation it stands for.
 */
function spliceOf(n: number, trimStart: number, trimEnd: number, lengthOf: (min: number) => number) {
  const segments: Buffer[] = []
  const pieces: Buffer[] = []
  const contents: Buffer[] = []
  for (let i = 0; i <= n; i++) {
    const min = Math.max(i < n ? trimStart : 0, i > 0 ? trimEnd : 0)
    segments.push(Buffer.alloc(lengthOf(min), 0x41 + (i % 26)))
    if (i === n) break
    const content = Buffer.alloc(lengthOf(0), 0x61 + (i % 26))
    contents.push(content)
    pieces.push(Buffer.concat([Buffer.alloc(trimStart, 0xee), content, Buffer.alloc(trimEnd, 0xff)]))
  }
  const between = Buffer.concat(segments)
  const ends: number[] = []
  for (let i = 0, at = 0; i < n; i++) ends.push((at += segments[i]!.length))
  const expected = Buffer.concat(segments.flatMap((s, i) => (i < n ? [s, contents[i]!] : [s])))
  return { splice: new Splice(between, ends, pieces, trimStart, trimEnd), expected }
}

describe('a splice of whole pieces into a text', () => {
  it('gives the text and the trimmed pieces concatenated, for short, long and empty segments and contents', () => {
    const next = random(54)
    for (let round = 0; round < 300; round++) {
      const n = Math.floor(next() * 12)
      const trimStart = Math.floor(next() * 10)
      const trimEnd = Math.floor(next() * 3)
      // Often exactly the least a segment may be, or an empty content; sometimes long.
      const lengthOf = (min: number) => (next() < 0.4 ? min : min + Math.floor(next() * (next() < 0.2 ? 3000 : 40)))
      const { splice, expected } = spliceOf(n, trimStart, trimEnd, lengthOf)
      const out = Buffer.alloc(expected.length + splice.between.length + 5, 0x7e)
      splice.copyInto(out, expected.length)
      expect(Buffer.compare(out.subarray(0, expected.length), expected), `round ${round}: ${n} pieces, trims ${trimStart}/${trimEnd}`).toBe(0)
      // Nothing is written past the room the caller gave.
      expect(out.subarray(expected.length + splice.between.length).every((b) => b === 0x7e)).toBe(true)
    }
  })

  it('refuses a text too short for what its pieces trim, and pieces shorter than the trims', () => {
    const text = Buffer.from('{"data":{"abcdef":,"abcdef":}}')
    const piece = Buffer.from('{"data":1}')
    const ends = [18, 28]
    expect(new Splice(text, ends, [piece, piece], 8, 1)).toBeInstanceOf(Splice)
    // The text before the first piece is 18 bytes: a trim of 19 would write before the answer.
    expect(() => new Splice(text, ends, [Buffer.alloc(20), Buffer.alloc(20)], 19, 1)).toThrow(/around piece 0 is shorter than the 19 and 1 bytes/)
    // The text between the pieces is 10 bytes: a trim of 11 would write over the first piece.
    expect(() => new Splice(text, ends, [Buffer.alloc(20), Buffer.alloc(20)], 11, 1)).toThrow(/around piece 1/)
    // The text after the last piece is 2 bytes: a trim of 3 at its end would write past the answer.
    expect(() => new Splice(text, ends, [piece, piece], 1, 3)).toThrow(/around piece 2/)
    expect(() => new Splice(text, ends, [piece, Buffer.from('{"data":')], 8, 1)).toThrow(/around piece 1/)
    expect(() => new Splice(text, [18], [piece, piece], 8, 1)).toThrow(/2 pieces has 1 ends/)
  })

  it('is sent through the pool like other parts: its bytes, its length, its buffer kept until the answer has gone', () => {
    const next = random(7)
    const { splice, expected } = spliceOf(100, 8, 1, (min) => min + 40 + Math.floor(next() * 1000))
    const first = heldResponse()
    sendBodyParts(first.event, { etag: '"s"', length: expected.length, parts: splice }, 'no-cache')
    expect(first.sent[0]!.chunk!.length).toBe(expected.length)
    expect(first.sent[0]!.headers['content-length']).toBe(expected.length)
    expect(Buffer.compare(first.sent[0]!.chunk!, expected)).toBe(0)
    const second = heldResponse()
    const other = spliceOf(100, 8, 1, (min) => min + 40 + Math.floor(next() * 1000))
    sendBodyParts(second.event, { etag: '"t"', length: other.expected.length, parts: other.splice }, 'no-cache')
    expect(second.sent[0]!.chunk!.buffer).not.toBe(first.sent[0]!.chunk!.buffer)
    expect(Buffer.compare(first.sent[0]!.chunk!, expected)).toBe(0)
    expect(Buffer.compare(second.sent[0]!.chunk!, other.expected)).toBe(0)
    first.sent[0]!.finish()
    second.sent[0]!.finish()
    const head = heldResponse('HEAD')
    sendBodyParts(head.event, { etag: '"s"', length: expected.length, parts: splice }, 'no-cache')
    expect([head.sent[0]!.status, head.sent[0]!.chunk, head.sent[0]!.headers['content-length']]).toEqual([200, undefined, expected.length])
  })
})
