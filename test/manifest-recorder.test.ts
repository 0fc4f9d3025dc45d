/**
 * The manifest recorder (issue 7): manifest.tsv holds every recorded name's line in record order,
 * and each raw shard the lines of its names, in the same order, byte for byte what formatEntry and
 * shardOf give, past many flushes of its buffers, with names of several UTF-8 widths and names too
 * long for a shard's buffer or for manifest.tsv's; its thread's failure (a shard it cannot write)
 * fails the recorder, naming the file, and marks nothing complete.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { formatEntry, hashBytes, listShards, shardOf } from '../build/release/manifest.ts'
import { createManifestRecorder, RAW_SHARDS_DIR } from '../build/release/writer.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'manifest-recorder-test-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('manifest recorder', () => {
  it('writes every line to manifest.tsv in record order and to its shard, whatever the buffers hold', async () => {
    const dir = mkdtempSync(path.join(root, 'release-'))
    const recorder = createManifestRecorder(dir, () => {})
    const expected: string[] = []
    let bodies = 0
    let bytes = 0
    const record = (names: string[], body: string, written: boolean): void => {
      const sha256 = hashBytes(body)
      recorder.record(names, sha256, body.length, written)
      for (const name of names) expected.push(formatEntry({ path: name, sha256, size: body.length }))
      bodies++
      bytes += body.length
    }
    // 40,000 names (about 3 MB of lines): manifest.tsv's 1 MB buffer and every shard's 64 KB are flushed several times.
    for (let i = 0; i < 10_000; i++) {
      const names = [`public/api/v2/version/${i.toString(36)}`, `public/api/v2/project/p${i % 500}/version/1.${i}`, `public/api/v2/version_file/${hashBytes(String(i))}`]
      // Two- three- and four-byte UTF-8 characters (é, 字, 🙂): the buffers are sized in bytes, not in characters.
      if (i % 3 === 0) names.push(`public/api/v2/user/Émilie-字-🙂-${i}`)
      record(names, `{"i":${i}}`, i % 2 === 0)
    }
    // Longer than a shard's buffer (64 KB), then longer than manifest.tsv's (1 MB, checked as 3 bytes a character).
    record([`public/api/v2/long/${'x'.repeat(70_000)}`], '{"long":1}', false)
    record([`public/api/v2/longer/${'é'.repeat(400_000)}`, 'public/api/v2/after-the-longest'], '{"long":2}', false)
    record(['public/api/v2/last'], '{}', true)
    const stats = await recorder.finish()

    expect(readFileSync(path.join(dir, 'manifest.tsv'), 'utf8')).toBe(expected.join(''))
    const byShard = new Map(listShards().map((s) => [s, [] as string[]]))
    for (const line of expected) byShard.get(shardOf(line.slice(0, line.indexOf('\t'))))!.push(line)
    let nonEmpty = 0
    for (const [shard, lines] of byShard) {
      expect(readFileSync(path.join(dir, RAW_SHARDS_DIR, `${shard}.tsv`), 'utf8'), `shard ${shard}`).toBe(lines.join(''))
      if (lines.length > 0) nonEmpty++
    }
    expect(nonEmpty).toBe(256)
    expect(stats).toEqual({ files: expected.length, bodies, bytes, written: 5001 })
    expect(existsSync(path.join(dir, '.complete'))).toBe(true)
  })

  it('does not mark the release complete when closed without finishing', async () => {
    const dir = mkdtempSync(path.join(root, 'failed-'))
    const recorder = createManifestRecorder(dir, () => {})
    recorder.record(['public/api/v2/a'], hashBytes('a'), 1, true)
    // Resolves once the thread has closed its files and ended: nothing more is written.
    await recorder.close()
    expect(existsSync(path.join(dir, '.complete'))).toBe(false)
    expect(readFileSync(path.join(dir, 'manifest.tsv'), 'utf8')).toBe('')
  })

  it('fails, naming the file, when its thread cannot write a shard, and marks nothing complete', async () => {
    const dir = mkdtempSync(path.join(root, 'unwritable-'))
    // A folder where shard 00 should be: the thread cannot open it for writing.
    mkdirSync(path.join(dir, RAW_SHARDS_DIR, '00.tsv'), { recursive: true })
    const recorder = createManifestRecorder(dir, () => {})
    const sha256 = hashBytes('x')
    // Records are taken until the thread's failure is known; finish reports it.
    let thrown: unknown = null
    try {
      for (let i = 0; i < 200_000; i++) recorder.record([`public/api/v2/x/${i}`], sha256, 1, false)
    } catch (err) {
      thrown = err
    }
    await expect(recorder.finish()).rejects.toThrow(/00\.tsv/)
    if (thrown !== null) expect(String(thrown)).toMatch(/writing the manifest of/)
    expect(existsSync(path.join(dir, '.complete'))).toBe(false)
    await recorder.close()
  })
})
