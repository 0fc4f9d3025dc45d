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
 */
const SORT_MEMORY = ['-S', '256M']

/** One API file: its release-relative name and the SHA-256 of its body. */
export interface BodyName {
  name: string
  sha256: string
}

/** Writes the ordered list of a release to `.body-order.tsv` (temp, removed by removeBodyOrder); returns its path. */
export async function writeBodyOrder(releaseDir: string): Promise<string> {
  const out = path.join(releaseDir, '.body-order.tsv')
  // The environment is replaced, not inherited: byte order (LC_ALL=C) whatever the caller's locale,
  // temp files beside the release; the command is found on the default /usr/bin:/bin.
  await run('sort', [...SORT_MEMORY, '-t', '\t', '-k2,2', '-k1,1', '-o', out, path.join(releaseDir, 'manifest.tsv')], {
    env: { LC_ALL: 'C', TMPDIR: releaseDir },
    maxBuffer: 1 << 20,
  })
  return out
}

/**
 * Writes the API files of a release by name alone to `.path-order.tsv` (temp, removed with
 * removeBodyOrder): a table keyed by name (the snapshot's static_paths) fills in key order from it,
 * appending, where the body order would insert each row at a random place of a B-tree of millions.
 */
export async function writePathOrder(releaseDir: string): Promise<string> {
  const out = path.join(releaseDir, '.path-order.tsv')
  await run('sort', [...SORT_MEMORY, '-t', '\t', '-k1,1', '-o', out, path.join(releaseDir, 'manifest.tsv')], {
    env: { LC_ALL: 'C', TMPDIR: releaseDir },
    maxBuffer: 1 << 20,
  })
  return out
}

/** Removes the list written by writeBodyOrder or writePathOrder. */
export function removeBodyOrder(file: string): void {
  rmSync(file, { force: true })
}

/** The API files (`public/api/…`) of an ordered list, in its order. */
export async function* readBodyOrder(file: string): AsyncGenerator<BodyName> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
  for await (const line of lines) {
    if (!line.startsWith('public/api/')) continue
    const [name, sha256] = line.split('\t') as [string, string]
    yield { name, sha256 }
  }
}
