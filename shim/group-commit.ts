/**
 * Group commit: callers add items and wait; one writer at a time commits everything queued as one
 * batch, so items arriving during a commit join the next one (one fsync per batch, not per item).
 * A failed commit keeps the batch queued and retries; a caller waits at most `timeoutMs`, after
 * which it is released while its item stays queued.
 */

/** Options of a group commit. */
export interface GroupCommitOptions {
  /** Largest batch committed at once. */
  maxBatch: number
  /** Longest a caller waits for its item's commit (the item stays queued after). */
  timeoutMs: number
  /** Log prefix, e.g. `[downloads]`. */
  label: string
}

/** A queue committed in batches. */
export interface GroupCommit<T> {
  /** Queues an item; resolves once it is committed (or after the timeout, still queued). */
  add(item: T): Promise<void>
  /** Items waiting to be committed. */
  backlog(): number
  /** Commits everything queued. */
  flush(): Promise<void>
}

interface Entry<T> {
  item: T
  done: () => void
}

/** Creates a group commit over `commit`, which must commit the whole batch or throw. */
export function createGroupCommit<T>(commit: (batch: T[]) => Promise<void>, options: GroupCommitOptions): GroupCommit<T> {
  const queue: Entry<T>[] = []
  let running: Promise<void> | null = null

  const drain = async (): Promise<void> => {
    while (queue.length > 0) {
      const batch = queue.slice(0, options.maxBatch)
      try {
        await commit(batch.map((e) => e.item))
        queue.splice(0, batch.length)
        for (const e of batch) e.done()
      } catch (err) {
        console.error(`${options.label} commit failed, ${queue.length} event(s) kept for retry:`, (err as Error).message)
        await new Promise((r) => setTimeout(r, 250))
      }
    }
  }

  const start = (): Promise<void> => {
    running ??= drain().finally(() => {
      running = null
    })
    return running
  }

  return {
    add(item) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.timeoutMs)
        queue.push({ item, done: () => (clearTimeout(timer), resolve()) })
        void start()
      })
    },
    backlog: () => queue.length,
    async flush() {
      while (queue.length > 0 || running) await start()
    },
  }
}
