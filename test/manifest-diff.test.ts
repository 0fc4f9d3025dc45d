/**
 * The seal compares shards line by line, as bytes (diffShardBytes), where the publisher compares
 * parsed entries (diffShard): both must give the same changes, in the same order, with the same
 * replaced entries, as the comparison of lines as strings (diffShardLines) does.
 */
import { describe, expect, it } from 'vitest'
import type { ManifestEntry } from '../build/release/formats.ts'
import { diffShard, diffShardBytes, diffShardLines, formatEntry, joinShard, parseShard, shardLines, sortShardBytes, type Change } from '../build/release/manifest.ts'

const sha = (n: number): string => n.toString(16).padStart(64, '0')
const entry = (path: string, n: number, size = 100 + n): ManifestEntry => ({ path, sha256: sha(n), size })
const text = (entries: ManifestEntry[]): string => joinShard(entries.map(formatEntry))

function both(before: ManifestEntry[], after: ManifestEntry[]): { byEntries: unknown; byLines: unknown; byBytes: unknown } {
  const run = (diff: (emit: (c: Change, was?: ManifestEntry) => void) => unknown): unknown => {
    const seen: unknown[] = []
    const counts = diff((c, was) => seen.push([c, was]))
    return { counts, seen }
  }
  const [b, a] = [text(before), text(after)]
  return {
    byEntries: run((emit) => diffShard(parseShard(b), parseShard(a), emit)),
    byLines: run((emit) => diffShardLines(shardLines(b), shardLines(a), emit)),
    byBytes: run((emit) => diffShardBytes(Buffer.from(b), Buffer.from(a), emit)),
  }
}

describe('diffShardLines', () => {
  it('gives the changes diffShard gives, with the entries they replace', () => {
    // [name under public/api/v1/, body number, size]: a name that is a prefix of another, a change of
    // bytes, of size alone, an addition, removals, unchanged entries.
    const list = (rows: [string, number, number?][]): ManifestEntry[] => rows.map(([name, n, size]) => entry(`public/api/v1/${name}.json`, n, size))
    const before = list([['a', 1], ['a/b', 2], ['gone', 3], ['same', 4], ['sized', 5, 10], ['x', 6]])
    const after = list([['a', 1], ['a/b', 7], ['a/c', 8], ['same', 4], ['sized', 5, 11], ['y', 9]])
    const { byEntries, byLines, byBytes } = both(before, after)
    expect(byLines).toEqual(byEntries)
    expect(byBytes).toEqual(byEntries)
    expect(byLines).toMatchObject({ counts: { added: 2, changed: 2, removed: 2, unchanged: 2 } })
    // In name order, a replaced or removed entry passed beside its change.
    expect((byLines as { seen: unknown[] }).seen).toEqual([
      [{ kind: 'C', entry: entry('public/api/v1/a/b.json', 7) }, entry('public/api/v1/a/b.json', 2)],
      [{ kind: 'A', entry: entry('public/api/v1/a/c.json', 8) }, undefined],
      [{ kind: 'R', path: 'public/api/v1/gone.json' }, entry('public/api/v1/gone.json', 3)],
      [{ kind: 'C', entry: entry('public/api/v1/sized.json', 5, 11) }, entry('public/api/v1/sized.json', 5, 10)],
      [{ kind: 'R', path: 'public/api/v1/x.json' }, entry('public/api/v1/x.json', 6)],
      [{ kind: 'A', entry: entry('public/api/v1/y.json', 9) }, undefined],
    ])
  })

  it('agrees with diffShard on empty shards and on many generated ones', () => {
    expect(both([], []).byLines).toEqual({ counts: { added: 0, changed: 0, removed: 0, unchanged: 0 }, seen: [] })
    expect(both([], []).byBytes).toEqual({ counts: { added: 0, changed: 0, removed: 0, unchanged: 0 }, seen: [] })
    for (let seed = 1; seed <= 20; seed++) {
      const pick = (salt: number): ManifestEntry[] => {
        const out: ManifestEntry[] = []
        for (let i = 0; i < 60; i++) {
          const r = (i * 7919 + seed * 104729 + salt * 31) % 97
          if (r < 20) continue
          out.push(entry(`public/api/v1/p/${i % 9 === 0 ? `${i}/sub` : i}.json`, r < 70 ? i : i + 1000 * salt))
        }
        return out
      }
      const { byEntries, byLines, byBytes } = both(pick(1), pick(2))
      expect(byLines).toEqual(byEntries)
      expect(byBytes).toEqual(byEntries)
      // A first release (every line added) and a release emptied.
      for (const [x, y] of [[[], pick(2)], [pick(1), []]] as [ManifestEntry[], ManifestEntry[]][]) expect(both(x, y).byBytes).toEqual(both(x, y).byEntries)
    }
  })

  it('compares names beyond ASCII in the shards\' own order, where UTF-8 bytes would sort them otherwise', () => {
    // U+E000 sorts after 😀 (U+1F600) in JavaScript's order (UTF-16 code units: E000 > D83D) and
    // before it in UTF-8 bytes (EE… < F0…): the shards are sorted the first way.
    const list = (rows: [string, number][]): ManifestEntry[] => rows.map(([name, n]) => entry(`public/api/v1/${name}.json`, n))
    const before = list([['caf\u00e9', 1], ['x\u{1F600}', 2], ['x\uE000', 3], ['z', 4]])
    const after = list([['caf\u00e9', 1], ['x\u{1F600}', 5], ['x\uE000', 3], ['x\uE001', 6], ['z', 4]])
    const { byEntries, byLines, byBytes } = both(before, after)
    expect(byBytes).toEqual(byEntries)
    expect(byLines).toEqual(byEntries)
    expect(byBytes).toMatchObject({ counts: { added: 1, changed: 1, removed: 0, unchanged: 3 } })
  })

  it('reads a last line without its newline, and the shards given as views into larger buffers', () => {
    const b = Buffer.from(text([entry('public/api/v1/a.json', 1), entry('public/api/v1/b.json', 2)]).slice(0, -1))
    const a = Buffer.concat([Buffer.from('padding'), Buffer.from(text([entry('public/api/v1/a.json', 1), entry('public/api/v1/b.json', 3)]))])
    const seen: Change[] = []
    expect(diffShardBytes(b, a.subarray('padding'.length), (c) => seen.push(c))).toEqual({ added: 0, changed: 1, removed: 0, unchanged: 1 })
    expect(seen).toEqual([{ kind: 'C', entry: entry('public/api/v1/b.json', 3) }])
  })

  it('checks the lines of changes and leaves equal lines unparsed', () => {
    const good = formatEntry(entry('public/api/v1/a.json', 1)).slice(0, -1)
    expect(() => diffShardLines([], ['public/../etc\t' + sha(1) + '\t5'], () => {})).toThrow(/malformed manifest line/)
    expect(() => diffShardLines([good], [good.replace(/\t\d+$/, '\tx')], () => {})).toThrow(/malformed manifest line/)
    // An unchanged line is the same text as one already checked when it was added.
    expect(diffShardLines([good], [good], () => {})).toEqual({ added: 0, changed: 0, removed: 0, unchanged: 1 })
    expect(() => diffShardBytes(Buffer.alloc(0), Buffer.from('public/../etc\t' + sha(1) + '\t5\n'), () => {})).toThrow(/malformed manifest line/)
    expect(() => diffShardBytes(Buffer.from(good + '\n'), Buffer.from(good.replace(/\t\d+$/, '\tx') + '\n'), () => {})).toThrow(/malformed manifest line/)
    expect(diffShardBytes(Buffer.from(good + '\n'), Buffer.from(good + '\n'), () => {})).toEqual({ added: 0, changed: 0, removed: 0, unchanged: 1 })
  })
})

describe('sortShardBytes', () => {
  // Lines in a fixed shuffled order (a linear congruential generator), as the recorder leaves a raw shard.
  const shuffled = (lines: string[]): string[] => {
    const out = [...lines]
    let seed = 7
    for (let i = out.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) >>> 0
      const j = seed % (i + 1)
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }

  it('gives the bytes of joinShard over the decoded lines, for ASCII shards and others', () => {
    const ascii = Array.from({ length: 2000 }, (_, i) => formatEntry(entry(`public/api/v1/${['projects', 'versions', 'version-files'][i % 3]}/${(i * 7919).toString(36)}${i % 5 === 0 ? '/versions' : ''}.json`, i)))
    // Beyond ASCII: an astral character sorts after U+FF5E by UTF-8 bytes but before it in joinShard's UTF-16 order.
    const wide = [...ascii.slice(0, 50), formatEntry(entry('public/api/v1/projects/\u{1F600}.json', 1)), formatEntry(entry('public/api/v1/projects/\uFF5E.json', 2)), formatEntry(entry('public/api/v1/projects/é.json', 3))]
    for (const lines of [ascii, wide, ascii.slice(0, 1), []]) {
      const raw = Buffer.from(shuffled(lines).join(''))
      const sorted = sortShardBytes(raw)
      expect(sorted.bytes.equals(Buffer.from(joinShard([...lines])))).toBe(true)
      expect(sorted.lines).toBe(lines.length)
    }
    // The order really differs from the bytes' order there: the test would not see a byte sort.
    const wideText = sortShardBytes(Buffer.from(shuffled(wide).join(''))).bytes.toString('utf8')
    expect(wideText.indexOf('\u{1F600}')).toBeLessThan(wideText.indexOf('\uFF5E'))
    expect(Buffer.compare(Buffer.from('\u{1F600}'), Buffer.from('\uFF5E'))).toBe(1)
  })

  it('counts only lines that end in a newline, as the raw shards are written', () => {
    const raw = Buffer.from('public/api/v1/b.json\tx\t1\npublic/api/v1/a.json\tx\t1\npublic/api/v1/cut')
    expect(sortShardBytes(raw)).toEqual({ bytes: Buffer.from('public/api/v1/a.json\tx\t1\npublic/api/v1/b.json\tx\t1\n'), lines: 2 })
    expect(sortShardBytes(Buffer.from('é\n' + raw.toString()))).toMatchObject({ lines: 3 })
  })
})
