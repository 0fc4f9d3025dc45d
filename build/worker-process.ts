/**
 * The build's worker processes (load, write, archive) start the same way: a TypeScript entry run by
 * vite-node in a new node process, as the build itself runs (no compile step; about 0.4 s to start).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

/** Starts the TypeScript module `entry` (a file URL) with `args` in a child process. */
export function spawnBuildWorker(entry: URL, args: readonly string[], options: SpawnOptions): ChildProcess {
  const viteNode = createRequire(import.meta.url).resolve('vite-node/cli')
  return spawn(process.execPath, [viteNode, fileURLToPath(entry), ...args], options)
}
