/**
 * Runs one `npm run build` as a child process and measures it: wall time, CPU (user + system of
 * the process and its waited-for children, from /proc/<pid>/stat), peak RSS (VmHWM, sampled every
 * 200 ms: it only grows) and the largest sampled RSS of the build and its worker processes together, the phases from its progress lines, and the release it produced.
 */
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { readMemoryMb, readTreeRssMb } from './proc.ts'
import type { BuildRun, Phases } from './build-schema.ts'

/** What to build. */
export interface BuildRunOptions {
  kind: BuildRun['kind']
  dataDir: string
  distDir: string
  /** Extra node flags (e.g. --cpu-prof). */
  nodeArgs: string[]
  /** Checkout whose build/cli.ts runs (another commit, to compare on the same catalog). */
  sourceRoot: string
  /** Environment of the build (KEEP_RELEASES and the like) added to this process's. */
  env?: Record<string, string>
  log: (line: string) => void
}

const ticksPerSecond = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** utime + stime + cutime + cstime of a process in seconds, or null once it is gone. */
function readCpuWithChildren(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
    return Number.isFinite(ticks) ? ticks / ticksPerSecond : null
  } catch {
    return null
  }
}

/** Builds once and returns the measurements; throws when the build fails. */
export async function runMeasuredBuild(options: BuildRunOptions): Promise<BuildRun> {
  const started = performance.now()
  const viteNode = path.join(options.sourceRoot, 'node_modules', 'vite-node', 'dist', 'cli.mjs')
  const child = spawn(process.execPath, [...options.nodeArgs, viteNode, 'build/cli.ts', '--', '--data', options.dataDir, '--dist', options.distDir], {
    cwd: options.sourceRoot,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'inherit', 'pipe'],
  })
  let cpu = 0
  let peak = 0
  let treePeak = 0
  // When the largest sum was sampled: seconds since the start and the build's last line before it.
  let treePeakAt: { seconds: number; afterLine: string } | null = null
  const lines: string[] = []
  const sample = (): void => {
    const tree = readTreeRssMb(child.pid!) ?? 0
    if (tree > treePeak) {
      treePeak = tree
      treePeakAt = { seconds: (performance.now() - started) / 1000, afterLine: lines[lines.length - 1] ?? '' }
    }
    cpu = readCpuWithChildren(child.pid!) ?? cpu
    // An exited, not yet reaped process has no VmHWM line (NaN): keep the last figure.
    const hwm = readMemoryMb(child.pid!)?.peakMb ?? Number.NaN
    if (Number.isFinite(hwm)) peak = Math.max(peak, hwm)
  }
  const timer = setInterval(sample, 200)
  let partial = ''
  child.stderr!.on('data', (chunk: Buffer) => {
    sample()
    const text = partial + chunk.toString()
    const parts = text.split('\n')
    partial = parts.pop()!
    for (const line of parts) {
      lines.push(line)
      options.log(`  ${line}`)
    }
  })
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
  clearInterval(timer)
  const wallSeconds = (performance.now() - started) / 1000
  if (code !== 0) throw new Error(`the ${options.kind} build exited with ${code}:\n${lines.slice(-20).join('\n')}`)
  const releaseDir = realpathSync(path.join(options.distDir, 'current'))
  const pointer = JSON.parse(readFileSync(path.join(releaseDir, 'release.json'), 'utf8')) as {
    id: string
    files: number
    bodies: number
    bytes: number
    changes: BuildRun['changes']
    snapshot: { size: number } | null
    archive: { size: number } | null
  }
  const phases = readPhases(lines, wallSeconds)
  const written = /; (\d+) bodies written\)/.exec(lines.join('\n'))
  const kept = /^Staging kept from the last build: read (\d+) changed record files( \(of the \d+ BUILD_CHANGED_FILES names)?/m.exec(lines.join('\n'))
  return {
    kind: options.kind,
    wallSeconds,
    cpuSeconds: cpu,
    peakRssMb: peak,
    peakTreeRssMb: treePeak,
    peakTreeRssAt: treePeakAt,
    phases: phases.wall,
    phasesCpu: phases.cpu,
    release: pointer.id,
    files: pointer.files,
    bodies: pointer.bodies,
    bodyBytes: pointer.bytes,
    bodiesWritten: written ? Number(written[1]) : null,
    recordFilesRead: kept ? Number(kept[1]) : null,
    changedFilesNamed: kept ? kept[2] !== undefined : false,
    changes: pointer.changes,
    filesPerSecond: phases.wall.render ? pointer.files / phases.wall.render : null,
    releaseDiskMb: measureDiskMb([releaseDir]),
    distDiskMb: measureDiskMb([options.distDir]),
    catalogSqliteMb: statSync(path.join(releaseDir, 'catalog.sqlite')).size / 1e6,
    snapshotMb: pointer.snapshot ? pointer.snapshot.size / 1e6 : null,
    archiveMb: pointer.archive ? pointer.archive.size / 1e6 : null,
  }
}

/**
 * Phase durations from the build's progress lines (build/index.ts, build/release/seal.ts): each
 * line carries the seconds since the build (or the sealing) started, and the CPU seconds since.
 */
export function readPhases(lines: readonly string[], wallSeconds: number): { wall: Phases; cpu: Phases } {
  const find = (re: RegExp): { wall: number; cpu: number | null } | null => {
    for (const line of lines) {
      // A line may go on after its CPU figure (`; …`: the manifest's says how many gzip members it copied).
      const m = new RegExp(`${re.source}(?: \\(CPU ([\\d.]+)s\\))?(?:; .*)?$`).exec(line)
      if (m) return { wall: Number(m[1]), cpu: m[2] === undefined ? null : Number(m[2]) }
    }
    return null
  }
  const marks = {
    loaded: find(/^Loaded .* in ([\d.]+)s/),
    catalog: find(/^Wrote the catalog database in ([\d.]+)s/),
    tree: find(/^Wrote the static tree .* in ([\d.]+)s/),
    manifest: find(/^Wrote the manifest .* after ([\d.]+)s of sealing/),
    snapshot: find(/^Wrote the snapshot .* after ([\d.]+)s of sealing/),
    archive: find(/^Wrote the archive .* after ([\d.]+)s of sealing/),
    sync: find(/^Synced the file system after ([\d.]+)s of sealing/),
  }
  // Their own CPU, when the snapshot and the archive are written by worker processes.
  const workerCpu = (name: string): number | null => {
    const m = lines.map((l) => new RegExp(`^The ${name} worker used ([\\d.]+)s of CPU`).exec(l)).find(Boolean)
    return m ? Number(m[1]) : null
  }
  const total = Number(/ in ([\d.]+)s → release/.exec(lines.join('\n'))?.[1] ?? wallSeconds)
  const pick = (key: 'wall' | 'cpu'): Phases => {
    const at = (m: { wall: number; cpu: number | null } | null): number | null => (m ? m[key] : null)
    const diff = (a: number | null, b: number | null): number | null => (a === null || b === null ? null : Math.max(0, a - b))
    const sealed = [marks.manifest, marks.snapshot, marks.archive].map((m) => (m ? m.wall : null)).reduce(latest, null)
    const lastSeal = marks.sync?.wall ?? sealed
    return {
      load: at(marks.loaded),
      catalog: diff(at(marks.catalog), at(marks.loaded)),
      render: diff(at(marks.tree), at(marks.catalog)),
      // The manifest, the snapshot and the archive are written at the same time (build/release/seal.ts):
      // each from the start of the seal to its own end. CPU: the build process's for the manifest
      // (which includes hashing the catalog), each worker's own for the snapshot and the archive.
      manifest: at(marks.manifest),
      snapshot: key === 'wall' ? at(marks.snapshot) : (workerCpu('snapshot') ?? at(marks.snapshot)),
      archive: key === 'wall' ? at(marks.archive) : (workerCpu('archive') ?? at(marks.archive)),
      sync: key === 'wall' ? diff(marks.sync?.wall ?? null, sealed) : diff(at(marks.sync), [marks.manifest, marks.snapshot, marks.archive].map(at).reduce(latest, null)),
      publish: key === 'cpu' || at(marks.tree) === null || lastSeal === null ? null : Math.max(0, total - at(marks.tree)! - lastSeal),
    }
  }
  return { wall: pick('wall'), cpu: pick('cpu') }
}

/** The later of two marks (either may be missing). */
function latest(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.max(a, b)
}

/** Disk usage in MB of paths counted together (`du -sk`: a hard-linked inode counts once). */
export function measureDiskMb(paths: readonly string[]): number | null {
  const out = execFileSync('du', ['-sck', ...paths], { encoding: 'utf8', maxBuffer: 1 << 20 })
  const total = /^(\d+)\s+total$/m.exec(out)
  return total ? Number(total[1]) / 1024 : null
}
