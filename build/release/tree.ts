/**
 * The file-system half of the release writer (writer.ts): puts a body under its names (written
 * once, the other names hard links) and links it into the content store. It holds no order and no
 * totals, so two processes may fill one release at the same time (write-pool.ts): every name is
 * written once, a body both store at once ends up as two inodes with the same bytes and content
 * mtime (the store keeps the first), and no file differs in bytes or mtime from a one-thread build.
 */
import { copyFileSync, constants, linkSync, mkdirSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { hasContentMtime, stampContentMtime } from './content-mtime.ts'

/** Puts bodies into one release folder; each call returns whether it wrote the body (not found in the store). */
export interface ReleaseTree {
  /** Writes bytes under the first name and hard-links the others to it. */
  put(names: readonly string[], bytes: Uint8Array, sha256: string): boolean
  /** Copies a blob of `size` bytes from the source catalog under a name. */
  putCopy(name: string, source: string, sha256: string, size: number): boolean
  /**
   * Links the names to a body the content store must hold (the live release's, named by its
   * SHA-256 and size without its bytes); throws when the store does not have it at that size.
   */
  putStored(names: readonly string[], sha256: string, size: number): void
}

/**
 * Creates the tree of `releaseDir`; `storeDir` null disables the content store. `storeOnly`: the
 * folder holds a recycled release's tree (recycle.ts), whose names are put right when the manifest
 * is sealed; here each body only goes into the store (a new one written there, under a temporary
 * name renamed into place), and no name of the release is touched.
 */
export function createReleaseTree(releaseDir: string, storeDir: string | null, storeOnly = false): ReleaseTree {
  if (storeOnly && !storeDir) throw new Error('a recycled release tree needs the content store')
  const dirs = new Set<string>()
  const ensureDir = (file: string): void => {
    const dir = path.dirname(file)
    if (dirs.has(dir)) return
    mkdirSync(dir, { recursive: true })
    dirs.add(dir)
  }
  const link = (first: string, names: readonly string[]): void => {
    for (const name of names) {
      const target = path.join(releaseDir, name)
      if (target === first) continue
      ensureDir(target)
      linkOrCopy(first, target)
    }
  }
  const stored = (sha256: string): string | null => (storeDir ? storeFile(storeDir, sha256) : null)
  /**
   * The stored inode of a body, when the store has it with the expected size (a truncated entry left
   * by a crash is not trusted). An entry stored before bodies carried their content mtime is stamped
   * now (the same bytes under every link, so every link gets the right ETag).
   */
  const findStored = (sha256: string, size: number): string | null => {
    const file = stored(sha256)
    if (!file) return null
    const st = statSync(file, { throwIfNoEntry: false })
    if (!st || st.size !== size) return null
    if (!hasContentMtime(st, sha256)) stampContentMtime(file, sha256)
    return file
  }
  const addToStore = (file: string, sha256: string): void => {
    const target = stored(sha256)
    if (!target) return
    ensureDir(target)
    // Linked only after the file is complete, so a killed build never leaves a partial store entry.
    try {
      linkSync(file, target)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code !== 'EEXIST' && code !== 'EMLINK') throw err
    }
  }

  /** Writes a body into the store alone (storeOnly): complete and stamped before it takes its name there. */
  const store = (sha256: string, write: (tmp: string) => void): void => {
    const target = stored(sha256)!
    ensureDir(target)
    const tmp = `${target}.tmp-${process.pid}`
    write(tmp)
    stampContentMtime(tmp, sha256)
    // Over a truncated entry a crash left, if any (findStored did not trust it).
    renameSync(tmp, target)
  }

  return {
    put(names, bytes, sha256) {
      const hit = findStored(sha256, bytes.length)
      if (storeOnly) {
        if (!hit) store(sha256, (tmp) => writeFileSync(tmp, bytes))
        return !hit
      }
      if (hit) {
        link(hit, names)
        return false
      }
      const first = path.join(releaseDir, names[0]!)
      ensureDir(first)
      writeFileSync(first, bytes)
      // Before the links, so every name shares the stamped inode.
      stampContentMtime(first, sha256)
      link(first, names)
      addToStore(first, sha256)
      return true
    },
    putStored(names, sha256, size) {
      const hit = findStored(sha256, size)
      if (!hit) throw new Error(`the content store has no body ${sha256} of ${size} bytes, which the live release names (${names[0]}): the next build reuses none of the live release's versions' JSON and writes every body again`)
      if (!storeOnly) link(hit, names)
    },
    putCopy(name, source, sha256, size) {
      const hit = findStored(sha256, size)
      if (storeOnly) {
        if (!hit) store(sha256, (tmp) => copyFileSync(source, tmp, constants.COPYFILE_FICLONE))
        return !hit
      }
      const target = path.join(releaseDir, name)
      if (hit) {
        link(hit, [name])
        return false
      }
      ensureDir(target)
      copyFileSync(source, target, constants.COPYFILE_FICLONE)
      stampContentMtime(target, sha256)
      addToStore(target, sha256)
      return true
    },
  }
}

/** The content store's file of a body: `<store>/<first two hex digits>/<sha256>`. */
export function storeFile(storeDir: string, sha256: string): string {
  return path.join(storeDir, sha256.slice(0, 2), sha256)
}

/**
 * Hard-links `source` to `target`; copies instead when the inode has reached the file system's
 * link limit (EMLINK: e.g. one empty list body shared by 100,000 names) or lives on another device.
 * A copy keeps the source's mtime: it is the content mtime that nginx's ETag is made of.
 */
export function linkOrCopy(source: string, target: string): void {
  try {
    linkSync(source, target)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code !== 'EMLINK' && code !== 'EXDEV') throw err
    copyFileSync(source, target)
    const st = statSync(source)
    utimesSync(target, st.atime, st.mtime)
  }
}
