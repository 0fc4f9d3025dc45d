/**
 * The API files of a release in one fixed order — by body SHA-256, then name — whatever order the
 * build wrote them in (manifest.tsv is in write order, which a faster or parallel renderer may
 * change). The snapshot and the archive are written in this order, so the same data always gives
 * the same bytes, and the names of one body are adjacent, so each body is read once. Sorted by
 * `sort` (coreutils: an external merge sort in bounded memory, millions of lines) in the C locale.
 */
import { execFile } from 'node:child_process'
import { createReadStream, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * sort's buffer. Left to itself GNU sort sized it from the machine's memory: 1 GB of RSS for the
 * large catalog's 700 MB manifest, and the two sorts run at once beside the build (2.9 GB in all,
 * over the 2 GB goal). With 256 MB it merges temp runs instead, and was faster here (6.1 against 8.2 s).
 * With 128 MB each sort holds 133 MB instead of 264 MB and takes as long (5.0–5.9 s against
 * 5.6–5.9 s on that manifest, two rounds of both sorts): the build's peak comes at the start of the
 * seal, while both sorts run (bench/results/BUILD-PROFILE.md, Session 20).
 */
const SORT_MEMORY = ['-S', '128M']

/** One API file: its release-relative name and the SHA-256 of its body. */
export interface BodyName {
  name: string
  sha256: string
}

/** Writes the ordered list of a release to `.body-order.tsv` (temp, removed by removeBodyOrder); returns its path. */
export async function writeBodyOrder(releaseDir: string): Promise<string> {
  const out = path.join(releaseDir, '.body-order.tsv')
  await sortFile(releaseDir, path.join(releaseDir, 'manifest.tsv'), out, ['-k2,2', '-k1,1'])
  return out
}

/**
 * Writes the API files of a release by name alone to `.path-order.tsv` (temp, removed with
 * removeBodyOrder): a table keyed by name (the snapshot's static_paths) fills in key order from it,
 * appending, where the body order would insert each row at a random place of a B-tree of millions.
 */
export async function writePathOrder(releaseDir: string): Promise<string> {
  const out = path.join(releaseDir, '.path-order.tsv')
  await sortFile(releaseDir, path.join(releaseDir, 'manifest.tsv'), out, ['-k1,1'])
  return out
}

/** Sorts the tab-separated lines of `input` into `out` by `keys` (sort's options), in byte order. */
export async function sortFile(releaseDir: string, input: string, out: string, keys: string[]): Promise<void> {
  // The environment is replaced, not inherited: byte order (LC_ALL=C) whatever the caller's locale,
  // temp files beside the release; the command is found on the default /usr/bin:/bin.
  await run('sort', [...SORT_MEMORY, '-t', '\t', ...keys, '-o', out, input], {
    env: { LC_ALL: 'C', TMPDIR: releaseDir },
    maxBuffer: 1 << 20,
  })
}

/** Removes the list written by writeBodyOrder or writePathOrder. */
export function removeBodyOrder(file: string): void {
  rmSync(file, { force: true })
}

/**
 * readBodyOrder's batch: 64 KB, under V8's largest object of its young generation (128 KB), so each
 * batch's text and the names sliced from it are collected young. With 1 MB batches every text went
 * to the large-object space, which only a full collection frees, and the archive worker's peak RSS
 * at the large catalog grew from 310–330 MB to 600 MB (bench/results/BUILD-PROFILE.md, Session 36).
 */
const BODY_ORDER_BATCH_BYTES = 64 << 10

/**
 * The API files (`public/api/…`) of an ordered list, in its order, a batch at a time (readOrderLines:
 * read one at a time through readline, the archive's two passes over the 5.1 M names of the large
 * catalog cost a promise each, bench/results/BUILD-PROFILE.md, Session 36). A name holds no tab
 * (isSafeName refuses control characters), so it ends at the line's first.
 */
export async function* readBodyOrder(file: string): AsyncGenerator<BodyName[]> {
  for await (const { lines } of readOrderLines(file, BODY_ORDER_BATCH_BYTES)) {
    yield lines.map((line) => {
      const tab = line.indexOf('\t')
      return { name: line.slice(0, tab), sha256: line.slice(tab + 1, tab + 65) }
    })
  }
}

/** Bytes of an ordered list read at once by readOrderLines (4 MB held 90 MB more of heap in the snapshot worker than 1 MB, for no gain in time). */
const BATCH_BYTES = 1 << 20

/**
 * The lines of the API files (`name \t sha256 \t size`) of an ordered list, a batch at a time, for
 * callers that compare whole lines (the snapshot's merge with the previous snapshot: five million
 * names cost a promise per batch instead of one per name, readline's then the caller's, several
 * seconds at the large catalog); `wide` when the batch holds a character at or above U+D800,
 * where JavaScript's `<` and byte order disagree (precedes in snapshot.ts).
 */
export async function* readOrderLines(file: string, batchBytes = BATCH_BYTES): AsyncGenerator<{ lines: string[]; wide: boolean }> {
  const handle = await open(file, 'r')
  try {
    const buffer = Buffer.allocUnsafe(batchBytes)
    let kept = 0
    for (;;) {
      const { bytesRead } = await handle.read(buffer, kept, buffer.length - kept)
      const end = kept + bytesRead
      // The last whole line; at the end of the file, the rest (a last line without its line end).
      const cut = bytesRead === 0 ? end : buffer.lastIndexOf(0x0a, end - 1) + 1
      if (cut === 0 && end === buffer.length) throw new Error(`${file}: a line longer than ${batchBytes} bytes`)
      const text = buffer.toString('utf8', 0, cut)
      const lines = text.split('\n').filter((line) => line.startsWith('public/api/'))
      if (lines.length > 0) yield { lines, wide: WIDE.test(text) }
      if (bytesRead === 0) return
      buffer.copy(buffer, 0, cut, end)
      kept = end - cut
    }
  } finally {
    await handle.close()
  }
}

/** A character whose UTF-16 order differs from its UTF-8 byte order against some other. */
export const WIDE = /[\ud800-\uffff]/

/** The lines of a file, without their line ends. */
export function readLines(file: string): AsyncIterable<string> {
  return createInterface({ input: createReadStream(file), crlfDelay: Infinity })
}
