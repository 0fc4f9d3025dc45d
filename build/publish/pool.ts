/**
 * Bounded concurrency for uploads and deletes (publish) and downloads (mirror sync): at most `size`
 * tasks in flight; the first failure stops new tasks from starting and is rethrown by drain(), after
 * the tasks in flight settled (so no request is still running when the publish reports its error).
 * A caller that must go on past failures (the mirror lists them all) catches inside its tasks.
 */

/** A bounded set of running tasks. */
export interface Pool {
  /** Starts a task once a slot is free; resolves when it started (not when it finished). */
  run(task: () => Promise<void>): Promise<void>
  /** Waits for every started task; throws the first failure. */
  drain(): Promise<void>
}

/** Creates a pool of `size` slots. */
export function createPool(size: number): Pool {
  const inFlight = new Set<Promise<void>>()
  let failure: { error: unknown } | null = null
  return {
    async run(task) {
      while (inFlight.size >= size) await Promise.race(inFlight)
      if (failure) {
        await Promise.all(inFlight)
        throw failure.error
      }
      const p: Promise<void> = task()
        .catch((error: unknown) => {
          failure ??= { error }
        })
        .finally(() => inFlight.delete(p))
      inFlight.add(p)
    },
    async drain() {
      await Promise.all(inFlight)
      if (failure) throw failure.error
    },
  }
}
