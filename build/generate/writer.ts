/**
 * Writes many small files with bounded concurrency: at most `concurrency` writes in flight, so
 * memory stays flat however many files are queued. concurrency 0 writes synchronously.
 */
import { writeFile, writeFileSync } from 'node:fs'

/** A writer of small text files, with counters. */
export type FileWriter = {
  /** Queues a write; resolves once there is room for another one. */
  write: (path: string, text: string) => Promise<void> | undefined
  /** Waits for every queued write and rethrows the first error. */
  flush: () => Promise<void>
  stats: { files: number; bytes: number }
}

/** Creates a file writer; a dry run only counts. */
export function createFileWriter(concurrency: number, dryRun = false): FileWriter {
  const stats = { files: 0, bytes: 0 }
  let inFlight = 0
  let failure: Error | undefined
  const waiters: (() => void)[] = []
  const release = (): void => {
    inFlight--
    waiters.shift()?.()
  }
  const count = (text: string): void => {
    stats.files++
    stats.bytes += Buffer.byteLength(text)
  }
  const write = (path: string, text: string): Promise<void> | undefined => {
    if (failure) throw failure
    count(text)
    if (dryRun) return undefined
    if (concurrency <= 0) {
      writeFileSync(path, text)
      return undefined
    }
    inFlight++
    writeFile(path, text, (error) => {
      if (error && !failure) failure = error
      release()
    })
    if (inFlight < concurrency) return undefined
    return new Promise((resolve) => waiters.push(resolve))
  }
  const flush = async (): Promise<void> => {
    while (inFlight > 0) await new Promise<void>((resolve) => waiters.push(resolve))
    if (failure) throw failure
  }
  return { write, flush, stats }
}
