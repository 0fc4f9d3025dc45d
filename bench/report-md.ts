/** The Markdown report of serve.json: tables the README links to. */
import type { Scenario, ServeResults } from './results-schema.ts'

const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toFixed(digits) : '–')

/** Renders the whole report. */
export function renderServeMarkdown(r: ServeResults): string {
  const out: string[] = []
  const staticRows = r.scenarios.filter((s) => s.name.startsWith('static-'))
  const dynamic = r.scenarios.filter((s) => !s.name.startsWith('static-'))
  out.push('# Serving benchmark: shim vs nginx vs raw Node', '')
  out.push(`Measured ${r.date} by \`npm run bench\` (bench/README.md). Raw figures: [serve.json](serve.json). Chart:`, '', '![requests per second and p99 latency](serve.svg)', '')
  out.push('| | |', '|---|---|')
  out.push(`| catalog | ${r.catalog.projects.toLocaleString('en')} projects, ${r.catalog.versions.toLocaleString('en')} versions, ${r.catalog.files.toLocaleString('en')} files, ${r.catalog.users.toLocaleString('en')} users (release ${r.catalog.release} of \`${r.catalog.distDir}\`) |`)
  out.push(`| machine | ${r.machine.nproc} CPUs (${r.machine.cpuModel}), ${r.machine.memoryGb} GB, Linux ${r.machine.kernel} |`)
  out.push(`| versions | Node ${r.versions.node}, nginx ${r.versions.nginx}, wrk ${r.versions.wrk}, h3 ${r.versions.h3} |`)
  out.push(`| load | wrk, ${r.method.wrkThreads} thread, ${r.method.connections} keep-alive connections, ${r.method.repetitions} × ${r.method.durationSeconds} s per server and scenario, loopback |`)
  const w = r.staticWorkload
  out.push(`| static URLs | ${w.requests.toLocaleString('en')} requests (${Object.entries(w.kinds).map(([k, n]) => `${n.toLocaleString('en')} ${k}`).join(', ')}) drawn with Zipf s = ${r.method.zipfExponent} over ${w.distinctUrls.toLocaleString('en')} distinct URLs (${fmt(w.distinctBytes / 2 ** 20, 1)} MB); the 1% most requested URLs get ${fmt(100 * w.top1PctShare)}% of requests |`, '')
  out.push('Method notes:', '', ...r.method.notes.map((n) => `- ${n}`), '')
  if (r.goals.length > 0) {
    out.push('## Goals (issue 7)', '', '| goal | measured | met |', '|---|---|---|')
    for (const g of r.goals) out.push(`| ${g.goal} | ${g.measured} | ${g.met ? 'yes' : '**no**'} |`)
    out.push('')
  }
  for (const s of staticRows) out.push(...renderStaticTable(s))
  if (dynamic.length > 0) out.push(...renderDynamicTable(dynamic))
  if (r.memory) {
    const m = r.memory
    out.push('## Memory and start-up of the shim', '')
    out.push('| figure | value |', '|---|---:|')
    out.push(`| time from process start to the first 200 (median [min–max]) | ${fmt(m.startMs.median)} ms [${fmt(m.startMs.min)}–${fmt(m.startMs.max)}] |`)
    out.push(`| RSS 1 s after start | ${fmt(m.rssAfterStartMb)} MB |`)
    if (m.rssStaticMaxMb !== null) out.push(`| RSS under the static reads (largest 250 ms sample) | ${fmt(m.rssStaticMaxMb)} MB |`)
    out.push(`| RSS under all load, static and dynamic (largest 250 ms sample) | ${fmt(m.rssUnderLoadMaxMb)} MB |`)
    out.push(`| peak RSS of the process (VmHWM) | ${fmt(m.peakRssMb)} MB |`)
    out.push(`| static cache bound (CACHE_BYTES) | ${fmt(m.cacheBytes / 2 ** 20)} MB |`, '')
  }
  return out.join('\n') + '\n'
}

function renderStaticTable(s: Scenario): string[] {
  const out = [`## ${s.name === 'static-304' ? '304 (If-None-Match)' : '200 OK'} — static reads, concurrency ${s.connections}`, '', `${s.description}.`, '']
  out.push('| server | req/s median | req/s min–max | spread % | ratio vs raw node (median [min–max] of per-rep ratios) | p50 ms | p99 ms (median [min–max]) | server CPU | server CPU µs/request | wrk CPU | bytes/response | errors |')
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const row of s.rows) {
    const ratio = row.ratioVsRaw ? `${row.ratioVsRaw.median.toFixed(2)} [${row.ratioVsRaw.min.toFixed(2)}–${row.ratioVsRaw.max.toFixed(2)}]` : '–'
    out.push(`| ${row.server} | ${fmt(row.rps.median)} | ${fmt(row.rps.min)}–${fmt(row.rps.max)} | ${fmt(row.rps.spreadPct)} | ${ratio} | ${fmt(row.p50Ms, 2)} | ${fmt(row.p99Ms.median, 2)} [${fmt(row.p99Ms.min, 2)}–${fmt(row.p99Ms.max, 2)}] | ${fmt(row.serverCpuPct)}% | ${fmt(row.serverCpuUsPerRequest, 1)} | ${fmt(row.wrkCpuPct)}% | ${fmt(row.bytesPerResponse)} | ${row.errors === 0 ? `none (n=${row.reps.length})` : `**${row.errors}**`} |`)
  }
  out.push('')
  return out
}

function renderDynamicTable(scenarios: readonly Scenario[]): string[] {
  const out = ['## Dynamic endpoints of the shim', '']
  out.push('| endpoint | connections | req/s median [min–max] | p50 ms | p99 ms (median [min–max]) | server CPU | server CPU µs/request | bytes/response | errors |')
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const s of scenarios) {
    const row = s.rows[0]!
    out.push(`| ${s.name.replace(/-c\d+$/, '')} | ${s.connections} | ${fmt(row.rps.median)} [${fmt(row.rps.min)}–${fmt(row.rps.max)}] | ${fmt(row.p50Ms, 2)} | ${fmt(row.p99Ms.median, 2)} [${fmt(row.p99Ms.min, 2)}–${fmt(row.p99Ms.max, 2)}] | ${fmt(row.serverCpuPct)}% | ${fmt(row.serverCpuUsPerRequest, 0)} | ${fmt(row.bytesPerResponse)} | ${row.errors === 0 ? 'none' : `**${row.errors}**`} |`)
  }
  out.push('', 'Workloads:', '')
  const seen = new Set<string>()
  for (const s of scenarios) {
    const name = s.name.replace(/-c\d+$/, '')
    if (seen.has(name)) continue
    seen.add(name)
    out.push(`- **${name}**: ${s.description}`)
  }
  out.push('')
  return out
}
