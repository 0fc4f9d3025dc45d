/**
 * The API names a release added, changed and removed since the previous one, as the manifest's
 * comparison finds them (seal-manifest.ts), written sorted by name for the snapshot: it copies the
 * previous snapshot's names between two changed ones whole (snapshot.ts, insertPathsByChanges),
 * instead of merging the release's five million names, sorted by name for it (the path order),
 * with the previous snapshot's keys. In a 1% rebuild of the large catalog that sort and that merge
 * were about 10 s of CPU of a seal bound by its parts' CPU (bench/results/BUILD-PROFILE.md,
 * Session 39). Past `limit` names the list is dropped: the path order is then the cheaper way, and
 * `onOverflow` is told at once, so its sort can start while the manifest goes on.
 */
import { writeFileSync } from 'node:fs'
import type { Change } from './manifest.ts'
import { precedes } from './snapshot.ts'

/** The list's file in the release folder while it is sealed (removed with the orders). */
export const NAME_CHANGES_FILE = '.name-changes.tsv'

/** The names the snapshot holds (static_paths): the API files, as the body order lists them (body-order.ts). */
const API_PREFIX = 'public/api/'

/**
 * Names kept at most: beyond them a change is a large part of the release (at the large catalog's
 * 5.1 M names, 4%), and the memory and the runs copied stop being worth it.
 */
export const NAME_CHANGES_LIMIT = 200_000

export interface NameChanges {
  /** One change of the manifest (any file: only the API names are kept). */
  add(change: Change): void
  /** Writes the list to `file`, sorted by name (a line `name \t sha256`, or the name alone when removed), and returns it; null once over the limit. */
  write(file: string): string | null
}

export function collectNameChanges(onOverflow: () => void = () => {}, limit = NAME_CHANGES_LIMIT): NameChanges {
  let lines: string[] | null = []
  return {
    add(change) {
      if (lines === null) return
      const name = change.kind === 'R' ? change.path : change.entry.path
      if (!name.startsWith(API_PREFIX)) return
      lines.push(change.kind === 'R' ? name : `${name}\t${change.entry.sha256}`)
      if (lines.length > limit) {
        lines = null
        onOverflow()
      }
    },
    write(file) {
      if (lines === null) return null
      // Whole lines sort as their names do (a tab sorts before any character a name may hold), in
      // byte order: SQLite's, which the copies' ranges compare in.
      lines.sort((a, b) => (a === b ? 0 : precedes(a, b) ? -1 : 1))
      writeFileSync(file, lines.map((line) => `${line}\n`).join(''))
      return file
    },
  }
}
