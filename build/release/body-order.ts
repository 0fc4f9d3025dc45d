/**
 * The API files of a release in one fixed order — by body SHA-256, then name — whatever order the
 * build wrote them in (manifest.tsv is in write order, which a faster or parallel renderer may
 * change). The snapshot and the archive are written in this order, so the same data always gives
 * the same bytes, and the names of one body are adjacent, so each body is read once. Sorted by
 * `sort` (coreutils: an external merge sort in bounded memory, millions of lines) in the C locale.
 */
import { execFile } from 'node:child_process'
import { createReadStream, rmSync } from 'node:fs'
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

/** The API files (`public/api/…`) of an ordered list, in its order. */
export async function* readBodyOrder(file: string): AsyncGenerator<BodyName> {
  for await (const line of readLines(file)) {
    if (!line.startsWith('public/api/')) continue
    const [name, sha256] = line.split('\t') as [string, string]
    yield { name, sha256 }
  }
}

/** The lines of a file, without their line ends. */
export function readLines(file: string): AsyncIterable<string> {
  return createInterface({ input: createReadStream(file), crlfDelay: Infinity })
}
