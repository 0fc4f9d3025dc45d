/**
 * The 1% edit of bench/build.ts (build/generate/mutate.ts, seed "bench") applied to DATA_DIR, its
 * changed record files written to OUT (one per line, for BUILD_CHANGED_FILES): recycled.sh runs it.
 */
import { writeFileSync } from 'node:fs'
import { mutateCatalog } from '../../../build/generate/mutate.ts'
const { DATA_DIR: dir, OUT: out } = process.env
if (!dir || !out) throw new Error('mutate.ts needs DATA_DIR (the catalog to edit) and OUT (the list of changed files to write)')
const r = mutateCatalog({ dir, percent: 1, seed: 'bench' })
writeFileSync(out, r.files.join('\n') + '\n')
console.log(`edited ${r.editedProjects} projects, ${r.editedVersions} versions`)
