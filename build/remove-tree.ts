/**
 * Removes a folder that may hold millions of names (a release tree, a mirror's release, a generated
 * catalog). `fs.rmSync(dir, { recursive: true })` lists each folder whole into memory before it
 * unlinks anything: a release's `version-files/` alone holds 2.3 M names at the large catalog, and
 * removing a release that way took about 150 s with the build's RSS at 2 GB (bench/results/
 * BUILD-PROFILE.md). `rm -rf` walks the tree with fts, reading each folder in batches (31 MB of RSS
 * for a 400,000-name folder against 236 MB, in half the time). Where there is no `rm`, or it fails,
 * rmSync does the job and reports any error itself.
 */
import { spawn, spawnSync } from 'node:child_process'
import { promises as fsp, rmSync } from 'node:fs'

/** Removes `dir` and everything under it; nothing happens when it does not exist. */
export function removeTree(dir: string): void {
  const rm = spawnSync('rm', ['-rf', '--', dir], { stdio: ['ignore', 'ignore', 'pipe'] })
  if (rm.error || rm.status !== 0) rmSync(dir, { recursive: true, force: true })
}

/**
 * removeTree without waiting: `rm -rf` runs as a child process while this thread goes on, and the
 * promise settles when `dir` is gone (rejected, naming `dir` and fs.rm's error, only when neither could remove it).
 */
export function removeTreeLater(dir: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const rm = spawn('rm', ['-rf', '--', dir], { stdio: 'ignore' })
    let settled = false
    const done = (ok: boolean): void => {
      if (settled) return
      settled = true
      if (ok) return resolve()
      resolve(
        fsp.rm(dir, { recursive: true, force: true }).catch((err: Error) => {
          throw new Error(`${dir} (${err.message})`)
        }),
      )
    }
    rm.on('error', () => done(false))
    rm.on('exit', (code) => done(code === 0))
  })
}
