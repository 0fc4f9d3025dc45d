/**
 * `npx vite-node bench/search-reindex.ts -- --db FILE`: a development aid. Drops the search tables
 * of a catalog database (a copy: never a release being served) and builds them again with the
 * current build/search-index.ts, printing the time, so a changed index can be tried at scale
 * without a whole build.
 */
import { openDb } from '../build/db/sqlite.ts'
import { createSearchIndex, dropSearchIndex } from '../build/search-index.ts'

const i = process.argv.indexOf('--db')
const file = i >= 0 ? process.argv[i + 1] : undefined
if (!file) throw new Error('usage: search-reindex.ts --db FILE')
const db = await openDb(file)
await db.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;`)
await dropSearchIndex(db)
const started = performance.now()
await createSearchIndex(db)
process.stdout.write(`search index built in ${((performance.now() - started) / 1000).toFixed(1)} s\n`)
await db.close()
