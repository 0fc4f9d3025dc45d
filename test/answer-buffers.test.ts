/**
 * sendBodyParts copies a multi-part answer (a bulk hash lookup's) into a buffer of a small pool and
 * sends it whole; the buffer goes back to the pool only once the response has been handed to the
 * kernel (shim/respond.ts). Here with a response whose `end` finishes when the test says so, as a
 * client that reads slowly makes a real one: the bytes of an answer still being sent are never
 * written over by the next answer. The answers' bytes through a real server are checked in
 * test/version-files.test.ts, many at once.
 */
import type { H3Event } from 'h3'
import { describe, expect, it } from 'vitest'
import { sendBodyParts, type BodyParts } from '../shim/respond.ts'

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
