/**
 * The naive baseline of bench/search.ts: the same /projects parameters answered by a LIKE scan
 * (`name LIKE '%w%' OR source_json LIKE '%w%'` per word, source_json holding summary, description
 * and tags), the filters as project_facets lookups, ordered by the sort and counted exactly.
 */
import { createServer } from 'node:http'
import { openDb, type SqlValue } from '../build/db/sqlite.ts'

const orderBy: Record<string, string> = {
  relevance: 'p.downloads DESC, p.id',
  downloads: 'p.downloads DESC, p.id',
  favorites: 'p.favorites DESC, p.id',
  updated: 'p.updated_at DESC, p.id',
  newest: 'p.published_at DESC, p.id',
  name: 'p.name COLLATE NOCASE, p.id',
}

/** Serves GET /like?… on the port until killed. */
export async function serveLikeBaseline(dbFile: string, port: number): Promise<void> {
  const db = await openDb(dbFile, { readonly: true })
  const server = createServer((req, res) => {
    const params = new URL(req.url ?? '/', 'http://x').searchParams
    const args: SqlValue[] = []
    const where: string[] = []
    for (const w of (params.get('q') ?? '').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean)) {
      args.push(`%${w}%`)
      where.push(`(p.name LIKE ?${args.length} OR p.source_json LIKE ?${args.length})`)
    }
    if (params.get('type')) where.push(`p.type = ?${args.push(params.get('type')!)}`)
    for (const [name, prefix] of [['category', 'c:'], ['gameVersion', 'g:'], ['platform', 'p:'], ['tag', 't:']] as const) {
      const v = params.get(name)
      if (v) where.push(`p.rowid IN (SELECT project_rowid FROM project_facets WHERE facet IN (SELECT '${prefix}' || value FROM json_each(?${args.push(JSON.stringify(v.split(',')))})))`)
    }
    const filter = where.length ? `WHERE ${where.join(' AND ')}` : ''
    const limit = Number(params.get('limit') ?? 20)
    const offset = (Number(params.get('page') ?? 1) - 1) * limit
    const order = orderBy[params.get('sort') ?? 'relevance'] ?? orderBy.relevance
    void (async () => {
      const total = (await db.get<{ n: number }>(`SELECT count(*) AS n FROM projects p ${filter}`, args))!.n
      const rows = await db.all<{ json: string }>(`SELECT p.summary_json AS json FROM projects p ${filter} ORDER BY ${order} LIMIT ${limit} OFFSET ${offset}`, args)
      res.setHeader('Content-Type', 'application/json')
      res.end(`{"data":[${rows.map((r) => r.json).join(',')}],"meta":{"total":${total}}}`)
    })().catch((err: unknown) => {
      res.statusCode = 500
      res.end(String(err))
    })
  })
  server.listen(port, '127.0.0.1', () => process.stderr.write(`listening on ${port}\n`))
}
