/**
 * Lists the record files of a data folder with their stat signatures, for a rebuild with staging
 * kept (staging-cache.ts): which files changed since the last build.
 *
 * One `find -L … -printf` (GNU findutils) walks the folder and prints each file's size, times and
 * inode: 5.7 s for the large catalog's 1.16 M files, against 26.8 s for fast-glob and a `statSync`
 * per name (bench/results/BUILD-PROFILE.md). Without GNU find (e.g. BSD find, which has no
 * `-printf`) the lister falls back to fast-glob and `statSync`; both give the same files with the
 * same signatures (test/list-sources.test.ts).
 *
 * The glob patterns of the record kinds are simple (literal segments and `*`), matched here as
 * fast-glob does: `*` never matches `/` nor a leading dot, symlinks are followed, only files count.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import fg from 'fast-glob'
import { sourceSignature } from './staging-cache.ts'

/** A listed record file: its kind's pattern index, its path relative to the data folder, its stat signature. */
export type ListedSource = [pattern: number, file: string, signature: string]

let gnuFind: boolean | undefined

/** Whether `find` is GNU find (it has `-printf`); asked once per process. */
export function hasGnuFind(): boolean {
  if (gnuFind === undefined) {
    const probe = spawnSync('find', ['--version'], { encoding: 'utf8' })
    gnuFind = probe.status === 0 && /GNU findutils/.test(probe.stdout)
  }
  return gnuFind
}

/** A RegExp matching what fast-glob's `pattern` matches (literal segments and `*` only). */
export function patternRegExp(pattern: string): RegExp {
  if (/[?[\]{}()!+@\\]|\*\*/.test(pattern)) throw new Error(`list-sources: unsupported glob pattern ${pattern}`)
  const segment = (s: string): string => s.split('*').map((part) => part.replace(/[.^$|]/g, '\\$&')).join('[^/]*')
  // A segment that starts with `*` does not match a leading dot (fast-glob's `dot: false`).
  return new RegExp(`^${pattern.split('/').map((s) => (s.startsWith('*') ? `(?!\\.)${segment(s)}` : segment(s))).join('/')}$`)
}

/**
 * Calls `onEntry` for every file of `dataDir` that one of `patterns` matches (the index of the
 * first), in the order the folders are read. `useFind` false forces the fast-glob path. A file that
 * disappears while listed is left out; any other error of the walk is thrown.
 */
export async function listSources(dataDir: string, patterns: readonly string[], onEntry: (entry: ListedSource) => Promise<void>, useFind = hasGnuFind()): Promise<void> {
  if (useFind) await listWithFind(dataDir, patterns, onEntry)
  else await listWithGlob(dataDir, patterns, onEntry)
}

async function listWithGlob(dataDir: string, patterns: readonly string[], onEntry: (entry: ListedSource) => Promise<void>): Promise<void> {
  for (const [i, pattern] of patterns.entries()) {
    // statSync per name: faster than fast-glob's own `stats` (an async lstat per entry); it follows symlinks.
    for await (const entry of fg.stream(pattern, { cwd: dataDir, onlyFiles: true })) {
      const file = String(entry)
      const signature = statSignature(path.join(dataDir, file))
      // Gone since it was listed: left out, so its rows go as a removed file's.
      if (signature !== null) await onEntry([i, file, signature])
    }
  }
}

async function listWithFind(dataDir: string, patterns: readonly string[], onEntry: (entry: ListedSource) => Promise<void>): Promise<void> {
  const matchers = patterns.map(patternRegExp)
  const maxDepth = Math.max(...patterns.map((p) => p.split('/').length))
  // Names never hold NUL: each record is `path NUL size sec.nsec sec.nsec inode NUL`. Folders whose
  // names start with a dot are not entered (no pattern's `*` matches them), nor any deeper than a pattern.
  const args = ['-L', '.', '-mindepth', '1', '-maxdepth', String(maxDepth), '(', '-name', '.*', '-prune', ')', '-o', '-type', 'f', '-printf', '%P\\0%s %T@ %C@ %i\\0']
  // A missing folder is named as such (spawn would report `find` itself as missing).
  if (!statSync(dataDir).isDirectory()) throw new Error(`list-sources: ${dataDir} is not a folder`)
  const child = spawn('find', args, { cwd: dataDir, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (text: string) => (stderr += text))
  const exited = new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve(code))
  })
  // Awaited after the output is read; a spawn error also ends that read.
  exited.catch(() => {})
  let rest: Buffer = Buffer.alloc(0)
  let name: string | null = null
  try {
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      const data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk
      let start = 0
      for (let end = data.indexOf(0, start); end !== -1; end = data.indexOf(0, start)) {
        const field = data.toString('utf8', start, end)
        start = end + 1
        if (name === null) {
          name = field
          continue
        }
        const file = name
        name = null
        const i = matchers.findIndex((m) => m.test(file))
        if (i !== -1) await onEntry([i, file, findSignature(field)])
      }
      rest = data.subarray(start)
    }
  } catch (err) {
    child.kill()
    throw err
  }
  const code = await exited
  // find exits 1 when a file went away during the walk: that file is simply not listed.
  const errors = stderr.split('\n').filter((line) => line !== '' && !/No such file or directory$/.test(line))
  if ((code !== 0 && errors.length > 0) || code === null || code > 1) throw new Error(`find in ${dataDir} failed (exit ${code}): ${errors.join('; ') || stderr.trim()}`)
}

/** sourceSignature of `size sec.nsec sec.nsec inode` as find prints it, with Node's arithmetic for mtimeMs and ctimeMs. */
export function findSignature(fields: string): string {
  const [size, mtime, ctime, ino] = fields.split(' ')
  return sourceSignature({ size: Number(size), mtimeMs: timeMs(mtime!), ctimeMs: timeMs(ctime!), ino: Number(ino) })
}

/** `sec.nsec` (find's %T@) in ms as Node computes `mtimeMs` from the same timespec: sec * 1e3 + nsec / 1e6. */
function timeMs(text: string): number {
  const dot = text.indexOf('.')
  const sec = Number(dot === -1 ? text : text.slice(0, dot))
  const nsec = dot === -1 ? 0 : Number(text.slice(dot + 1, dot + 10).padEnd(9, '0'))
  return sec * 1e3 + nsec / 1e6
}

/** The stat signature of a file, or null when it cannot be read (the record is then read again and reports it). */
export function statSignature(file: string): string | null {
  try {
    return sourceSignature(statSync(file))
  } catch {
    return null
  }
}

/** A record file named by a changed-files list: its kind's pattern index and its data-relative path. */
export type NamedSource = [pattern: number, file: string]

/**
 * The record files a changed-files list names (BUILD_CHANGED_FILES, README "Configuration"): one
 * path a line, relative to the data folder (`#` comments and blank lines skipped), as
 * `git diff --name-only` prints them from the data folder. Each is kept with the index of the first
 * of `patterns` it matches; a line naming an existing file no pattern matches (a blob: the load
 * checks every blob anyway) is accepted and left out. Throws, naming the line, on a path that
 * leaves the data folder, that names a folder, or that matches no pattern and names no file in it:
 * most likely paths relative to another folder, which would otherwise read nothing and publish
 * stale rows.
 */
export function readChangedFiles(listFile: string, dataDir: string, patterns: readonly string[]): NamedSource[] {
  const matchers = patterns.map(patternRegExp)
  const named = new Map<string, number>()
  const lines = readFileSync(listFile, 'utf8').split('\n')
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '').trim()
    if (line === '' || line.startsWith('#')) continue
    const where = `${listFile}:${i + 1}`
    if (line.includes('\0') || path.posix.isAbsolute(line) || line.includes('\\')) throw new Error(`${where}: ${JSON.stringify(line)} is not a path relative to the data folder`)
    const file = path.posix.normalize(line)
    if (file === '..' || file.startsWith('../')) throw new Error(`${where}: ${JSON.stringify(line)} is outside the data folder`)
    const kind = matchers.findIndex((m) => m.test(file))
    if (kind !== -1) {
      named.set(file, kind)
      continue
    }
    const stats = statSync(path.join(dataDir, file), { throwIfNoEntry: false })
    if (!stats) throw new Error(`${where}: ${JSON.stringify(line)} is no record file and no file of ${dataDir} (paths are relative to the data folder)`)
    // A folder would stand for the files in it, which the load would not look at: each must be named.
    if (stats.isDirectory()) throw new Error(`${where}: ${JSON.stringify(line)} is a folder: name the files in it that changed`)
  }
  return [...named].map(([file, kind]) => [kind, file])
}
