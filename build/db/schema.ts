/**
 * SQL of the two databases a build makes. The staging database holds every source record (all
 * statuses) for cross-record validation; the catalog database holds only visible data, the rendered
 * JSON the shim answers with, and the indexes its queries need. The catalog schema is documented in
 * README.md ("The catalog database") because offline users query it directly.
 */

/** Settings of every staging connection (not stored in the file). */
export const stagingPragmas = `
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
`

/**
 * Staging: one row per source record, the normalised record as JSON. A version's fields the catalog
 * copies are also columns, and its files and dependencies rows of their own: taken by the load (a
 * rebuild's: of the changed files only) instead of out of 1 M records' JSON by every catalog.
 * s_sources, one row per record file loaded, with the stat signatures a rebuild compares
 * (build/staging-cache.ts); s_touched, the records of the files the last load read again or dropped
 * (build/catalog-memo.ts).
 */
export const stagingSchema = `
CREATE TABLE s_sources (kind TEXT, file TEXT, signature TEXT, blobs TEXT);
CREATE TABLE s_catalog (file TEXT, json TEXT);
CREATE TABLE s_categories (slug TEXT, project_type TEXT, file TEXT, json TEXT);
CREATE TABLE s_types (slug TEXT, file TEXT, json TEXT);
CREATE TABLE s_game_versions (version TEXT, file TEXT, json TEXT);
CREATE TABLE s_users (id TEXT, username TEXT, file TEXT, json TEXT);
CREATE TABLE s_projects (id TEXT, slug TEXT, type TEXT, status TEXT, folder TEXT, file TEXT, json TEXT);
CREATE TABLE s_versions (id TEXT, project_id TEXT, version_number TEXT, status TEXT, folder TEXT, file TEXT, json TEXT, channel TEXT, published_at TEXT, created_at TEXT, game_versions TEXT, platforms TEXT, downloads INTEGER);
CREATE TABLE s_files (id TEXT, version_id TEXT, project_id TEXT, filename TEXT, size INTEGER, sha256 TEXT, sha1 TEXT, idx INTEGER, blob TEXT, file TEXT);
CREATE TABLE s_dependencies (version_id TEXT, version_project_id TEXT, position INTEGER, type TEXT, project_id TEXT, dep_version_id TEXT, external INTEGER, file TEXT);
CREATE TABLE s_touched (kind TEXT NOT NULL, id TEXT NOT NULL, project_id TEXT);
`

/**
 * Indexes added to staging after loading (cheaper than maintaining them during inserts); already
 * there in a kept staging. None is for the catalog's copy, which scans (catalog.ts writeVisibleRows).
 */
export const stagingIndexes = `
CREATE INDEX IF NOT EXISTS s_users_id ON s_users(id);
CREATE INDEX IF NOT EXISTS s_projects_id ON s_projects(id);
CREATE INDEX IF NOT EXISTS s_projects_folder ON s_projects(folder);
CREATE INDEX IF NOT EXISTS s_versions_id ON s_versions(id);
CREATE INDEX IF NOT EXISTS s_versions_project ON s_versions(project_id);
CREATE INDEX IF NOT EXISTS s_files_sha256 ON s_files(sha256);
CREATE INDEX IF NOT EXISTS s_files_id ON s_files(id);
CREATE INDEX IF NOT EXISTS s_sources_file ON s_sources(file);
CREATE INDEX IF NOT EXISTS s_users_file ON s_users(file);
CREATE INDEX IF NOT EXISTS s_projects_file ON s_projects(file);
CREATE INDEX IF NOT EXISTS s_versions_file ON s_versions(file);
CREATE INDEX IF NOT EXISTS s_files_file ON s_files(file);
CREATE INDEX IF NOT EXISTS s_dependencies_file ON s_dependencies(file);
CREATE INDEX IF NOT EXISTS s_users_username ON s_users(username);
CREATE INDEX IF NOT EXISTS s_projects_slug ON s_projects(slug);
CREATE INDEX IF NOT EXISTS s_projects_lower_id ON s_projects(lower(id));
CREATE INDEX IF NOT EXISTS s_files_sha1 ON s_files(sha1);
CREATE INDEX IF NOT EXISTS s_dependencies_version ON s_dependencies(dep_version_id);
`

/** Catalog: visible data only. */
export const catalogSchema = `
PRAGMA page_size = 8192;
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE reference (kind TEXT NOT NULL, position INTEGER NOT NULL, filter TEXT, json TEXT NOT NULL, PRIMARY KEY (kind, position)) WITHOUT ROWID;
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  author_json TEXT NOT NULL,
  profile_json TEXT NOT NULL
);
CREATE TABLE projects (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  slug TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  name TEXT NOT NULL,
  author_id TEXT NOT NULL,
  author_username TEXT NOT NULL,
  downloads INTEGER NOT NULL,
  favorites INTEGER NOT NULL,
  followers INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  published_at TEXT,
  summary_json TEXT NOT NULL,
  source_json TEXT NOT NULL
);
-- Key columns first: the sqlite3 shell of Debian 12 (SQLite 3.40) reports false "NULL value" errors in
-- PRAGMA quick_check on a WITHOUT ROWID table whose key columns are not its leading ones.
CREATE TABLE project_members (project_id TEXT NOT NULL, position INTEGER NOT NULL, user_id TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (project_id, position)) WITHOUT ROWID;
CREATE TABLE project_facets (facet TEXT NOT NULL, project_rowid INTEGER NOT NULL, PRIMARY KEY (facet, project_rowid)) WITHOUT ROWID;
CREATE TABLE versions (
  rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL,
  version_number TEXT NOT NULL,
  channel TEXT NOT NULL,
  rank INTEGER NOT NULL,
  game_versions TEXT NOT NULL,
  platforms TEXT NOT NULL,
  downloads INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  published_at TEXT,
  json TEXT,
  -- The ETag of {"data":<json>}, the body of /versions/{id} and of its files' single lookups (build/render/etag.ts).
  body_etag TEXT,
  -- The SHA-256 (hex) of that body: a rebuild that reuses the JSON names the stored body without reading it (static/versions.ts).
  body_sha256 TEXT
);
CREATE TABLE files (
  id TEXT PRIMARY KEY,
  version_id TEXT NOT NULL,
  -- The rowid of the version version_id names: a hash lookup reads that row by it, with no descent of versions' id index.
  version_rowid INTEGER NOT NULL,
  project_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  filename TEXT NOT NULL,
  size INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  sha1 TEXT,
  downloads INTEGER NOT NULL DEFAULT 0
);
-- One row: every file's sha256 and sha1 by their first 32 bits, each with its version's rowid (build/hash-index.ts).
CREATE TABLE hash_index (buckets BLOB NOT NULL, keys BLOB NOT NULL, rowids BLOB NOT NULL, entries INTEGER NOT NULL);
-- One row: each version's channel, game versions and platforms, for update matching (build/version-targets.ts).
CREATE TABLE version_targets (starts BLOB NOT NULL, targets BLOB NOT NULL, target_width INTEGER NOT NULL, target_starts BLOB NOT NULL, target_values BLOB NOT NULL, value_width INTEGER NOT NULL, value_names TEXT NOT NULL);
CREATE TABLE dependencies (
  version_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  type TEXT NOT NULL,
  project_id TEXT,
  dep_version_id TEXT,
  PRIMARY KEY (version_id, position)
) WITHOUT ROWID;
`

/**
 * Page cache of each build connection and attached database, in KiB (SQLite's own default is 2 MB).
 * The large catalog's files are GBs (catalog.sqlite 3.4 GB, staging about as large): with 2 MB,
 * index builds and lookups re-read their pages through the kernel again and again. 256 MB each
 * took the 100,000-project build's peak RSS from 0.9 to 2.2 GB (over its 2 GB goal: the caches
 * of staging, the catalog and the attached staging are full at once during the render), so 64 MB.
 */
export const BUILD_CACHE_KIB = 64 * 1024

/**
 * Indexes of versions, and of files (fileIndexes), each created after its bulk insert (the versions'
 * first: the projects' rows are made from them before the files are copied). Update matching reads them
 * without the tables (shim/versions-query.ts): a hash's project from the hash indexes, and each
 * candidate version's channel, game versions and platforms from versions_project_rank, so only the
 * one version that matches is read from its row (about 1 KB: its rendered JSON; the source record
 * stays in staging). Measured at the large catalog: 4.4 → 2.6 ms
 * of CPU per 100-hash update request, most of the rest is pages copied in by pread
 * (bench/results/PROFILE.md). The hash indexes also carry the file's version, so a hash lookup
 * goes from the index to the version without reading the file's row: one page fewer per hash,
 * bulk hash lookups with the cache off 4.7–6.2 → 3.8–4.8 ms of CPU per 100-hash request at the large
 * catalog, for 21 MB more index (bench/results/PROFILE.md, "Session 14"). They end in the version's
 * rowid (files.version_rowid), so the lookup then reads the version's row by its rowid instead of
 * descending versions' id index first: one B-tree fewer a hash, cache-off bulk lookups about 18%
 * less CPU (bench/results/PROFILE.md, "Session 22"). Ranks are unique per project by construction
 * (catalog.ts).
 */
export const versionIndexes = `
CREATE INDEX versions_project_rank ON versions(project_id, rank, channel, game_versions, platforms);
CREATE UNIQUE INDEX versions_project_number ON versions(project_id, version_number);
`

/** The files' indexes (see versionIndexes), created after the files' bulk insert. */
export const fileIndexes = `
CREATE INDEX files_version ON files(version_id, position);
CREATE INDEX files_sha256 ON files(sha256, project_id, version_id, version_rowid);
CREATE INDEX files_sha1 ON files(sha1, project_id, version_id, version_rowid);
`

/** Indexes of projects and members, created after their bulk insert. */
export const catalogIndexes = `
CREATE INDEX projects_downloads ON projects(downloads DESC, id);
CREATE INDEX projects_updated ON projects(updated_at DESC, id);
CREATE INDEX projects_newest ON projects(published_at DESC, id);
CREATE INDEX projects_name ON projects(name COLLATE NOCASE, id);
CREATE INDEX projects_favorites ON projects(favorites DESC, id);
CREATE INDEX projects_author ON projects(author_username);
CREATE INDEX project_members_user ON project_members(user_id);
CREATE INDEX dependencies_project ON dependencies(project_id);
`
