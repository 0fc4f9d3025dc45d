/**
 * The 1% edit of bench/build.ts (build/generate/mutate.ts, seed "bench") applied to DATA_DIR, its
 * changed record files written to OUT (one per line, for BUILD_CHANGED_FILES): recycled.sh runs it.
 */
import { writeFileSync } from 'node:fs'
import { mutateCatalog } from '../../../build/generate/mutate.ts'
const r = mutateCatalog({ dir: process.env.DATA_DIR!, percent: 1, seed: 'bench' })
writeFileSync(process.env.OUT!, r.files.join('\n') + '\n')
console.log(`edited ${r.editedProjects} projects, ${r.editedVersions} versions`)
