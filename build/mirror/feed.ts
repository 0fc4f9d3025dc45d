/**
 * The mirror's side of the change feed: from the local serial, the chain of change files the
 * pointer lists, each verified against its SHA-256, merged (the latest change of a path wins) and
 * grouped by manifest shard. Null means "resync": the feed no longer reaches the local serial.
 */
import type { FeedEntry, Pointer } from '../release/formats.ts'
import { hashBytes, parseChanges, readGzipText, shardOf, type Change } from '../release/manifest.ts'
import { fetchBytes, VerifyError, type FetchSettings } from './fetch.ts'

/** Changes since the local release, by shard, and the change files as fetched. */
export interface FeedChanges {
  byShard: Map<string, Change[]>
  files: Map<number, Buffer>
  count: number
}

/** Loads the changes from `localSerial` to the pointer's release, or null when a resync is needed. */
export async function loadFeedChanges(settings: FetchSettings, pointer: Pointer, localSerial: number): Promise<FeedChanges | null> {
  if (localSerial < pointer.feed.oldest) return null
  const chain: FeedEntry[] = []
  let at = localSerial
  for (const entry of pointer.feed.changes) {
    if (entry.serial <= localSerial) continue
    if (entry.previous !== at) return null
    chain.push(entry)
    at = entry.serial
  }
  if (at !== pointer.serial) return null
  const merged = new Map<string, Change>()
  const files = new Map<number, Buffer>()
  for (const entry of chain) {
    const bytes = await fetchChangeFile(settings, entry)
    files.set(entry.serial, bytes)
    for (const change of parseChanges(readGzipText(bytes))) merged.set(change.kind === 'R' ? change.path : change.entry.path, change)
  }
  const byShard = new Map<string, Change[]>()
  for (const [name, change] of merged) {
    const shard = shardOf(name)
    const list = byShard.get(shard)
    if (list) list.push(change)
    else byShard.set(shard, [change])
  }
  return { byShard, files, count: merged.size }
}

/** Fetches a change file and checks the SHA-256 of its text. */
export async function fetchChangeFile(settings: FetchSettings, entry: FeedEntry): Promise<Buffer> {
  const bytes = await fetchBytes(settings, entry.path)
  if (bytes.length !== entry.size || hashBytes(readGzipText(bytes)) !== entry.sha256) throw new VerifyError(`${entry.path} does not match the pointer`)
  return bytes
}
