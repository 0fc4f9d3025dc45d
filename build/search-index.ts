/**
 * The search index of visible projects (queried by shim/search-*.ts):
 * - search_docs: one row per project; `rank` is its position by `downloads DESC, id` and is also
 *   its rowid in search_all, so FTS5's natural rowid order IS the download order (no sort needed
 *   for relevance ties, sort=downloads or deep pages); the *_pos columns are its position in the
 *   other sort orders.
 * - search_all: a contentless FTS5 table (detail=none, small and fast to iterate; columnsize=0:
 *   no per-row token counts, which only bm25 reads and nothing here ranks by) with one text
 *   per project: every word of every field plain, plus marked tokens (build/search-text.ts MARK)
 *   telling where a word came from (name; tags, categories, author; summary), the joined and whole name, and
 *   filter values, so filters, ranking stages and prefix matching are all FTS5 doclist operations.
 * - search_by_name, search_by_updated, search_by_newest, search_by_favorites: the same documents
 *   with the position in that order as rowid (see sortedTables).
 * - search_vocab: fts5vocab over search_all; search_terms: its document counts of plain, name,
 *   meta and joined terms (the query planner's vocabulary: exists, prefix exists, how common).
 * - search_typos: deletion keys of the name/tag/author words and joined names, for typo candidates.
 * - search_bitmaps: document bitmaps of common words and filter values, for exact totals
 *   (build/search-bitmaps.ts).
 */
import { rmSync } from 'node:fs'
import { BUILD_CACHE_KIB } from './db/schema.ts'
import { openDb, type Db } from './db/sqlite.ts'
import { startSealWorker, type SealWorkerUsage } from './release/seal-child.ts'
import { writeSearchBitmaps } from './search-bitmaps.ts'
import {
  listDeletions,
  MARK,
  renderFacetToken,
  renderWholeToken,
  splitCamelCase,
  stripMarkers,
  tokenizeText,
  TYPO_TERM_MAX,
  TYPO_TERM_MIN,
} from './search-text.ts'

/** Sort keys as in shim/search.ts; positions here must order exactly as those ORDER BY clauses. */
const positions = {
  name_pos: 'p.name COLLATE NOCASE, p.id',
  updated_pos: 'p.updated_at DESC, p.id',
  newest_pos: 'p.published_at DESC, p.id',
  favorites_pos: 'p.favorites DESC, p.id',
} as const

/**
 * The same documents once more per other sort order, with the position in that order as rowid:
 * a search listed by name (or updated, newest, favorites) is then a doclist read in rowid order
 * too, however many projects match, instead of a sort of every match.
 */
export const sortedTables = Object.keys(positions).map((c) => `search_by_${c.replace(/_pos$/, '')}`)

const BATCH = 1000

interface DocRow {
  rank: number
  name_pos: number
  updated_pos: number
  newest_pos: number
  favorites_pos: number
  name: string
  slug: string
  type: string
  author_username: string
  author_name: string | null
  summary: string | null
  description: string | null
  tags: string | null
  facets: string | null
}

/**
 * The search index's input, one row per visible project, in `schema`: the columns of projects,
 * users and project_facets the documents and the sort positions are made of. The build copies it
 * into a database of its own (startSearchIndex) so the index is built on another connection while
 * the catalog's versions are rendered; createSearchIndex reads it from a temp table.
 */
const inputSql = (schema: string): string => `
  CREATE TABLE ${schema}.search_input (project_rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, name TEXT NOT NULL, slug TEXT NOT NULL, type TEXT NOT NULL,
    author_username TEXT NOT NULL, author_name TEXT, downloads INTEGER NOT NULL, favorites INTEGER NOT NULL, updated_at TEXT NOT NULL, published_at TEXT,
    summary TEXT, description TEXT, tags TEXT);
  INSERT INTO ${schema}.search_input
    SELECT p.rowid, p.id, p.name, p.slug, p.type, p.author_username, u.author_json->>'name', p.downloads, p.favorites, p.updated_at, p.published_at,
      p.source_json->>'summary', p.source_json->>'description', (SELECT group_concat(t.value, char(10)) FROM json_each(p.source_json, '$.tags') t)
    FROM main.projects p LEFT JOIN main.users u ON u.id = p.author_id ORDER BY p.rowid;
  -- project_facets is keyed by facet first: gather each project's facets once instead of a scan per project.
  CREATE TABLE ${schema}.search_input_facets (project_rowid INTEGER PRIMARY KEY, facets TEXT NOT NULL);
  INSERT INTO ${schema}.search_input_facets SELECT project_rowid, group_concat(facet, char(10)) FROM main.project_facets GROUP BY project_rowid ORDER BY project_rowid;
`

/** Creates and fills the search tables of `db` from its projects, users and project_facets tables. */
export async function createSearchIndex(db: Db): Promise<void> {
  await db.exec(inputSql('temp'))
  await fillSearchIndex(db)
}

/** Drops every search table of `db` (a copy: never a release being served), virtual tables first. */
export async function dropSearchIndex(db: Db): Promise<void> {
  const virtual = await db.all<{ name: string }>(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'search%' AND sql LIKE 'CREATE VIRTUAL TABLE%'`)
  // search_vocab reads search_all: dropped first.
  for (const { name } of virtual.sort((a, b) => Number(b.name === 'search_vocab') - Number(a.name === 'search_vocab'))) await db.exec(`DROP TABLE ${name}`)
  const rest = await db.all<{ name: string }>(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'search%'`)
  for (const { name } of rest) await db.exec(`DROP TABLE IF EXISTS ${name}`)
}

/** The search index being built beside the catalog (startSearchIndex). */
export interface SearchIndexBeside {
  /**
   * Waits for the index, copies its tables into `target` (the catalog, or its compacted copy) and
   * removes its file; resolves with what its worker process used (null: built in this process).
   */
  finish(target: Db): Promise<SealWorkerUsage | null>
  /** Stops it (the build failed) and removes its file; nothing is copied. */
  close(): Promise<void>
}

/** The index being built in its file: done when built, and how to stop it. */
export interface Building {
  done: Promise<SealWorkerUsage | null>
  stop(): void
}

/**
 * Starts the search index of the catalog `db` (its projects, users and project_facets complete) on
 * a connection of its own, in `file`, so SQLite builds it on another thread while `db` goes on with
 * the versions and the build renders the tree (bench/results/BUILD-PROFILE.md, Sessions 20 and
 * 28). The catalog connection copies the input into `file` first; finish() copies the finished
 * tables into the database it is given (the build: the compacted catalog), each in the order it was
 * made, with the same rows and rowids as createSearchIndex on the catalog itself would give.
 *
 * With `worker` (BUILD_SEARCH_WORKER, the build's default) the index is built by a process of its
 * own (search-worker.ts). Built in this one, its 2,500 or so statements (one per bitmap, a few per
 * page of documents and typo keys) each waited for a turn of this thread between being prepared and
 * being run, and the render keeps this thread busy: at the large catalog a render that no longer
 * waited for its own pages held the index back from 53 s into the build to 75 s, past the render's
 * end (bench/results/BUILD-PROFILE.md, Session 40).
 */
export async function startSearchIndex(db: Db, file: string, { worker = false }: { worker?: boolean } = {}): Promise<SearchIndexBeside> {
  rmSync(file, { force: true })
  await db.run(`ATTACH DATABASE ? AS search_side`, [file])
  try {
    await db.exec(`PRAGMA search_side.page_size = 8192; PRAGMA search_side.journal_mode = OFF; ${inputSql('search_side')}`)
  } finally {
    await db.run(`DETACH DATABASE search_side`)
  }
  const building = worker ? buildInWorker(file) : buildHere(file)
  building.done.catch(() => {})
  return {
    async finish(target) {
      const usage = await building.done
      await copySearchTables(target, file)
      rmSync(file, { force: true })
      return usage
    },
    async close() {
      building.stop()
      await building.done.catch(() => {})
      rmSync(file, { force: true })
    },
  }
}

/** Builds the search index in `file`, whose input startSearchIndex copied there; the search worker's work. */
export async function buildSearchFile(file: string, opened: (side: Db) => void = () => {}): Promise<void> {
  const side = await openDb(file)
  try {
    opened(side)
    await side.exec(`PRAGMA cache_size = -${BUILD_CACHE_KIB}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;`)
    await fillSearchIndex(side)
  } finally {
    await side.close()
  }
}

/** buildSearchFile in this process; stop() interrupts its statement. */
function buildHere(file: string): Building {
  let side: Db | null = null
  let stopped = false
  const done = buildSearchFile(file, (db) => {
    side = db
    if (stopped) db.raw.interrupt()
  }).then(() => null)
  return {
    done,
    stop() {
      stopped = true
      side?.raw.interrupt()
    },
  }
}

/** buildSearchFile in the search worker (done: its usage, or its error output); stop() kills it. */
export function buildInWorker(file: string): Building {
  const { child, done } = startSealWorker(new URL('./search-worker.ts', import.meta.url), [file], `search worker exited (%s); BUILD_SEARCH_WORKER=0 builds the search index in the build's own process`)
  return { done, stop: () => void child.kill('SIGKILL') }
}

/**
 * Copies every table and index of the search database `file` into `db`, in the order they were
 * made there: a virtual table is created anew (FTS5 makes its shadow tables) and its shadow tables'
 * rows replaced by the built ones; rows go in in rowid order, so a table's rowids are the same.
 */
async function copySearchTables(db: Db, file: string): Promise<void> {
  await db.run(`ATTACH DATABASE ? AS search_side`, [file])
  try {
    const entries = await db.all<{ type: string; name: string; sql: string | null }>(`SELECT type, name, sql FROM search_side.sqlite_schema ORDER BY rowid`)
    for (const { type, name, sql } of entries) {
      // Automatic indexes (of UNIQUE and PRIMARY KEY constraints) come with their table.
      if (sql === null) continue
      if (type === 'index') {
        await db.exec(sql)
        continue
      }
      if (type !== 'table') throw new Error(`unexpected ${type} ${name} in the search index`)
      if (sql.startsWith('CREATE VIRTUAL TABLE')) {
        await db.exec(sql)
        continue
      }
      const made = await db.get(`SELECT 1 FROM main.sqlite_schema WHERE name = ?`, [name])
      // A virtual table's shadow table, made by it just now with its first rows.
      if (made !== undefined) await db.exec(`DELETE FROM main."${name}"`)
      else await db.exec(sql)
      const order = /WITHOUT ROWID\s*$/i.test(sql) ? '' : ' ORDER BY rowid'
      await db.exec(`INSERT INTO main."${name}" SELECT * FROM search_side."${name}"${order}`)
    }
  } finally {
    await db.run(`DETACH DATABASE search_side`)
  }
}

/** Creates and fills the search tables from search_input and search_input_facets (inputSql), then drops those. */
async function fillSearchIndex(db: Db): Promise<void> {
  const posColumns = Object.keys(positions)
  await db.exec(`
    CREATE TABLE search_docs (rank INTEGER PRIMARY KEY, project_rowid INTEGER NOT NULL, ${posColumns.map((c) => `${c} INTEGER NOT NULL`).join(', ')});
    INSERT INTO search_docs
      SELECT row_number() OVER (ORDER BY p.downloads DESC, p.id), p.project_rowid,
        ${Object.values(positions).map((o) => `row_number() OVER (ORDER BY ${o})`).join(', ')}
      FROM search_input p ORDER BY 1;
    ${[...posColumns, 'project_rowid'].map((c) => `CREATE UNIQUE INDEX search_docs_${c.replace(/_rowid$/, '')} ON search_docs(${c});`).join('\n')}
    ${['search_all', ...sortedTables].map((t) => `CREATE VIRTUAL TABLE ${t} USING fts5(body, content = '', detail = none, columnsize = 0, tokenize = 'unicode61 remove_diacritics 2');`).join('\n')}
    CREATE VIRTUAL TABLE search_vocab USING fts5vocab(search_all, row);
    CREATE TEMP TABLE typo_terms (term TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TABLE doc_bodies (rank INTEGER PRIMARY KEY, body TEXT NOT NULL);
  `)
  // Projects in rowid order (sequential reads of the input); their ranks through search_docs_project.
  for (let after = 0; ; ) {
    const rows = await db.all<DocRow & { project_rowid: number }>(
      `SELECT p.project_rowid, d.rank, ${posColumns.map((c) => `d.${c}`).join(', ')}, p.name, p.slug, p.type, p.author_username, p.author_name,
         p.summary, p.description, p.tags, f.facets
       FROM search_input p CROSS JOIN search_docs d ON d.project_rowid = p.project_rowid LEFT JOIN search_input_facets f ON f.project_rowid = p.project_rowid
       WHERE p.project_rowid > ? ORDER BY p.project_rowid LIMIT ${BATCH}`,
      [after],
    )
    if (rows.length === 0) break
    after = rows[rows.length - 1]!.project_rowid
    const docs = rows.map((r) => renderDocument(r))
    await db.run(`INSERT INTO doc_bodies SELECT j.value->>0, j.value->>1 FROM json_each(?) j`, [JSON.stringify(docs.map((d, i) => [rows[i]!.rank, d.body]))])
    const terms = docs.flatMap((d) => d.typoTerms)
    await db.run(`INSERT OR IGNORE INTO typo_terms SELECT value FROM json_each(?)`, [JSON.stringify(terms)])
  }
  await db.exec(`DROP TABLE search_input; DROP TABLE search_input_facets;`)
  // FTS5 flushes its buffer whenever a rowid is not above the previous one: insert each table in its rowid order.
  await db.exec(`INSERT INTO search_all (rowid, body) SELECT rank, body FROM doc_bodies ORDER BY rank`)
  for (const [k, table] of sortedTables.entries()) {
    const column = posColumns[k]!
    await db.exec(`INSERT INTO ${table} (rowid, body) SELECT d.${column}, b.body FROM search_docs d INDEXED BY search_docs_${column} JOIN doc_bodies b ON b.rank = d.rank ORDER BY d.${column}`)
  }
  for (const t of ['search_all', ...sortedTables]) await db.exec(`INSERT INTO ${t} (${t}) VALUES ('optimize')`)
  // fts5vocab counts a term's documents by reading its doclist (milliseconds for a common word):
  // keep the counts of plain, name, meta and joined terms in a table, one B-tree lookup each.
  await db.exec(`
    DROP TABLE doc_bodies;
    CREATE TABLE search_terms (term TEXT PRIMARY KEY, docs INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO search_terms SELECT term, doc FROM search_vocab WHERE term < '${MARK.summary}' OR (term > '${MARK.joined}' AND term < '${MARK.whole}') OR term > '${MARK.facet}\u{10FFFF}' ORDER BY term;
  `)
  await writeSearchBitmaps(db)
  await writeTypoKeys(db)
}

/** The indexed text of one project and the words it adds to the typo vocabulary. */
function renderDocument(r: DocRow): { body: string; typoTerms: string[] } {
  const nameWords = tokenizeText(r.name)
  const slugWords = tokenizeText(r.slug)
  const joinedName = nameWords.join('')
  const joinedSlug = slugWords.join('')
  // Word groups hold words only: the joined forms (one distinct term per project) would make every
  // prefix query of the group scan thousands of terms; they are plain words and J tokens instead.
  const nameGroup = new Set([...nameWords, ...slugWords, ...splitCamelCase(r.name)])
  const joinedAuthor = r.author_username.replace(/[^\p{L}\p{N}]/gu, '').toLowerCase()
  const tagWords = r.tags ? tokenizeText(r.tags) : []
  const authorWords = tokenizeText(`${r.author_username} ${r.author_name ?? ''}`)
  const facetValues = (r.facets ?? '').split('\n').filter((f) => f !== '')
  const categoryWords = tokenizeText(facetValues.filter((f) => f.startsWith('c:')).map((f) => f.slice(2)).join(' '))
  const metaGroup = new Set([...tagWords, ...categoryWords, ...authorWords])
  const summary = stripMarkers(r.summary ?? '')
  const facets = facetValues.map((f) => renderFacetToken(f[0]!, f.slice(2)))
  facets.push(renderFacetToken('y', r.type), renderFacetToken('a', r.author_username))
  const parts = [
    // Plain words of every field: "anywhere" matching is one token per query word.
    stripMarkers(`${r.name} ${r.slug} ${r.tags ?? ''} ${categoryWords.join(' ')} ${r.author_username} ${r.author_name ?? ''}`),
    [...nameGroup, ...metaGroup, joinedName, joinedSlug, joinedAuthor].join(' '),
    summary,
    stripMarkers(r.description ?? ''),
    [...nameGroup].map((w) => MARK.name + w).join(' '),
    [...metaGroup].map((w) => MARK.meta + w).join(' '),
    [...new Set(tokenizeText(summary))].map((w) => MARK.summary + w).join(' '),
    `${MARK.joined}${joinedName} ${MARK.joined}${joinedSlug} ${renderWholeToken(nameWords)}`,
    facets.join(' '),
  ]
  const typoTerms = [...nameGroup, ...metaGroup, joinedName, joinedSlug].filter((t) => t.length >= TYPO_TERM_MIN && t.length <= TYPO_TERM_MAX)
  return { body: parts.join('\n'), typoTerms }
}

/** search_typos: each vocabulary term under itself and under every one-character deletion. */
async function writeTypoKeys(db: Db): Promise<void> {
  await db.exec(`CREATE TEMP TABLE typo_rows (key TEXT NOT NULL, term TEXT NOT NULL)`)
  for (let after = ''; ; ) {
    const terms = (await db.all<{ term: string }>(`SELECT term FROM typo_terms WHERE term > ? ORDER BY term LIMIT 5000`, [after])).map((r) => r.term)
    if (terms.length === 0) break
    after = terms[terms.length - 1]!
    const rows = terms.flatMap((t) => [[t, t], ...listDeletions(t).map((k) => [k, t])])
    await db.run(`INSERT INTO typo_rows SELECT j.value->>0, j.value->>1 FROM json_each(?) j`, [JSON.stringify(rows)])
  }
  await db.exec(`
    CREATE TABLE search_typos (key TEXT NOT NULL, term TEXT NOT NULL, PRIMARY KEY (key, term)) WITHOUT ROWID;
    INSERT INTO search_typos SELECT key, term FROM typo_rows GROUP BY key, term ORDER BY key, term;
    DROP TABLE typo_rows;
    DROP TABLE typo_terms;
  `)
}
