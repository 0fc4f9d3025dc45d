/** The Markdown report of build.json (bench/build.ts): the tables the README links to. */
import type { BuildResults, BuildRun, Phases } from './build-schema.ts'

const fmt = (n: number | null, digits = 0): string => (n !== null && Number.isFinite(n) ? n.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–')
const phaseNames: Record<keyof Phases, string> = {
  load: 'load (glob, read, JSON, zod → staging)',
  catalog: 'validate + catalog database + search index',
  render: 'render + write the static tree',
  manifest: 'seal: manifest + change file (from the start of the seal)',
  snapshot: 'seal: snapshot (from the start of the seal, beside the manifest; CPU: its worker)',
  archive: 'seal: archive (from the start of the seal, beside the manifest; CPU: its worker)',
  sync: 'seal: syncfs',
  publish: 'publish (pointer, prune)',
}

/** Renders the whole report. */
export function renderBuildMarkdown(r: BuildResults): string {
  const out: string[] = []
  const c = r.catalog
  out.push('# Build benchmark', '')
  out.push(`Measured ${r.date} by \`npm run bench:build\` (README, "Performance"). Raw figures: [build.json](build.json).`, '')
  out.push('| | |', '|---|---|')
  out.push(`| catalog | ${fmt(c.projects)} projects, ${fmt(c.versions)} versions, ${fmt(c.files)} files, ${fmt(c.users)} users published; ${fmt(c.sourceFiles)} source files in \`${c.dir}\`${c.generatedSeconds === null ? '' : ` (generated in ${fmt(c.generatedSeconds, 1)} s)`} |`)
  out.push(`| machine | ${r.machine.nproc} CPUs (${r.machine.cpuModel}), ${r.machine.memoryGb} GB, Linux ${r.machine.kernel}; load average at the end ${r.machine.loadAverage.join(' / ')} |`)
  out.push(`| versions | Node ${r.versions.node}, SQLite ${r.versions.sqlite}${r.versions.commit ? `, commit ${r.versions.commit}` : ''} |`)
  if (r.mutation) out.push(`| change before the rebuild | ${r.mutation.percent}% of the projects (seed \`${r.mutation.seed}\`): ${fmt(r.mutation.editedProjects)} project.json and ${fmt(r.mutation.editedVersions)} version records edited |`)
  out.push('')
  out.push('## Goals (issue 7)', '', '| goal | measured | met |', '|---|---|---|')
  for (const g of r.goals) out.push(`| ${g.goal} | ${g.measured} | ${!g.decided ? 'not decided here' : g.met ? 'yes' : '**no**'} |`)
  out.push('', '## Builds', '')
  out.push(`| figure | ${r.runs.map((x) => x.kind).join(' | ')} |`, `|---|${r.runs.map(() => '---:').join('|')}|`)
  const row = (name: string, f: (x: BuildRun) => string): void => void out.push(`| ${name} | ${r.runs.map(f).join(' | ')} |`)
  row('wall time', (x) => `${fmt(x.wallSeconds, 1)} s`)
  row('CPU time (user + system)', (x) => `${fmt(x.cpuSeconds, 1)} s`)
  row('peak RSS (VmHWM)', (x) => `${fmt(x.peakRssMb)} MB`)
  row('peak RSS with worker processes (summed, 200 ms samples)', (x) => (x.peakTreeRssMb ? `${fmt(x.peakTreeRssMb)} MB` : '–'))
  row('when that peak was sampled (s from the start; the build\'s last line before it)', (x) =>
    x.peakTreeRssAt ? `${fmt(x.peakTreeRssAt.seconds, 1)} s, after "${x.peakTreeRssAt.afterLine.trim().replace(/\|/g, '\\|')}"` : '–',
  )
  row('names (files and links) in the release', (x) => fmt(x.files))
  row('distinct bodies / written by this build', (x) => `${fmt(x.bodies)} / ${fmt(x.bodiesWritten)}`)
  row('source record files read by the load', (x) => (x.recordFilesRead === null || x.recordFilesRead === undefined ? 'all (no staging kept)' : `${fmt(x.recordFilesRead)} (staging kept${x.changedFilesNamed ? '; named by BUILD_CHANGED_FILES, the folder not listed' : ''})`))
  row('bytes of distinct bodies', (x) => `${fmt(x.bodyBytes / 1e6)} MB`)
  row('names per second (render phase)', (x) => fmt(x.filesPerSecond))
  row('changes vs the previous release', (x) => `${fmt(x.changes.added)} added, ${fmt(x.changes.changed)} changed, ${fmt(x.changes.removed)} removed`)
  row('disk: this release / whole dist (du)', (x) => `${fmt(x.releaseDiskMb)} / ${fmt(x.distDiskMb)} MB`)
  row('catalog.sqlite / snapshot / archive', (x) => `${fmt(x.catalogSqliteMb)} / ${fmt(x.snapshotMb)} / ${fmt(x.archiveMb)} MB`)
  out.push('', '## Phases (seconds: wall / CPU)', '')
  out.push(`| phase | ${r.runs.map((x) => x.kind).join(' | ')} |`, `|---|${r.runs.map(() => '---:').join('|')}|`)
  for (const key of Object.keys(phaseNames) as (keyof Phases)[]) row(phaseNames[key], (x) => `${fmt(x.phases[key], 1)} / ${fmt(x.phasesCpu[key], 1)}`)
  out.push('', 'Notes:', '', ...r.notes.map((n) => `- ${n}`), '')
  return out.join('\n')
}
