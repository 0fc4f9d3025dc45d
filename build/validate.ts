/**
 * Cross-record checks over the staging database. Each check is one SQL query returning
 * (file, path, message) rows, so they run at the large catalog's size without holding it in memory.
 */
import type { BuildContext } from './context.ts'

/** Each query yields rows of { file, path, message }. */
const checks: readonly string[] = [
  // Duplicates per kind.
  `SELECT file, 'id' AS path, 'duplicate user id ' || id AS message FROM s_users WHERE id IN (SELECT id FROM s_users GROUP BY id HAVING count(*) > 1)`,
  `SELECT file, 'username', 'duplicate username ' || username FROM s_users WHERE username IN (SELECT username FROM s_users GROUP BY username HAVING count(*) > 1)`,
  `SELECT file, 'id', 'duplicate project id ' || id FROM s_projects WHERE id IN (SELECT id FROM s_projects GROUP BY id HAVING count(*) > 1)`,
  `SELECT file, 'slug', 'duplicate project slug ' || slug FROM s_projects WHERE slug IN (SELECT slug FROM s_projects GROUP BY slug HAVING count(*) > 1)`,
  `SELECT p.file, 'slug', 'slug ' || p.slug || ' equals the id of project ' || q.slug FROM s_projects p JOIN s_projects q ON lower(q.id) = p.slug AND q.rowid <> p.rowid`,
  `SELECT file, 'id', 'duplicate version id ' || id FROM s_versions WHERE id IN (SELECT id FROM s_versions GROUP BY id HAVING count(*) > 1)`,
  `SELECT file, 'versionNumber', 'duplicate version number ' || version_number || ' in project ' || project_id FROM s_versions WHERE (project_id, version_number) IN (SELECT project_id, version_number FROM s_versions GROUP BY 1, 2 HAVING count(*) > 1)`,
  `SELECT file, 'files[' || idx || '].id', 'duplicate file id ' || id FROM s_files WHERE id IN (SELECT id FROM s_files GROUP BY id HAVING count(*) > 1)`,
  `SELECT file, 'slug', 'duplicate category ' || slug || ' for type ' || project_type FROM s_categories WHERE (slug, project_type) IN (SELECT slug, project_type FROM s_categories GROUP BY 1, 2 HAVING count(*) > 1)`,
  `SELECT file, 'slug', 'duplicate content type ' || slug FROM s_types WHERE slug IN (SELECT slug FROM s_types GROUP BY slug HAVING count(*) > 1)`,
  `SELECT file, 'version', 'duplicate game version ' || version FROM s_game_versions WHERE version IN (SELECT version FROM s_game_versions GROUP BY version HAVING count(*) > 1)`,
  // References from projects.
  `SELECT p.file, 'authorId', 'unknown user ' || (p.json->>'authorId') FROM s_projects p WHERE NOT EXISTS (SELECT 1 FROM s_users u WHERE u.id = p.json->>'authorId')`,
  `SELECT p.file, 'members[' || m.key || '].userId', 'unknown user ' || (m.value->>'userId') FROM s_projects p, json_each(p.json, '$.members') m WHERE NOT EXISTS (SELECT 1 FROM s_users u WHERE u.id = m.value->>'userId')`,
  `SELECT p.file, 'members[' || m.key || '].userId', 'the author is already the owner; list other members only' FROM s_projects p, json_each(p.json, '$.members') m WHERE m.value->>'userId' = p.json->>'authorId'`,
  `SELECT p.file, 'categories[' || c.key || ']', 'unknown category ' || c.value || ' for type ' || p.type FROM s_projects p, json_each(p.json, '$.categories') c WHERE NOT EXISTS (SELECT 1 FROM s_categories k WHERE k.slug = c.value AND k.project_type = p.type)`,
  `SELECT p.file, 'type', 'unknown content type ' || p.type FROM s_projects p WHERE NOT EXISTS (SELECT 1 FROM s_types t WHERE t.slug = p.type)`,
  // References from versions.
  `SELECT v.file, 'projectId', 'unknown project ' || v.project_id FROM s_versions v WHERE NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.id = v.project_id)`,
  `SELECT v.file, 'projectId', 'is ' || v.project_id || ' but the folder belongs to project ' || p.id FROM s_versions v JOIN s_projects p ON p.folder = v.folder WHERE p.id <> v.project_id`,
  `SELECT v.file, 'projectId', 'no project.json in this folder' FROM s_versions v WHERE NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.folder = v.folder)`,
  `SELECT v.file, 'gameVersions[' || g.key || ']', 'unknown game version ' || g.value FROM s_versions v, json_each(v.game_versions) g WHERE NOT EXISTS (SELECT 1 FROM s_game_versions x WHERE x.version = g.value)`,
  `SELECT v.file, 'platforms[' || k.key || ']', 'platform ' || k.value || ' is not allowed for type ' || p.type FROM s_versions v JOIN s_projects p ON p.id = v.project_id JOIN s_types t ON t.slug = p.type, json_each(v.platforms) k WHERE NOT EXISTS (SELECT 1 FROM json_each(t.json, '$.platforms') a WHERE a.value = k.value)`,
  // Dependencies: one staging row each (load-records.ts), in the file of the version that names them.
  `SELECT d.file, 'dependencies[' || d.position || '].projectId', 'unknown project ' || d.project_id FROM s_dependencies d WHERE d.project_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.id = d.project_id)`,
  `SELECT d.file, 'dependencies[' || d.position || '].versionId', 'unknown version ' || d.dep_version_id FROM s_dependencies d WHERE d.dep_version_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM s_versions w WHERE w.id = d.dep_version_id)`,
  `SELECT d.file, 'dependencies[' || d.position || '].versionId', 'version ' || w.id || ' belongs to project ' || w.project_id || ', not ' || d.project_id FROM s_dependencies d JOIN s_versions w ON w.id = d.dep_version_id WHERE d.project_id IS NOT NULL AND w.project_id <> d.project_id`,
  `SELECT d.file, 'dependencies[' || d.position || ']', 'a version cannot depend on its own project' FROM s_dependencies d LEFT JOIN s_versions w ON w.id = d.dep_version_id WHERE coalesce(d.project_id, w.project_id) = d.version_project_id`,
  // Files: rules of the content type, and one hash never in two projects.
  `SELECT f.file, 'files[' || f.idx || '].filename', 'extension not allowed for type ' || p.type || ' (allowed: ' || (SELECT group_concat(e.value, ', ') FROM json_each(t.json, '$.fileExtensions') e) || ')' FROM s_files f JOIN s_projects p ON p.id = f.project_id JOIN s_types t ON t.slug = p.type WHERE NOT EXISTS (SELECT 1 FROM json_each(t.json, '$.fileExtensions') e WHERE lower(f.filename) LIKE '%' || e.value)`,
  `SELECT f.file, 'files[' || f.idx || '].size', 'size ' || f.size || ' exceeds the limit ' || (t.json->>'maxFileSize') || ' of type ' || p.type FROM s_files f JOIN s_projects p ON p.id = f.project_id JOIN s_types t ON t.slug = p.type WHERE f.size > t.json->>'maxFileSize'`,
  `SELECT f.file, 'files[' || f.idx || '].sha256', 'the same file (sha256 ' || f.sha256 || ') is in another project' FROM s_files f WHERE f.sha256 IN (SELECT sha256 FROM s_files GROUP BY sha256 HAVING count(DISTINCT project_id) > 1)`,
  `SELECT f.file, 'files[' || f.idx || '].sha1', 'the same file (sha1 ' || f.sha1 || ') is in another project' FROM s_files f WHERE f.sha1 IS NOT NULL AND f.sha1 IN (SELECT sha1 FROM s_files WHERE sha1 IS NOT NULL GROUP BY sha1 HAVING count(DISTINCT project_id) > 1)`,
]

/** Runs every cross-record check and adds what it finds to ctx.problems. */
export async function validateCatalog(ctx: BuildContext): Promise<void> {
  for (const sql of checks) {
    // Columns are positional (file, path, message); their names are whatever SQL calls the expressions.
    const rows = await ctx.staging.all<Record<string, unknown>>(sql)
    for (const row of rows) {
      const [file, path, message] = Object.values(row).map(String)
      ctx.problems.push({ file: file!, path: path!, message: message! })
    }
  }
  ctx.problems.sort((a, b) => a.file.localeCompare(b.file) || a.path.localeCompare(b.path))
}
