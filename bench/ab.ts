/**
 * Before and after on one workload: the shim of another commit (`--before`, checked out as a git
 * worktree under the work folder, its node_modules this checkout's) and this checkout's shim, both
 * started as `npm run serve` starts them over the same release tree, each warmed on its own, then
 * measured in alternated runs of wrk (bench/compare.ts: the order rotates per repetition), so the
 * host's drift from minute to minute moves both sides alike. The shim's CPU per request, read from
 * /proc over each run, is the figure to compare: on these shared machines it moved by ±4% between
 * runs where requests/s and the p99 moved by ±15% (bench/results/PROFILE.md, Session 53).
 *
 * Before and after the warm-up, the first requests of the list are asked of both and must get the
 * same status, ETag and bytes: a change measured here is one that does not change answers.
 *
 *   npm run bench:ab -- --before REF --dist DIR [--list FILE] [--mix N] [--reps N] [--seconds N]
 *     [--connections N] [--warmup N] [--cache-bytes N] [--after-env NAME=VALUE]... [--out FILE]
 *
 * `--list` is a list of request paths as the serving bench writes them (default: its bulk-hashes
 * list, bench/.work/dynamic-bulk-hashes.tsv); `--mix N` draws N values of the list's parameter
 * afresh for every request (lua/urls.lua's mix mode: 100 makes the bench's bulk-hashes-unique).
 * `--after-env NAME=VALUE` (repeatable) sets an environment variable of the after shim only, so a
 * setting can be measured with the same code on both sides (`--before HEAD`).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { compareServers } from './compare.ts'
import { median } from './stats.ts'
import { ROOT, startShim, type ServerHandle } from './servers.ts'
import { runWrk } from './wrk.ts'

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    before: { type: 'string' },
    dist: { type: 'string' },
    list: { type: 'string', default: path.join(ROOT, 'bench/.work/dynamic-bulk-hashes.tsv') },
    mix: { type: 'string' },
    reps: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '20' },
    'cache-bytes': { type: 'string' },
    'after-env': { type: 'string', multiple: true, default: [] },
    work: { type: 'string', default: path.join(ROOT, 'bench/.work') },
    out: { type: 'string' },
  },
})

/** Refuses the command line: the message, and exit 2, as the other bench commands do with a bad flag. */
function fail(message: string): never {
  console.error(`bench:ab: ${message}`)
  process.exit(2)
}

/** A whole number option, refused with its name when it is not one. */
function count(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) fail(`--${name} must be a whole number of at least ${min}, not "${value}"`)
  return n
}

if (values.before === undefined || values.dist === undefined) {
  console.error('usage: npm run bench:ab -- --before REF --dist DIR [--list FILE] [--mix N] [--reps N] [--seconds N] [--connections N] [--warmup N] [--cache-bytes N] [--after-env NAME=VALUE]... [--out FILE]')
  process.exit(2)
}
const reps = count('reps', values.reps, 1)!
const seconds = count('seconds', values.seconds, 1)!
const connections = count('connections', values.connections, 1)!
const warmupSeconds = count('warmup', values.warmup, 0)!
const mix = count('mix', values.mix, 1)
const cacheBytes = count('cache-bytes', values['cache-bytes'], 0)
/** The after shim's own environment variables (`--after-env NAME=VALUE`). */
const afterEnv: Record<string, string> = {}
for (const pair of values['after-env']!) {
  const eq = pair.indexOf('=')
  if (eq <= 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(pair.slice(0, eq))) fail(`--after-env must be NAME=VALUE with a variable name, not "${pair}"`)
  afterEnv[pair.slice(0, eq)] = pair.slice(eq + 1)
}
const afterNote = Object.keys(afterEnv).length === 0 ? '' : ` with ${Object.entries(afterEnv).map(([k, v]) => `${k}=${v}`).join(' ')}`
const distDir = path.resolve(values.dist)
const listFile = path.resolve(values.list!)
if (!existsSync(path.join(distDir, 'current'))) fail(`--dist ${distDir} holds no release (no current pointer): build one first`)
if (!existsSync(listFile)) fail(`--list ${listFile} does not exist: npm run bench writes the serving lists into bench/.work`)

/** The commit `ref` names, checked out (once) as a worktree in the work folder, with this checkout's node_modules. */
function checkout(ref: string): { root: string; commit: string } {
  const rev = spawnSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' })
  if (rev.status !== 0) fail(`--before ${ref} names no commit: ${rev.stderr.trim()}`)
  const commit = rev.stdout.trim()
  const root = path.join(path.resolve(values.work!), `ab-${commit.slice(0, 12)}`)
  if (!existsSync(root)) {
    const add = spawnSync('git', ['worktree', 'add', '--detach', root, commit], { cwd: ROOT, encoding: 'utf8' })
    if (add.status !== 0) throw new Error(`git worktree add ${root} failed: ${add.stderr.trim()}`)
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(root, 'node_modules'))
  }
  return { root, commit }
}

const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim()
const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).stdout.trim() !== ''
const before = checkout(values.before)
const env = cacheBytes === undefined ? undefined : { CACHE_BYTES: String(cacheBytes) }
const log = (line: string): void => console.log(line)
const servers: ServerHandle[] = []
const stopAll = (): void => servers.forEach((s) => s.kill())
process.on('SIGINT', () => {
  stopAll()
  process.exit(130)
})

// The list's first request is the probe both must answer with a 200 before they count as started.
const paths = readFileSync(listFile, 'utf8').split('\n').map((line) => line.split('\t')[0]!).filter((p) => p !== '').slice(0, 20)
if (paths.length === 0) fail(`--list ${listFile} holds no request path`)

try {
  const a = await startShim({ distDir, port: 18401, workDir: values.work!, root: before.root, env, probePath: paths[0]! })
  servers.push(a)
  const b = await startShim({ distDir, port: 18402, workDir: values.work!, env: { ...env, ...afterEnv }, probePath: paths[0]! })
  servers.push(b)
  const sides = [
    { handle: { ...a, name: 'before' }, listFile, mix },
    { handle: { ...b, name: 'after' }, listFile, mix },
  ]
  log(`before: ${before.commit.slice(0, 12)} (pid ${a.pid}, first answer ${Math.round(a.startMs)} ms); after: this checkout, ${head}${dirty ? ' with uncommitted changes' : ''}${afterNote} (pid ${b.pid}, first answer ${Math.round(b.startMs)} ms)`)

  await sameAnswers(a, b, 'cold')

  // Each warmed on its own: a pass over the list, then as many seconds of the measured load.
  for (const side of sides) {
    if (warmupSeconds === 0) break
    const pass = await runWrk({ port: side.handle.port, listFile, ifNoneMatch: false, connections, durationSeconds: warmupSeconds })
    const load = mix === undefined ? pass : await runWrk({ port: side.handle.port, listFile, ifNoneMatch: false, connections, durationSeconds: warmupSeconds, mix })
    if (pass.errors + load.errors > 0) throw new Error(`${side.handle.name}: ${pass.errors + load.errors} errors while warming up`)
    log(`warmed ${side.handle.name}: ${pass.requests} requests of the list${mix === undefined ? '' : `, then ${load.requests} drawn as measured`}`)
  }

  await sameAnswers(a, b, 'warm')

  const peakRss = new Map<number, number>()
  const rows = await compareServers(sides, { reps, durationSeconds: seconds, connections, ifNoneMatch: false, log, peakRss })
  const [rowA, rowB] = rows
  const perRep = rowA!.reps.map((r, i) => ({
    beforeUs: round1((r.serverCpuPct * 1e4) / r.rps),
    afterUs: round1((rowB!.reps[i]!.serverCpuPct * 1e4) / rowB!.reps[i]!.rps),
  }))
  const ratios = perRep.map((r) => r.afterUs / r.beforeUs)
  log('')
  log(`| ${connections} in flight | before (${before.commit.slice(0, 7)}) | after (${head}${dirty ? '+' : ''}${afterNote}) |`)
  log('|---|---|---|')
  log(`| requests/s, median [min–max] | ${rowA!.rps.median} [${rowA!.rps.min}–${rowA!.rps.max}] | ${rowB!.rps.median} [${rowB!.rps.min}–${rowB!.rps.max}] |`)
  log(`| p99 ms, median [min–max] | ${rowA!.p99Ms.median} [${rowA!.p99Ms.min}–${rowA!.p99Ms.max}] | ${rowB!.p99Ms.median} [${rowB!.p99Ms.min}–${rowB!.p99Ms.max}] |`)
  log(`| server µs of CPU a request, median | ${rowA!.serverCpuUsPerRequest} | ${rowB!.serverCpuUsPerRequest} |`)
  log(`| each repetition's µs (before / after) | ${perRep.map((r) => `${r.beforeUs} / ${r.afterUs}`).join(', ')} | |`)
  log(`after / before CPU a request, per repetition: median ${round3(median(ratios))} [${round3(Math.min(...ratios))}–${round3(Math.max(...ratios))}], lower after in ${ratios.filter((r) => r < 1).length} of ${ratios.length}`)
  if (values.out !== undefined) {
    writeFileSync(path.resolve(values.out), JSON.stringify({ date: new Date().toISOString(), before: before.commit, after: `${head}${dirty ? '+' : ''}`, distDir, listFile, mix: mix ?? null, connections, seconds, reps, cacheBytes: cacheBytes ?? null, afterEnv, rows, perRep }, null, 2) + '\n')
    log(`written: ${values.out}`)
  }
} finally {
  await Promise.all(servers.map((s) => s.stop()))
}

/** The same answers on both sides: status, ETag and bytes of the list's first requests. */
async function sameAnswers(a: ServerHandle, b: ServerHandle, when: string): Promise<void> {
  for (const urlPath of paths) {
    const [x, y] = await Promise.all([a, b].map(async (s) => {
      const res = await fetch(`http://127.0.0.1:${s.port}${urlPath}`)
      return { status: res.status, etag: res.headers.get('etag'), bytes: Buffer.from(await res.arrayBuffer()) }
    }))
    if (x!.status !== y!.status || x!.etag !== y!.etag || !x!.bytes.equals(y!.bytes)) {
      throw new Error(`${urlPath.slice(0, 120)} (${when}): before answered ${x!.status} ${x!.etag} (${x!.bytes.length} bytes), after ${y!.status} ${y!.etag} (${y!.bytes.length} bytes)`)
    }
  }
  log(`${when}: the same status, ETag and bytes from both for the list's first ${paths.length} requests`)
}

function round1(n: number): number {
  return Math.round(n * 10) / 10
}
function round3(n: number): number {
  return Math.round(n * 1000) / 1000
}
