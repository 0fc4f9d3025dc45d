/**
 * `npx vite-node bench/search-compare.ts -- --db FILE [--sql]`: a development aid that checks the
 * search against itself: for the benchmark's query mix, the total must equal the number of items
 * walked page by page (limit 100), and the first 300 items must not depend on the page size.
 */
import { openDb } from '../build/db/sqlite.ts'
import { projectsQuerySchema } from '../build/schema/query.ts'
import { readQuery } from '../shim/query.ts'
import { listSearchPage } from '../shim/search.ts'
import { deriveQueryClasses } from './search-queries.ts'

const i = process.argv.indexOf('--db')
const db = await openDb(process.argv[i + 1]!, { readonly: true })
const run = (url: string, page: number, limit: number) =>
  listSearchPage(db, readQuery(`${url.slice(url.indexOf('?') + 1).replace(/&?page=\d+/, '')}&page=${page}&limit=${limit}`, projectsQuerySchema))
let problems = 0
for (const c of await deriveQueryClasses(db)) {
  for (const url of c.urls.slice(0, 6)) {
    const first = await run(url, 1, 100)
    const big: string[] = []
    for (let p = 1; p <= 3; p++) big.push(...(await run(url, p, 100)).items)
    const small: string[] = []
    for (let p = 1; p <= 30 && small.length < big.length; p++) small.push(...(await run(url, p, 10)).items)
    const ids = (list: string[]) => list.map((s) => (JSON.parse(s) as { id: string }).id)
    const same = JSON.stringify(ids(big)) === JSON.stringify(ids(small))
    const distinct = new Set(ids(big)).size === big.length
    const lastPage = Math.ceil(first.total / 100)
    const tail = first.total > 0 && lastPage <= 2000 ? (await run(url, lastPage, 100)).items.length : 0
    const totalOk = first.total === 0 || tail === first.total - (lastPage - 1) * 100
    if (!same || !distinct || !totalOk) problems++
    process.stdout.write(`${same && distinct && totalOk ? 'ok ' : 'BAD'} ${c.name} ${decodeURIComponent(url)} total ${first.total} same ${same} distinct ${distinct} tail ${tail}\n`)
  }
}
process.stdout.write(`${problems} problems\n`)
await db.close()
