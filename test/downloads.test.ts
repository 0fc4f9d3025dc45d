/**
 * Download counting through the real surface: once per visitor, file and UTC day; HEAD not counted;
 * no acknowledged count lost or doubled when the shim is killed with SIGKILL mid-burst; the next
 * build folds the counts into `downloads`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { resolveBuildOptions } from '../build/config.ts'
import { openDb } from '../build/db/sqlite.ts'
import { runBuild } from '../build/index.ts'
import { freePort, startServer, json, type TestServer } from './harness.ts'

const dir = mkdtempSync(path.join(os.tmpdir(), 'downloads-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** GET or HEAD from a chosen loopback source address; resolves with the status. */
function hit(origin: string, urlPath: string, localAddress: string, method = 'GET'): Promise<number> {
  const url = new URL(origin + urlPath)
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, localAddress, agent: false }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', reject)
    req.end()
  })
}

async function countOf(file: string, fileId: string): Promise<{ n: number; visits: number }> {
  const db = await openDb(file, { readonly: true })
  const n = (await db.get<{ n: number }>(`SELECT n FROM file_downloads WHERE file_id = ?`, [fileId]))?.n ?? 0
  const visits = (await db.get<{ c: number }>(`SELECT count(*) AS c FROM download_visits WHERE file_id = ?`, [fileId]))!.c
  await db.close()
  return { n, visits }
}

let fileIds: string[] = []

describe('download counting over HTTP', () => {
  let server: TestServer
  let now = Date.parse('2026-05-10T12:00:00Z')
  const counters = path.join(dir, 'http-counters.sqlite')
  beforeAll(async () => {
    server = await startServer(inject('distDir'), { countersFile: counters, downloadSecretFile: null }, { now: () => now })
    const detail = await json(await server.get('/projects/sodium'))
    fileIds = (detail.data.currentVersion.files as { id: string }[]).map((f) => f.id)
  })
  afterAll(async () => {
    expect(server.serverErrors()).toBe(0)
    await server.close()
  })

  it('counts 50 concurrent downloads of one visitor once, two visitors twice, HEAD never, and again the next UTC day', async () => {
    const id = fileIds[0]!
    const statuses = await Promise.all(Array.from({ length: 50 }, () => hit(server.origin, `/api/v1/files/${id}/download`, '127.0.0.21')))
    expect(statuses.every((s) => s === 302)).toBe(true)
    expect(await countOf(counters, id)).toEqual({ n: 1, visits: 1 })
    expect(await hit(server.origin, `/api/v1/files/${id}/download`, '127.0.0.22', 'HEAD')).toBe(302)
    expect((await countOf(counters, id)).n).toBe(1)
    expect(await hit(server.origin, `/api/v1/files/${id}/download`, '127.0.0.22')).toBe(302)
    expect((await countOf(counters, id)).n).toBe(2)
    now += 86_400_000
    await Promise.all(Array.from({ length: 5 }, () => hit(server.origin, `/api/v1/files/${id}/download`, '127.0.0.21')))
    expect((await countOf(counters, id)).n).toBe(3)
    const missing = await server.get('/files/NoSuchFile/download')
    expect(missing.status).toBe(404)
  })
})

describe('kill -9 during a burst of downloads', () => {
  const counters = path.join(dir, 'kill-counters.sqlite')
  const secret = path.join(dir, 'kill-secret.json')
  const start = async (port: number): Promise<ChildProcess> => {
    const child = spawn(process.execPath, ['node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'], {
      env: { ...process.env, DIST_DIR: inject('distDir'), COUNTERS_FILE: counters, DOWNLOAD_SECRET_FILE: secret, HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT: '100000' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    await new Promise<void>((resolve, reject) => {
      let err = ''
      child.stderr!.on('data', (chunk: Buffer) => {
        err += chunk.toString()
        if (err.includes('Serving release')) resolve()
      })
      child.on('exit', (code) => reject(new Error(`shim exited with ${code}: ${err}`)))
    })
    return child
  }

  it('loses no acknowledged count and doubles none after a restart', async () => {
    const port = await freePort()
    const origin = `http://127.0.0.1:${port}`
    const id = fileIds[0]!
    const child = await start(port)
    let acked = 0
    const visitors = Array.from({ length: 240 }, (_, i) => `127.0.${2 + Math.floor(i / 200)}.${1 + (i % 200)}`)
    const acknowledged: string[] = []
    const burst = (async () => {
      for (let i = 0; i < visitors.length; i += 8) {
        const batch = visitors.slice(i, i + 8)
        const results = await Promise.allSettled(batch.map((v) => hit(origin, `/api/v1/files/${id}/download`, v)))
        results.forEach((r, j) => {
          if (r.status === 'fulfilled' && r.value === 302) {
            acked++
            acknowledged.push(batch[j]!)
          }
        })
        if (acked >= 60 && child.exitCode === null) child.kill('SIGKILL')
      }
    })()
    await burst
    await new Promise((r) => setTimeout(r, 200))
    const afterKill = await countOf(counters, id)
    expect(acked).toBeGreaterThanOrEqual(60)
    expect(afterKill.n).toBe(afterKill.visits)
    expect(afterKill.n).toBeGreaterThanOrEqual(acked)
    expect(afterKill.n).toBeLessThanOrEqual(acked + 8)
    // The same visitors again after a restart (same day): nothing is counted twice.
    const again = await start(port)
    for (const v of acknowledged.slice(0, 20)) expect(await hit(origin, `/api/v1/files/${id}/download`, v)).toBe(302)
    again.kill('SIGTERM')
    expect((await countOf(counters, id)).n).toBe(afterKill.n)
  })
})

describe('the next build folds counts into downloads', () => {
  it('adds counted downloads to the version, the project, the author and the statistics', async () => {
    const data = path.join(dir, 'data')
    const dist = path.join(dir, 'dist')
    cpSync('data', data, { recursive: true })
    const counters = path.join(dir, 'fold-counters.sqlite')
    const before = await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: counters, log: () => {} }))
    expect(before.ok).toBe(true)
    const server = await startServer(dist, { countersFile: counters, downloadSecretFile: null })
    const read = async (p: string): Promise<any> => (await json(await server.get(p))).data
    const project0 = await read('/projects/sodium')
    const version0 = project0.currentVersion
    const stats0 = await read('/statistics')
    const author0 = await read(`/users/${project0.author.username}`)
    const fileId = version0.files[0].id
    for (const v of ['127.0.0.31', '127.0.0.32', '127.0.0.33']) expect(await hit(server.origin, `/api/v1/files/${fileId}/download`, v)).toBe(302)
    await server.close()
    expect((await runBuild(resolveBuildOptions({ dataDir: data, distDir: dist, countersFile: counters, log: () => {} }))).ok).toBe(true)
    const after = await startServer(dist, { countersFile: counters, downloadSecretFile: null })
    const readAfter = async (p: string): Promise<any> => (await json(await after.get(p))).data
    const project1 = await readAfter('/projects/sodium')
    expect(project1.currentVersion.downloads).toBe(version0.downloads + 3)
    expect(project1.downloads).toBe(project0.downloads + 3)
    expect((await readAfter('/statistics')).downloads).toBe(stats0.downloads + 3)
    expect((await readAfter(`/users/${project0.author.username}`)).stats.downloads).toBe(author0.stats.downloads + 3)
    expect((await readAfter(`/versions/${version0.id}`)).downloads).toBe(version0.downloads + 3)
    await after.close()
  })
})
