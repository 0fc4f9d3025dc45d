/**
 * Cross-record checks over the staging database. Each check is one SQL query returning
 * (file, path, message) rows, so they run at the large catalog's size without holding it in memory.
 *
 * A rebuild from a kept staging checks only what its change can have broken. The kept staging
 * passed every check in the build that kept it (staging-cache.ts keeps it only after a build that
 * succeeded), and the load records in `s_touched` every record of a file it read again or dropped,
 * before and after (load.ts). A problem the full checks would find now must therefore involve a
 * record that was added, changed or removed:
 * - a row that was inserted: the reported row, or a row it is compared with (a duplicate, a
 *   dependency's version, a project's type);
 * - a row that was removed, for the checks that look for something missing (an unknown user,
 *   project or version).
 * Each check below is the full query with a filter, so a scoped check never finds a problem the
 * full one would not; the filter keeps every row such a problem can be reported on:
 * - users and projects: the touched ids (a duplicate group shares its key, so it holds the key of
 *   its inserted row);
 * - versions, and their files and dependencies (rows of the version's file): every version of a
 *   project that was touched or had a version touched, before or after. A version's folder belongs
 *   to one project file (`projects/<folder>/project.json`), and in the kept staging every version
 *   of a folder named that folder's project, so a project removed, moved or given another id
 *   reaches its folder's versions through their project id;
 * - references to users, projects or versions that are gone: the rows naming a removed id (read in
 *   full, only when some id of that kind is gone);
 * - a touched reference file (catalog.json, categories, types, game versions) checks everything.
 * The result is the full checks' (test/validate-scope.test.ts compares them edit by edit).
 */
import { referenceTouched } from './catalog-memo.ts'
import type { BuildContext } from './context.ts'

/** The records a check looks at: SQL conditions that are true of every row in a full check. */
interface Scope {
  /** Every record is checked. */
  all: boolean
  /** `column` is a user, project or version id that was touched. */
  touched(kind: 'users' | 'projects' | 'versions', column: string): string
  /** `column` is an id of that kind touched and no longer in staging. */
  gone(kind: 'users' | 'projects' | 'versions', column: string): string
  /** `column` is the project id of a version in scope (a touched project, or one with a touched version). */
  versionProject(column: string): string
  /** `column` is the record file of a version in scope: its files' and dependencies' rows. */
  versionFile(column: string): string
  /** True when any of `conditions` is. */
  any(...conditions: string[]): string
}

/**
 * The rows of `table` whose `key` is shared by another row of `table` (by more than one project
 * with `distinct`), among the keys of the rows in `scope` (`key IN (…)`'s right side).
 */
function duplicated(table: string, key: string, scope: string, distinctProjects = false): string {
  const having = distinctProjects ? 'count(DISTINCT project_id) > 1' : 'count(*) > 1'
  const nonNull = key === 'sha1' ? `${key} IS NOT NULL AND ` : ''
  const keys = scope === '1' ? '1' : `${key} IN (SELECT ${key} FROM ${table} WHERE ${scope})`
  return `(SELECT ${key} FROM ${table} WHERE ${nonNull}${keys} GROUP BY ${key} HAVING ${having})`
}

/** Each check yields rows of { file, path, message }; null: nothing to check in this scope. */
const checks: readonly ((s: Scope) => string | null)[] = [
  // Duplicates per kind.
  (s) => `SELECT file, 'id' AS path, 'duplicate user id ' || id AS message FROM s_users WHERE ${s.touched('users', 'id')} AND id IN ${duplicated('s_users', 'id', s.touched('users', 'id'))}`,
  (s) => `SELECT file, 'username', 'duplicate username ' || username FROM s_users WHERE username IN ${duplicated('s_users', 'username', s.touched('users', 'id'))}`,
  (s) => `SELECT file, 'id', 'duplicate project id ' || id FROM s_projects WHERE ${s.touched('projects', 'id')} AND id IN ${duplicated('s_projects', 'id', s.touched('projects', 'id'))}`,
  (s) => `SELECT file, 'slug', 'duplicate project slug ' || slug FROM s_projects WHERE slug IN ${duplicated('s_projects', 'slug', s.touched('projects', 'id'))}`,
  // A pair (p, q) is new when p or q is: the pairs of a touched p, and those of a touched q, each
  // through an index (one join with an OR between them scanned the projects: 1.6 s at 100,000).
  (s) => {
    const message = `SELECT p.file, 'slug', 'slug ' || p.slug || ' equals the id of project ' || q.slug`
    if (s.all) return `${message} FROM s_projects p JOIN s_projects q ON lower(q.id) = p.slug AND q.rowid <> p.rowid`
    // CROSS JOIN: SQLite keeps this order (without statistics it would scan the projects first). The
    // unary + leaves the slug without affinity, so lower(q.id) is looked up in its expression index.
    const pairs = `SELECT p.rowid AS p, q.rowid AS q FROM temp.check_projects c CROSS JOIN s_projects p ON p.id = c.id CROSS JOIN s_projects q ON lower(q.id) = +p.slug AND q.rowid <> p.rowid
      UNION SELECT p.rowid, q.rowid FROM temp.check_projects c CROSS JOIN s_projects q ON q.id = c.id CROSS JOIN s_projects p ON p.slug = lower(q.id) AND q.rowid <> p.rowid`
    return `${message} FROM (${pairs}) x CROSS JOIN s_projects p ON p.rowid = x.p CROSS JOIN s_projects q ON q.rowid = x.q`
  },
  (s) => `SELECT file, 'id', 'duplicate version id ' || id FROM s_versions WHERE ${s.touched('versions', 'id')} AND id IN ${duplicated('s_versions', 'id', s.touched('versions', 'id'))}`,
  // A group shares its project, so the versions of the projects in scope hold every new group whole.
  (s) =>
    `SELECT file, 'versionNumber', 'duplicate version number ' || version_number || ' in project ' || project_id FROM s_versions WHERE ${s.versionProject('project_id')} AND (project_id, version_number) IN (SELECT project_id, version_number FROM s_versions WHERE ${s.versionProject('project_id')} GROUP BY 1, 2 HAVING count(*) > 1)`,
  (s) => `SELECT file, 'files[' || idx || '].id', 'duplicate file id ' || id FROM s_files WHERE id IN ${duplicated('s_files', 'id', s.versionFile('file'))}`,
  // Reference files: only a touched one can add a duplicate, and then every check runs.
  (s) => (s.all ? `SELECT file, 'slug', 'duplicate category ' || slug || ' for type ' || project_type FROM s_categories WHERE (slug, project_type) IN (SELECT slug, project_type FROM s_categories GROUP BY 1, 2 HAVING count(*) > 1)` : null),
  (s) => (s.all ? `SELECT file, 'slug', 'duplicate content type ' || slug FROM s_types WHERE slug IN (SELECT slug FROM s_types GROUP BY slug HAVING count(*) > 1)` : null),
  (s) => (s.all ? `SELECT file, 'version', 'duplicate game version ' || version FROM s_game_versions WHERE version IN (SELECT version FROM s_game_versions GROUP BY version HAVING count(*) > 1)` : null),
  // References from projects.
  (s) =>
    `SELECT p.file, 'authorId', 'unknown user ' || (p.json->>'authorId') FROM s_projects p WHERE ${s.any(s.touched('projects', 'p.id'), s.gone('users', "p.json->>'authorId'"))} AND NOT EXISTS (SELECT 1 FROM s_users u WHERE u.id = p.json->>'authorId')`,
  (s) =>
    `SELECT p.file, 'members[' || m.key || '].userId', 'unknown user ' || (m.value->>'userId') FROM s_projects p, json_each(p.json, '$.members') m WHERE ${s.any(s.touched('projects', 'p.id'), s.gone('users', "m.value->>'userId'"))} AND NOT EXISTS (SELECT 1 FROM s_users u WHERE u.id = m.value->>'userId')`,
  (s) =>
    `SELECT p.file, 'members[' || m.key || '].userId', 'the author is already the owner; list other members only' FROM s_projects p, json_each(p.json, '$.members') m WHERE ${s.touched('projects', 'p.id')} AND m.value->>'userId' = p.json->>'authorId'`,
  (s) =>
    `SELECT p.file, 'categories[' || c.key || ']', 'unknown category ' || c.value || ' for type ' || p.type FROM s_projects p, json_each(p.json, '$.categories') c WHERE ${s.touched('projects', 'p.id')} AND NOT EXISTS (SELECT 1 FROM s_categories k WHERE k.slug = c.value AND k.project_type = p.type)`,
  (s) => `SELECT p.file, 'type', 'unknown content type ' || p.type FROM s_projects p WHERE ${s.touched('projects', 'p.id')} AND NOT EXISTS (SELECT 1 FROM s_types t WHERE t.slug = p.type)`,
  // References from versions.
  (s) => `SELECT v.file, 'projectId', 'unknown project ' || v.project_id FROM s_versions v WHERE ${s.versionProject('v.project_id')} AND NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.id = v.project_id)`,
  (s) => `SELECT v.file, 'projectId', 'is ' || v.project_id || ' but the folder belongs to project ' || p.id FROM s_versions v JOIN s_projects p ON p.folder = v.folder WHERE ${s.versionProject('v.project_id')} AND p.id <> v.project_id`,
  (s) => `SELECT v.file, 'projectId', 'no project.json in this folder' FROM s_versions v WHERE ${s.versionProject('v.project_id')} AND NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.folder = v.folder)`,
  (s) =>
    `SELECT v.file, 'gameVersions[' || g.key || ']', 'unknown game version ' || g.value FROM s_versions v, json_each(v.game_versions) g WHERE ${s.versionProject('v.project_id')} AND NOT EXISTS (SELECT 1 FROM s_game_versions x WHERE x.version = g.value)`,
  (s) =>
    `SELECT v.file, 'platforms[' || k.key || ']', 'platform ' || k.value || ' is not allowed for type ' || p.type FROM s_versions v JOIN s_projects p ON p.id = v.project_id JOIN s_types t ON t.slug = p.type, json_each(v.platforms) k WHERE ${s.versionProject('v.project_id')} AND NOT EXISTS (SELECT 1 FROM json_each(t.json, '$.platforms') a WHERE a.value = k.value)`,
  // Dependencies: one staging row each (load-records.ts), in the file of the version that names them.
  (s) =>
    `SELECT d.file, 'dependencies[' || d.position || '].projectId', 'unknown project ' || d.project_id FROM s_dependencies d WHERE d.project_id IS NOT NULL AND ${s.any(s.versionFile('d.file'), s.gone('projects', 'd.project_id'))} AND NOT EXISTS (SELECT 1 FROM s_projects p WHERE p.id = d.project_id)`,
  (s) =>
    `SELECT d.file, 'dependencies[' || d.position || '].versionId', 'unknown version ' || d.dep_version_id FROM s_dependencies d WHERE d.dep_version_id IS NOT NULL AND ${s.any(s.versionFile('d.file'), s.gone('versions', 'd.dep_version_id'))} AND NOT EXISTS (SELECT 1 FROM s_versions w WHERE w.id = d.dep_version_id)`,
  // The version named may have moved to another project: it was touched.
  (s) =>
    `SELECT d.file, 'dependencies[' || d.position || '].versionId', 'version ' || w.id || ' belongs to project ' || w.project_id || ', not ' || d.project_id FROM s_dependencies d JOIN s_versions w ON w.id = d.dep_version_id WHERE ${s.any(s.versionFile('d.file'), s.touched('versions', 'd.dep_version_id'))} AND d.project_id IS NOT NULL AND w.project_id <> d.project_id`,
  // A version named by its id alone and moved into the naming version's project was touched with
  // that project: the naming version is in scope then.
  (s) =>
    `SELECT d.file, 'dependencies[' || d.position || ']', 'a version cannot depend on its own project' FROM s_dependencies d LEFT JOIN s_versions w ON w.id = d.dep_version_id WHERE ${s.versionFile('d.file')} AND coalesce(d.project_id, w.project_id) = d.version_project_id`,
  // Files: rules of the content type, and one hash never in two projects.
  (s) =>
    `SELECT f.file, 'files[' || f.idx || '].filename', 'extension not allowed for type ' || p.type || ' (allowed: ' || (SELECT group_concat(e.value, ', ') FROM json_each(t.json, '$.fileExtensions') e) || ')' FROM s_files f JOIN s_projects p ON p.id = f.project_id JOIN s_types t ON t.slug = p.type WHERE ${s.versionFile('f.file')} AND NOT EXISTS (SELECT 1 FROM json_each(t.json, '$.fileExtensions') e WHERE lower(f.filename) LIKE '%' || e.value)`,
  (s) =>
    `SELECT f.file, 'files[' || f.idx || '].size', 'size ' || f.size || ' exceeds the limit ' || (t.json->>'maxFileSize') || ' of type ' || p.type FROM s_files f JOIN s_projects p ON p.id = f.project_id JOIN s_types t ON t.slug = p.type WHERE ${s.versionFile('f.file')} AND f.size > t.json->>'maxFileSize'`,
  (s) => `SELECT f.file, 'files[' || f.idx || '].sha256', 'the same file (sha256 ' || f.sha256 || ') is in another project' FROM s_files f WHERE f.sha256 IN ${duplicated('s_files', 'sha256', s.versionFile('file'), true)}`,
  (s) =>
    `SELECT f.file, 'files[' || f.idx || '].sha1', 'the same file (sha1 ' || f.sha1 || ') is in another project' FROM s_files f WHERE f.sha1 IS NOT NULL AND f.sha1 IN ${duplicated('s_files', 'sha1', s.versionFile('file'), true)}`,
]

/** The scope of a full check: every condition true. */
const everything: Scope = { all: true, touched: () => '1', gone: () => '1', versionProject: () => '1', versionFile: () => '1', any: () => '1' }

/**
 * The scope of a rebuild's checks, in temp tables of the staging connection; null when everything
 * must be checked (a reference file was touched). Returns the number of records touched too.
 */
async function touchedScope(ctx: BuildContext): Promise<{ scope: Scope; records: number } | null> {
  const { staging } = ctx
  if (await referenceTouched(staging, 's_touched')) return null
  await dropScope(ctx)
  await staging.exec(`
    CREATE TEMP TABLE check_users (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TABLE check_projects (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TABLE check_versions (id TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT OR IGNORE INTO check_users SELECT id FROM s_touched WHERE kind = 'users';
    INSERT OR IGNORE INTO check_projects SELECT id FROM s_touched WHERE kind = 'projects';
    INSERT OR IGNORE INTO check_versions SELECT id FROM s_touched WHERE kind = 'versions';
    CREATE TEMP TABLE check_version_projects (id TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT OR IGNORE INTO check_version_projects SELECT id FROM check_projects UNION ALL SELECT project_id FROM s_touched WHERE kind = 'versions' AND project_id IS NOT NULL;
    CREATE TEMP TABLE check_version_files (file TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT OR IGNORE INTO check_version_files SELECT file FROM s_versions WHERE project_id IN check_version_projects;
    CREATE TEMP TABLE check_gone_users (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TABLE check_gone_projects (id TEXT PRIMARY KEY) WITHOUT ROWID;
    CREATE TEMP TABLE check_gone_versions (id TEXT PRIMARY KEY) WITHOUT ROWID;
    INSERT INTO check_gone_users SELECT id FROM check_users WHERE id NOT IN (SELECT id FROM s_users);
    INSERT INTO check_gone_projects SELECT id FROM check_projects WHERE id NOT IN (SELECT id FROM s_projects);
    INSERT INTO check_gone_versions SELECT id FROM check_versions WHERE id NOT IN (SELECT id FROM s_versions);
  `)
  const counts = await staging.get<Record<string, number>>(
    `SELECT (SELECT count(*) FROM check_users) + (SELECT count(*) FROM check_projects) + (SELECT count(*) FROM check_versions) AS records,
       (SELECT count(*) FROM check_gone_users) AS users, (SELECT count(*) FROM check_gone_projects) AS projects, (SELECT count(*) FROM check_gone_versions) AS versions`,
  )
  const tables = { users: 'check_users', projects: 'check_projects', versions: 'check_versions' }
  const scope: Scope = {
    all: false,
    touched: (kind, column) => `${column} IN temp.${tables[kind]}`,
    // Without an id gone, no condition: the rows naming one would be read in full for nothing.
    gone: (kind, column) => (counts![kind]! > 0 ? `${column} IN temp.check_gone_${kind}` : ''),
    versionProject: (column) => `${column} IN temp.check_version_projects`,
    versionFile: (column) => `${column} IN temp.check_version_files`,
    any: (...conditions) => {
      const some = conditions.filter((c) => c !== '')
      return some.length === 0 ? '0' : `(${some.join(' OR ')})`
    },
  }
  return { scope, records: counts!.records! }
}

async function dropScope(ctx: BuildContext): Promise<void> {
  const tables = ['users', 'projects', 'versions', 'version_projects', 'version_files', 'gone_users', 'gone_projects', 'gone_versions']
  await ctx.staging.exec(tables.map((t) => `DROP TABLE IF EXISTS temp.check_${t};`).join('\n'))
}

/**
 * Runs every cross-record check and adds what it finds to ctx.problems. With `kept` (a staging
 * kept from the last build, which passed them), only what the load touched and what refers to it.
 * Returns what was checked, for the build's log.
 */
export async function validateCatalog(ctx: BuildContext, kept = false): Promise<string> {
  const touched = kept ? await touchedScope(ctx) : null
  const scope = touched?.scope ?? everything
  for (const check of checks) {
    const sql = check(scope)
    if (sql === null) continue
    // Columns are positional (file, path, message); their names are whatever SQL calls the expressions.
    const rows = await ctx.staging.all<Record<string, unknown>>(sql)
    for (const row of rows) {
      const [file, path, message] = Object.values(row).map(String)
      ctx.problems.push({ file: file!, path: path!, message: message! })
    }
  }
  if (touched) await dropScope(ctx)
  // By message too: two rows of one file and path come in the order of the query's plan, which differs between scopes.
  ctx.problems.sort((a, b) => a.file.localeCompare(b.file) || a.path.localeCompare(b.path) || a.message.localeCompare(b.message))
  if (touched) return `the ${touched.records} record${touched.records === 1 ? '' : 's'} the load touched and what refers to them`
  return kept ? 'every record: a reference file was touched' : 'every record'
}
