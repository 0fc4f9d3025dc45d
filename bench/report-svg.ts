/**
 * The chart of serve.json, hand-written SVG: static req/s per server (bar = median, whisker =
 * min–max, label = ratio vs raw node), and the p99 of the dynamic endpoints against their goal.
 */
import type { ServeResults } from './results-schema.ts'

const COLORS: Record<string, string> = { 'raw node': '#7f8c8d', 'raw node + headers': '#b2bec3', shim: '#2e86de', nginx: '#27ae60' }
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

/** Renders the SVG document. */
export function renderServeSvg(r: ServeResults): string {
  const width = 860
  const labelW = 190
  const barW = width - labelW - 290
  const parts: string[] = []
  let y = 30
  parts.push(`<text x="10" y="20" font-size="15" font-weight="bold">Static reads, req/s (median, whisker = min–max; ratio vs raw node) — ${esc(r.catalog.projects.toLocaleString('en'))} projects, concurrency ${r.method.connections}</text>`)
  const statics = r.scenarios.filter((s) => s.name.startsWith('static-'))
  const maxRps = Math.max(1, ...statics.flatMap((s) => s.rows.map((row) => row.rps.max)))
  for (const s of statics) {
    y += 36
    parts.push(`<text x="10" y="${y}" font-size="13" font-weight="bold">${s.name === 'static-304' ? '304 (If-None-Match)' : '200 OK'}</text>`)
    y -= 8
    for (const row of s.rows) {
      y += 22
      const w = (row.rps.median / maxRps) * barW
      const x0 = labelW + (row.rps.min / maxRps) * barW
      const x1 = labelW + (row.rps.max / maxRps) * barW
      const ratio = row.ratioVsRaw ? ` · ${row.ratioVsRaw.median.toFixed(2)}×` : ''
      parts.push(`<text x="${labelW - 8}" y="${y + 12}" font-size="12" text-anchor="end">${esc(row.server)}</text>`)
      parts.push(`<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="16" fill="${COLORS[row.server] ?? '#8e44ad'}"/>`)
      parts.push(`<line x1="${x0.toFixed(1)}" y1="${y + 8}" x2="${x1.toFixed(1)}" y2="${y + 8}" stroke="#222" stroke-width="1"/>`)
      parts.push(`<text x="${(labelW + Math.max(w, x1 - labelW) + 6).toFixed(1)}" y="${y + 12}" font-size="12">${Math.round(row.rps.median).toLocaleString('en')} req/s${ratio} · p99 ${row.p99Ms.median.toFixed(2)} ms</text>`)
    }
  }
  const dynamic = r.scenarios.filter((s) => !s.name.startsWith('static-'))
  if (dynamic.length > 0) {
    y += 40
    const goalMs = 25
    const maxMs = Math.max(goalMs * 1.2, ...dynamic.map((s) => s.rows[0]!.p99Ms.median))
    const gx = labelW + (goalMs / maxMs) * barW
    parts.push(`<text x="10" y="${y}" font-size="15" font-weight="bold">Dynamic endpoints: p99 ms (median of repetitions), dashed line = 25 ms goal of bulk hash lookups</text>`)
    const top = y + 8
    for (const s of dynamic) {
      y += 22
      const row = s.rows[0]!
      const w = (row.p99Ms.median / maxMs) * barW
      parts.push(`<text x="${labelW - 8}" y="${y + 12}" font-size="12" text-anchor="end">${esc(s.name)}</text>`)
      parts.push(`<rect x="${labelW}" y="${y}" width="${Math.max(1, w).toFixed(1)}" height="16" fill="${s.connections === 1 ? '#f39c12' : '#d35400'}"/>`)
      parts.push(`<text x="${(labelW + w + 6).toFixed(1)}" y="${y + 12}" font-size="12">${row.p99Ms.median.toFixed(1)} ms · ${Math.round(row.rps.median).toLocaleString('en')} req/s</text>`)
    }
    parts.push(`<line x1="${gx.toFixed(1)}" y1="${top}" x2="${gx.toFixed(1)}" y2="${y + 20}" stroke="#c0392b" stroke-dasharray="4 3"/>`)
  }
  y += 34
  parts.push(`<text x="10" y="${y}" font-size="11" fill="#555">${esc(`${r.date.slice(0, 10)} · ${r.machine.nproc} × ${r.machine.cpuModel}, ${r.machine.memoryGb} GB · Node ${r.versions.node}, nginx ${r.versions.nginx}, wrk ${r.versions.wrk}`)}</text>`)
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 12}" viewBox="0 0 ${width} ${y + 12}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n${parts.join('\n')}\n</svg>\n`
}
