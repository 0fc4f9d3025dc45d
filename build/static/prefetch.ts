/**
 * Keyset-paginated reads with the next batch's queries in flight while the caller renders and
 * writes the current one: the queries run on SQLite's thread, the rendering on this one, so the
 * render phase keeps both cores busy. One batch ahead, so memory stays one batch larger.
 */

/** A batch and the cursor of the one after it; null when there are no more rows. */
export type BatchPage<C, B> = { batch: B; next: C } | null

/** Yields the batches `fetch` returns from `first` on, fetching each next one ahead. */
export async function* prefetchBatches<C, B>(first: C, fetch: (cursor: C) => Promise<BatchPage<C, B>>): AsyncGenerator<B> {
  let pending = fetch(first)
  for (;;) {
    const page = await pending
    if (!page) return
    pending = fetch(page.next)
    // Awaited on the next turn; marked handled so that a caller stopping early leaves no rejection.
    pending.catch(() => {})
    yield page.batch
  }
}
