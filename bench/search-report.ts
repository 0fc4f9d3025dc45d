/** Shapes and the Markdown table of bench/search.ts results. */

/** Latency (ms, one request at a time) and throughput (req/s, with the configured concurrency). */
export interface Measured {
  requests: number
  p50: number
  p99: number
  max: number
  rps: number
}

/** One query class: ours and the LIKE baseline. */
export interface ClassResult {
  name: string
  examples: string[]
  ours: Measured
  like: Measured
}

/** The whole report written to bench/results/search.json. */
export interface SearchReport {
  date: string
  machine: { nproc: number; memoryGb: number; cpuModel: string; kernel: string; loadAverage: number[] }
  versions: { node: string; sqlite: string }
  catalog: { dist: string; projects: number }
  settings: { requests: number; likeRequests: number; concurrency: number; resultCache: string }
  classes: ClassResult[]
  index: { buildSeconds: number; totalBytes: number; tables: Record<string, number> }
}

const ms = (n: number): string => (n < 10 ? n.toFixed(2) : n.toFixed(1))
const mb = (n: number): string => (n / 2 ** 20).toFixed(1)

/** The Markdown report. */
export function renderSearchMarkdown(r: SearchReport): string {
  const goal = (m: Measured): string => (m.p99 < 20 ? '✔' : '✖')
  const lines = [
    '# Search benchmark (`npm run bench:search`)',
    '',
    `${r.date} · ${r.machine.cpuModel}, ${r.machine.nproc} cores, ${r.machine.memoryGb} GB, Linux ${r.machine.kernel} · Node ${r.versions.node}, SQLite ${r.versions.sqlite} · load average at the end ${r.machine.loadAverage.join(' / ')}`,
    '',
    `Catalog: ${r.catalog.projects.toLocaleString('en')} projects (${r.catalog.dist}). Through HTTP on loopback; latency = one request at a time (${r.settings.requests} per class, ${r.settings.likeRequests} for LIKE), throughput = ${r.settings.concurrency} in flight (LIKE: 2). Result cache: ${r.settings.resultCache}.`,
    '',
    '| class | ours p50 ms | ours p99 ms | ours max ms | ours req/s | p99 < 20 ms | LIKE p50 ms | LIKE p99 ms | LIKE req/s | p50 speed-up |',
    '|---|---:|---:|---:|---:|:-:|---:|---:|---:|---:|',
    ...r.classes.map((c) => `| ${c.name} | ${ms(c.ours.p50)} | ${ms(c.ours.p99)} | ${ms(c.ours.max)} | ${Math.round(c.ours.rps)} | ${goal(c.ours)} | ${ms(c.like.p50)} | ${ms(c.like.p99)} | ${c.like.rps.toFixed(1)} | ${Math.round(c.like.p50 / c.ours.p50)}× |`),
    '',
    `Search index: built in ${r.index.buildSeconds.toFixed(1)} s from the projects table; ${mb(r.index.totalBytes)} MB in all:`,
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
