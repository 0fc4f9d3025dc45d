/**
 * Turns the writer's raw shards into the published manifest and the change file of this release:
 * each shard is sorted, hashed and gzipped as members, copying those of the runs of lines the change
 * left alone from the previous release's shard (shard-gzip.ts; a shard identical to the previous
 * release's is linked, not rewritten), then compared with the previous release's shard to list what
 * was added, changed and removed. One shard in memory at a time.
 */
import { createHash } from 'node:crypto'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { manifestIndexSchema, pointerSchema, type DiffCounts, type FileRef, type ManifestIndex, type ShardRef } from './formats.ts'
import { addCounts, changeFile, type Change, diffShardBytes, formatChange, hashBytes, indexFile, listShards, mirrorUrl, readShardBytes, shardFile, SHARD_TEXT_DIR, sortShardBytes } from './manifest.ts'
import { carryShardMembers, gzipShardReusing, shardMembersFile } from './shard-gzip.ts'
import { linkOrCopy, RAW_SHARDS_DIR } from './writer.ts'

/** What sealing the manifest produced. */
export interface SealedManifest {
  manifest: FileRef
  /** The change file against the previous release (every file added when there is none). */
  change: FileRef
  counts: DiffCounts
  /** The gzip members of the shards written (not linked whole), and of those copied from the previous release's shards or found damaged there (shard-gzip.ts). */
  members: { total: number; reused: number; damaged: number }
}

/**
 * Writes the manifest shards, index and change file of a release; removes the raw shards. Yields to
 * the event loop after each shard (a fifth of a second at the large catalog), so the seal can start
 * its worker processes as their inputs become ready. `onShard` is given each shard's text as bytes
 * (its sorted lines; a recycled tree is reconciled with them, recycle.ts), and awaited; `onChange`
 * each change against the previous release (the snapshot's list of changed names, name-changes.ts).
 *
 * A shard's text is encoded once, and the shards it is compared with are never decoded
 * (diffShardBytes): they are read from their plain copies, which each release keeps beside it
 * (SHARD_TEXT_DIR, not served; readShardBytes), rather than unzipped.
 */
export async function writeManifest(
  releaseDir: string,
  previousDir: string | null,
  release: { serial: number; id: string },
  onShard?: (index: number, sha256: string, bytes: Buffer) => void | Promise<void>,
  onChange?: (change: Change) => void,
): Promise<SealedManifest> {
  const previous = previousDir ? readIndex(previousDir) : null
  mkdirSync(path.join(releaseDir, path.dirname(shardFile('x'))), { recursive: true })
  mkdirSync(path.join(releaseDir, path.dirname(changeFile(1))), { recursive: true })
  mkdirSync(path.join(releaseDir, SHARD_TEXT_DIR), { recursive: true })
  const changeName = changeFile(release.serial)
  const changeFd = openSync(path.join(releaseDir, changeName), 'w')
  const changeHash = createHash('sha256')
  let changeSize = 0
  const counts: DiffCounts = { added: 0, changed: 0, removed: 0, unchanged: 0 }
  const shards: ShardRef[] = []
  let files = 0
  const members = { total: 0, reused: 0, damaged: 0 }

  for (const [i, shard] of listShards().entries()) {
    if (i > 0) await new Promise((resolve) => setImmediate(resolve))
    const raw = path.join(releaseDir, RAW_SHARDS_DIR, `${shard}.tsv`)
    const { bytes, lines } = sortShardBytes(readFileSync(raw))
    const sha256 = hashBytes(bytes)
    files += lines
    await onShard?.(i, sha256, bytes)
    const before = previous?.index.shards[i]
    // The plain copy the next build compares with (readShardBytes); two shards with the same text (both empty) share it.
    const plain = path.join(releaseDir, shardTextFile(sha256))
    if (!existsSync(plain)) writeFileSync(plain, bytes)
    if (before && before.sha256 === sha256) {
      counts.unchanged += lines
      shards.push({ shard, sha256, files: lines, size: before.size })
      linkOrCopy(path.join(previous!.dir, shardFile(sha256)), path.join(releaseDir, shardFile(sha256)))
      // Its member index goes with it (shard-gzip.ts), checked: a damaged one is not carried on.
      const index = path.join(releaseDir, shardMembersFile(sha256))
      if (!existsSync(index)) {
        carryShardMembers({ text: bytes, sha256, size: before.size, gzFile: path.join(releaseDir, shardFile(sha256)), membersFile: path.join(previous!.dir, shardMembersFile(sha256)) }, index)
      }
      continue
    }
    // Compared line by line: only the lines of changes are parsed (and checked), so a name added or
    // changed by this build is checked, and an unchanged one was when it was added.
    const old = before ? readShardBytes(path.join(previous!.dir, shardTextFile(before.sha256)), before.sha256, path.join(previous!.dir, shardFile(before.sha256))) : EMPTY
    // Gzipped as members, copying from the previous shard every run of lines the change left alone
    // (shard-gzip.ts): a 1% change touches every shard but few of its runs, and gzipping all 256
    // shards again was 7.4 s of CPU of a seal bound by its parts' CPU (Session 38).
    const packed = gzipShardReusing(
      bytes,
      before ? { text: old, sha256: before.sha256, size: before.size, gzFile: path.join(previous!.dir, shardFile(before.sha256)), membersFile: path.join(previous!.dir, shardMembersFile(before.sha256)) } : null,
      sha256,
    )
    writeFileSync(path.join(releaseDir, shardFile(sha256)), packed.gz)
    writeFileSync(path.join(releaseDir, shardMembersFile(sha256)), packed.index)
    members.total += packed.members
    members.reused += packed.reused
    members.damaged += packed.damaged
    shards.push({ shard, sha256, files: lines, size: packed.gz.length })
    const changes: string[] = []
    addCounts(
      counts,
      diffShardBytes(old, bytes, (c) => {
        changes.push(formatChange(c))
        onChange?.(c)
      }),
    )
    if (changes.length > 0) {
      // Gzip members concatenated are one valid gzip stream: a shard's changes never wait in memory.
      const changeText = changes.join('')
      changeHash.update(changeText)
      const member = gzipSync(changeText)
      writeSync(changeFd, member)
      changeSize += member.length
    }
  }
  if (changeSize === 0) {
    const empty = gzipSync('')
    writeSync(changeFd, empty)
    changeSize = empty.length
  }
  closeSync(changeFd)
  rmSync(path.join(releaseDir, RAW_SHARDS_DIR), { recursive: true, force: true })

  const index: ManifestIndex = { format: 1, serial: release.serial, id: release.id, files, shards }
  const indexBytes = Buffer.from(JSON.stringify(index) + '\n')
  writeFileSync(path.join(releaseDir, indexFile(release.id)), indexBytes)
  return {
    manifest: { path: mirrorUrl(indexFile(release.id)), sha256: hashBytes(indexBytes), size: indexBytes.length },
    change: { path: mirrorUrl(changeName), sha256: changeHash.digest('hex'), size: changeSize },
    counts,
    members,
  }
}

/** The manifest index of a sealed release, or null for a release built before manifests existed. */
export function readIndex(releaseDir: string): { dir: string; index: ManifestIndex } | null {
  const pointer = path.join(releaseDir, 'public/mirror/pointer.json')
  if (!existsSync(pointer)) return null
  const info = pointerSchema.safeParse(JSON.parse(readFileSync(pointer, 'utf8')))
  if (!info.success) return null
  const parsed = manifestIndexSchema.safeParse(JSON.parse(readFileSync(path.join(releaseDir, indexFile(info.data.id)), 'utf8')))
  return parsed.success ? { dir: releaseDir, index: parsed.data } : null
}

const EMPTY = Buffer.alloc(0)

/** Release-relative plain copy of the shard whose text has SHA-256 `sha256` (SHARD_TEXT_DIR). */
export function shardTextFile(sha256: string): string {
  return `${SHARD_TEXT_DIR}/${sha256}.tsv`
}
