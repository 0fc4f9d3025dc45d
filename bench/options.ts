/** Options of `npm run bench` from flags and environment (README of bench/ lists them). */
import path from 'node:path'

/** Resolved benchmark options. */
export interface BenchOptions {
  distDir: string
  outDir: string
  workDir: string
  only: Set<'static' | 'dynamic' | 'memory' | 'search'>
  reps: number
  durationSeconds: number
  warmupSeconds: number
  connections: number
  dynamicReps: number
  dynamicDurationSeconds: number
  dynamicConcurrencies: number[]
  requests: number
  dynamicDistinct: number
  seed: number
  zipfExponent: number
  startups: number
  /** CACHE_BYTES for the shim ('' = the shim's default). */
  cacheBytes: string
  basePort: number
  /** Extra node flags for the shim (e.g. --cpu-prof). */
  shimNodeArgs: string[]
  /** A serve.json to re-render serve.md/svg from ('' = measure). */
  render: string
}

/** Flags whose value is itself a list of flags. */
const VALUE_MAY_START_WITH_DASHES = new Set(['shim-node-args'])

/** Reads `--name value` flags, falling back to BENCH_* variables and defaults. */
export function resolveBenchOptions(argv: readonly string[], env: Record<string, string | undefined>, root: string): BenchOptions {
  const flags = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith('--')) continue
    // Split at the first '=' only: `--shim-node-args=--cpu-prof --cpu-prof-dir=DIR` keeps its value whole.
    const eq = a.indexOf('=')
    const name = eq < 0 ? a.slice(2) : a.slice(2, eq)
    const inline = eq < 0 ? undefined : a.slice(eq + 1)
    if (inline !== undefined) flags.set(name, inline)
    // Node flags start with '--' themselves: the next argument is the value whatever it looks like.
    else if (argv[i + 1] !== undefined && (VALUE_MAY_START_WITH_DASHES.has(name) || !argv[i + 1]!.startsWith('--'))) flags.set(name, argv[++i]!)
    else flags.set(name, 'true')
  }
  const get = (name: string, fallback: string): string => flags.get(name) ?? env[`BENCH_${name.toUpperCase().replace(/-/g, '_')}`] ?? fallback
  const num = (name: string, fallback: number): number => {
    const n = Number(get(name, String(fallback)))
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`)
    return n
  }
  const only = get('only', 'static,dynamic,memory,search').split(',').map((s) => s.trim())
  for (const o of only) if (!['static', 'dynamic', 'memory', 'search'].includes(o)) throw new Error(`--only: unknown part ${o}`)
  return {
    distDir: path.resolve(root, get('dist', env.DIST_DIR ?? 'dist')),
    outDir: path.resolve(root, get('out', 'bench/results')),
    workDir: path.resolve(root, get('work', 'bench/.work')),
    only: new Set(only as ('static' | 'dynamic' | 'memory' | 'search')[]),
    reps: num('reps', 5),
    durationSeconds: num('duration', 10),
    warmupSeconds: num('warmup', 5),
    connections: num('connections', 32),
    dynamicReps: num('dynamic-reps', 3),
    dynamicDurationSeconds: num('dynamic-duration', 10),
    dynamicConcurrencies: get('dynamic-concurrency', '1,32').split(',').map(Number).filter((n) => n > 0),
    requests: num('requests', 100_000),
    dynamicDistinct: num('dynamic-distinct', 1000),
    seed: num('seed', 7),
    zipfExponent: num('zipf', 1),
    startups: num('startups', 3),
    cacheBytes: get('cache-bytes', ''),
    basePort: num('port', 18080),
    shimNodeArgs: get('shim-node-args', '').split(' ').filter(Boolean),
    render: flags.has('render') ? path.resolve(root, get('render', '')) : '',
  }
}
