/**
 * The build benchmark's phases come from the build's progress lines (bench/build-run.ts
 * readPhases): a line that goes on after its CPU figure (the manifest's says how many gzip members
 * it copied) must still be read, or the report shows no manifest at all (Session 38's first run did).
 */
import { describe, expect, it } from 'vitest'
import { readPhases } from '../bench/build-run.ts'

// A rebuild over a recycled tree at the large catalog (bench/results/build-3a1665c.log), trimmed.
const lines = [
  'Loaded 100000 projects, 1009526 versions, 50000 users in 7.5s (CPU 8.5s)',
  '… indexed staging after 7.5s (CPU 8.5s)',
  'Wrote the catalog database in 45.0s (CPU 62.7s)',
  '… named 936422 versions\' bodies from the live release without reading them, after 74.6s',
  'Wrote the static tree (5118871 files, 1427449 bodies) in 75.8s (CPU 98.8s)',
  'The catalog was compacted after 0.2s of sealing',
  'Wrote the manifest and change file after 23.7s of sealing (CPU 12.6s); 69055 of the 78786 gzip members of its changed shards copied from the previous release',
  'The snapshot worker used 25.9s of CPU, peak RSS 338 MB; its catalog from the copy made during the render',
  'Wrote the snapshot (6379.1 MB) after 39.8s of sealing (CPU 14.1s)',
  'The archive worker used 17.9s of CPU, peak RSS 409 MB; 54485 of 65536 members copied from the previous archive',
  'Wrote the archive (840.3 MB) after 42.2s of sealing (CPU 14.1s)',
  'Synced the file system after 42.7s of sealing (CPU 14.3s)',
  'Release 00000003 is live after 118.5s',
  'Rendered 5118871 files (1427449 bodies, 2324.1 MB; 6104 bodies written) in 118.5s → release 00000003: 0 added, 14494 changed, 0 removed, 5104380 unchanged (served files, catalog, snapshot, archive)',
]

describe('build benchmark phases', () => {
  it('reads every phase, the manifest line with its tail included', () => {
    const { wall, cpu } = readPhases(lines, 119.4)
    // To the tenth of a second the lines give (the differences carry float noise).
    const tenths = (p: Record<string, number | null>) => Object.fromEntries(Object.entries(p).map(([k, v]) => [k, v === null ? null : Math.round(v * 10) / 10]))
    expect(tenths(wall)).toEqual({ load: 7.5, catalog: 37.5, render: 30.8, manifest: 23.7, snapshot: 39.8, archive: 42.2, sync: 0.5, publish: 0 })
    // CPU: the build's for the manifest, each worker's own for the snapshot and the archive.
    expect(tenths(cpu)).toMatchObject({ load: 8.5, catalog: 54.2, manifest: 12.6, snapshot: 25.9, archive: 17.9 })
    // The line without its tail, as builds before it wrote it, is read the same.
    const before = lines.map((l) => l.replace(/; 69055 of .*$/, ''))
    expect(readPhases(before, 119.4).wall.manifest).toBe(23.7)
  })
})
