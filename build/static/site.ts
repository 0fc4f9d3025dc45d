/**
 * Pre-renders the catalog-wide files: reference data, statistics, the OpenAPI document, the default
 * first page of /projects, and the content-addressed file objects.
 */
import path from 'node:path'
import type { Db } from '../db/sqlite.ts'
import { createOpenApiDocument } from '../openapi.ts'
import { renderBodyBytes, renderPageMeta, renderRawListBytes } from '../render/body.ts'
import { renderStatistics } from '../render/resources.ts'
import type { ReleaseSink } from '../release/write-sink.ts'
import { apiFile, objectFile } from '../static-paths.ts'
import { DEFAULT_LIMIT } from './projects.ts'

/** SQL of the totals in /statistics (published items only: the catalog holds nothing else). */
export const statisticsSql = `
  SELECT (SELECT count(*) FROM projects) AS projects, (SELECT count(*) FROM versions) AS versions,
    (SELECT count(*) FROM files) AS files, (SELECT count(DISTINCT user_id) FROM project_members) AS authors,
    (SELECT coalesce(sum(downloads), 0) FROM projects) AS downloads`

/** Writes reference data, statistics and the first page of /projects. */
export async function writeSiteFiles(db: Db, writer: ReleaseSink): Promise<void> {
  const game = (await db.get<{ value: string }>(`SELECT value FROM meta WHERE key = 'game'`))!.value
  const reference = async (kind: string, where = ''): Promise<string[]> =>
    (await db.all<{ json: string }>(`SELECT json FROM reference WHERE kind = ? ${where} ORDER BY position`, [kind])).map((r) => r.json)
  writer.write([apiFile('/categories')], renderRawListBytes(await reference('category')))
  writer.write([apiFile('/types')], renderRawListBytes(await reference('type')))
  writer.write([apiFile(`/${game}/versions`)], renderRawListBytes(await reference('game-version', `AND filter = 'release'`)))
  const totals = (await db.get<{ projects: number; versions: number; files: number; authors: number; downloads: number }>(statisticsSql))!
  writer.write([apiFile('/statistics')], renderBodyBytes(renderStatistics(totals)))
  // The document is the body itself, not wrapped in { data }.
  writer.write([apiFile('/openapi.json')], Buffer.from(JSON.stringify(createOpenApiDocument(game))))
  const top = await db.all<{ json: string }>(`SELECT summary_json AS json FROM projects ORDER BY downloads DESC, id LIMIT ${DEFAULT_LIMIT}`)
  const meta = renderPageMeta(1, DEFAULT_LIMIT, totals.projects)
  writer.write([apiFile('/projects'), apiFile('/search')], renderRawListBytes(top.map((r) => r.json), meta))
}

/** Copies the bytes of every visible file that has a blob to its content-addressed name. */
export async function writeObjects(db: Db, dataDir: string, writer: ReleaseSink): Promise<void> {
  const rows = await db.all<{ sha256: string; filename: string; blob: string }>(
    `SELECT DISTINCT f.sha256, f.filename, min(s.blob) AS blob FROM files f JOIN staging.s_files s ON s.id = f.id
     WHERE s.blob IS NOT NULL GROUP BY f.sha256, f.filename ORDER BY f.sha256, f.filename`,
  )
  for (const [i, r] of rows.entries()) {
    writer.copy(objectFile(r.sha256, r.filename), path.join(dataDir, r.blob))
    if (i % 1024 === 1023) await writer.drain()
  }
}
