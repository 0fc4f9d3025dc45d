/**
 * The archive written in a second process (archive-worker.ts under vite-node, about 0.4 s to
 * start): the same bytes as writeArchive in this one. The seal writes the snapshot and the archive
 * at the same time; in one process both read every body and build every row or tar header on the
 * same thread, and the seal ran at about one core (bench/results/BUILD-PROFILE.md).
 */
import { z } from 'zod'
import type { BodyPackFiles } from './body-pack.ts'
import { spawnBuildWorker } from '../worker-process.ts'

const usageSchema = z.object({ maxRss: z.number(), cpuSeconds: z.number() })

/** What the worker used, for the build's log. */
export type ArchiveWorkerUsage = z.infer<typeof usageSchema>

/** Writes the archive of `releaseDir` to `target` in a child process (writeArchive's arguments); rejects with its error output when it fails. */
export function writeArchiveInChild(releaseDir: string, orderFile: string, target: string, pack: BodyPackFiles | null = null): Promise<ArchiveWorkerUsage> {
  const args = ['--', releaseDir, orderFile, target, ...(pack ? [pack.pack, pack.sortedIndex] : [])]
  const child = spawnBuildWorker(new URL('./archive-worker.ts', import.meta.url), args, { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })
  let stderr = ''
  let usage: ArchiveWorkerUsage = { maxRss: 0, cpuSeconds: 0 }
  child.stderr!.on('data', (d: Buffer) => {
    // The tail is what says why; a runaway worker must not grow this without bound.
    stderr = (stderr + d.toString()).slice(-4000)
  })
  child.on('message', (message) => {
    usage = usageSchema.parse(message)
  })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      if (code === 0) resolve(usage)
      else reject(new Error(`archive worker exited (${signal ?? code}); BUILD_ARCHIVE_WORKER=0 writes the archive in the build's own process\n${stderr.trim()}`))
    })
  })
}
