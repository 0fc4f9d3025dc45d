/** Shapes and the Markdown table of bench/search.ts results. */

/** Latency (ms, one request at a time) and throughput (req/s, with the configured concurrency). */
export interface Measured {
  requests: number
  p50: number
  p99: number
  max: number
  rps: number
  /** The server's CPU time per request (user + system, ms) over the one-at-a-time requests. */
  cpuMs?: number
}

/** One query class: ours, the earlier version (--base-root) and the LIKE baseline. */
export interface ClassResult {
  name: string
  examples: string[]
  ours: Measured
  base?: Measured
  like?: Measured
}

/** The whole report written to bench/results/search.json. */
export interface SearchReport {
  date: string
  machine: { nproc: number; memoryGb: number; cpuModel: string; kernel: string; loadAverage: number[] }
  versions: { node: string; sqlite: string }
  catalog: { dist: string; projects: number }
  settings: { requests: number; likeRequests: number; concurrency: number; resultCache: string; base?: string }
  classes: ClassResult[]
  index: { buildSeconds: number | null; totalBytes: number; tables: Record<string, number> }
}

const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1))
const mb = (n: number): string => (n / 2 ** 20).toFixed(1)

/** The Markdown report. */
export function renderSearchMarkdown(r: SearchReport): string {
  const goal = (m: Measured): string => (m.p99 < 20 ? '✔' : '✖')
  const cpu = (m: Measured | undefined): string => (m?.cpuMs === undefined ? '–' : m.cpuMs.toFixed(2))
  const hasBase = r.classes.some((c) => c.base)
  const hasLike = r.classes.some((c) => c.like)
  const head = ['class', 'p50 ms', 'p99 ms', 'max ms', 'CPU ms/req', 'req/s', 'p99 < 20 ms']
  if (hasBase) head.push('before: p50 ms', 'before: p99 ms', 'before: CPU ms/req')
  if (hasLike) head.push('LIKE p50 ms', 'LIKE p99 ms', 'LIKE req/s', 'p50 speed-up vs LIKE')
  const row = (c: ClassResult): string => {
    const cells = [c.name, ms(c.ours.p50), ms(c.ours.p99), ms(c.ours.max), cpu(c.ours), String(Math.round(c.ours.rps)), goal(c.ours)]
    if (hasBase) cells.push(c.base ? ms(c.base.p50) : '–', c.base ? ms(c.base.p99) : '–', cpu(c.base))
    if (hasLike) cells.push(...(c.like ? [ms(c.like.p50), ms(c.like.p99), c.like.rps.toFixed(1), `${Math.round(c.like.p50 / c.ours.p50)}×`] : ['–', '–', '–', '–']))
    return `| ${cells.join(' | ')} |`
  }
  const met = r.classes.filter((c) => c.ours.p99 < 20).length
  const lines = [
    '# Search benchmark (`npm run bench:search`)',
    '',
    `${r.date} · ${r.machine.cpuModel}, ${r.machine.nproc} cores, ${r.machine.memoryGb} GB, Linux ${r.machine.kernel} · Node ${r.versions.node}, SQLite ${r.versions.sqlite} · load average at the end ${r.machine.loadAverage.join(' / ')}`,
    '',
    `Catalog: ${r.catalog.projects.toLocaleString('en')} projects (${r.catalog.dist}). Through HTTP on loopback; latency = one request at a time (${r.settings.requests} per class${hasLike ? `, ${r.settings.likeRequests} for LIKE` : ''}), CPU = the server process's user + system time over those requests (10 ms ticks), throughput = ${r.settings.concurrency} in flight${hasLike ? ' (LIKE: 2)' : ''}. Result cache: ${r.settings.resultCache}.${r.settings.base ? ` "before" = ${r.settings.base}, measured class by class in the same run.` : ''}`,
    '',
    `p99 under 20 ms: ${met} of ${r.classes.length} classes.`,
    '',
    `| ${head.join(' | ')} |`,
    `|---|${head.slice(1).map((h) => (h.startsWith('p99 <') ? ':-:' : '---:')).join('|')}|`,
    ...r.classes.map(row),
    '',
    `Search index: ${r.index.buildSeconds === null ? 'build not timed in this run' : `built in ${r.index.buildSeconds.toFixed(1)} s from the projects table`}; ${mb(r.index.totalBytes)} MB in all:`,
    '',
    '| table | MB |',
    '|---|---:|',
    ...Object.entries(r.index.tables).map(([t, b]) => `| ${t} | ${mb(b)} |`),
    '',
    'Example requests per class:',
    '',
    ...r.classes.map((c) => `- ${c.name}: ${c.examples.map((e) => `\`${e}\``).join(', ')}`),
    '',
  ]
  return lines.join('\n')
}
