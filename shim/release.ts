/**
 * The live release as the shim sees it: its folder (resolved once per swap, so every request of a
 * generation reads one consistent release) and its catalog database, opened read-only.
 */
import { existsSync, realpathSync } from 'node:fs'
import path from 'node:path'
import { openDb, type Db } from '../build/db/sqlite.ts'

/** An opened release. */
export interface Release {
  /** Real path of the release folder. */
  dir: string
  /** Real path of its `public/` tree. */
  publicDir: string
  id: string
  db: Db
  /** The game segment of `/{game}/versions`. */
  game: string
}

/** Real path of the release `current` points to, or null when there is none yet. */
export function resolveLiveRelease(distDir: string): string | null {
  const pointer = path.join(distDir, 'current')
  if (!existsSync(pointer)) return null
  return realpathSync(pointer)
}

/** Opens the live release; fails with a message naming the fix when nothing was built. */
export async function openRelease(distDir: string): Promise<Release> {
  const dir = resolveLiveRelease(distDir)
  if (!dir) throw new Error(`no release in ${distDir}: run \`npm run build\` first`)
  const db = await openDb(path.join(dir, 'catalog.sqlite'), { readonly: true })
  const game = (await db.get<{ value: string }>(`SELECT value FROM meta WHERE key = 'game'`))!.value
  return { dir, publicDir: path.join(dir, 'public'), id: path.basename(dir), db, game }
}
