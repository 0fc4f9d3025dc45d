/**
 * The FTS5 index of visible projects. Columns are weighted at query time (shim/search); `joined`
 * holds the name and slug with separators removed so "nochatreports" finds "No Chat Reports".
 */
import type { Db } from './db/sqlite.ts'

/** Column order of projects_fts; bm25 weights in the shim follow it. */
export const searchColumns = ['name', 'slug', 'joined', 'summary', 'tags', 'author', 'description'] as const

/** Creates and fills projects_fts from the projects table (rowid = projects.rowid). */
export async function createSearchIndex(db: Db): Promise<void> {
  await db.exec(`
    CREATE VIRTUAL TABLE projects_fts USING fts5(
      ${searchColumns.join(', ')},
      content = '', tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
    );
    INSERT INTO projects_fts (rowid, ${searchColumns.join(', ')})
      SELECT p.rowid, p.name, replace(replace(p.slug, '-', ' '), '_', ' '),
        lower(replace(replace(replace(replace(replace(replace(p.name, ' ', ''), '-', ''), '_', ''), '''', ''), '.', ''), ':', '')) || ' ' || replace(replace(p.slug, '-', ''), '_', ''),
        p.source_json->>'summary',
        (SELECT group_concat(t.value, ' ') FROM json_each(p.source_json, '$.tags') t),
        p.author_username || ' ' || (SELECT u.author_json->>'name' FROM users u WHERE u.id = p.author_id),
        p.source_json->>'description'
      FROM projects p;
    INSERT INTO projects_fts (projects_fts) VALUES ('optimize');
  `)
}
