/**
 * Stopping the shim (shim/cli.ts): SIGTERM or SIGINT finish the responses in flight, refuse new
 * connections, close idle keep-alive connections at once, commit the download events and exit 0.
 * The real CLI over the sample catalog, real sockets.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { Agent, request, type IncomingMessage } from 'node:http'
import { connect, createServer, type Socket } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, inject, it } from 'vitest'
import { openDb } from '../build/db/sqlite.ts'
import { freePort } from './harness.ts'

const dir = mkdtempSync(path.join(realpathSync(os.tmpdir()), 'graceful-stop-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Shim {
  child: ChildProcess
  origin: string
  stderr: () => string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }>
}

async function startShim(name: string): Promise<Shim> {
  const port = await freePort()
  const child = spawn(process.execPath, ['node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'], {
    env: { ...process.env, DIST_DIR: inject('distDir'), COUNTERS_FILE: path.join(dir, `${name}.sqlite`), HOST: '127.0.0.1', PORT: String(port), RATE_LIMIT: '100000' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
  let signalledAt = 0
  const kill = child.kill.bind(child)
  child.kill = (signal?: NodeJS.Signals | number) => ((signalledAt = Date.now()), kill(signal))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; afterMs: number }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, afterMs: Date.now() - signalledAt })),
  )
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (err.includes('Serving release')) resolve()
      if (child.exitCode !== null) reject(new Error(`shim exited: ${err}`))
    }, 20)
    void exited.then(() => clearInterval(timer))
    child.once('exit', () => clearInterval(timer))
    setTimeout(() => clearInterval(timer), 60_000)
  })
  return { child, origin: `http://127.0.0.1:${port}`, stderr: () => err, exited }
}

function get(origin: string, urlPath: string, agent?: Agent): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${urlPath}`, { agent }, resolve)
    req.on('error', reject)
    req.end()
  })
}

function openSocket(origin: string): Promise<Socket> {
  const url = new URL(origin)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => resolve(socket))
    socket.on('error', reject)
  })
}

/** Everything the server sends until it closes the connection. */
function readSocket(socket: Socket): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('end', () => resolve(Buffer.concat(chunks)))
    socket.on('error', reject)
  })
}

async function readAll(res: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const c of res) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
}

/** Sends SIGTERM while a request's head is half sent, and checks the shim is still running 400 ms later. */
async function signalDuringRequest(shim: Shim): Promise<Socket> {
  const socket = await openSocket(shim.origin)
  socket.write('GET /api/v1/projects/sodium HTTP/1.1\r\nHost: 127.0.0.1\r\n')
  await new Promise((r) => setTimeout(r, 100))
  shim.child.kill('SIGTERM')
  await new Promise((r) => setTimeout(r, 400))
  expect(shim.child.exitCode).toBeNull()
  return socket
}

describe('stopping the shim', () => {
  it('on SIGTERM answers a request in flight, refuses new connections, then exits 0', async () => {
    const shim = await startShim('inflight')
    const expected = await readAll(await get(shim.origin, '/api/v1/projects/sodium'))
    // A request in flight: its head half sent when the signal comes.
    const socket = await signalDuringRequest(shim)
    expect(shim.stderr()).toMatch(/SIGTERM: finishing the requests in flight/)
    await expect(get(shim.origin, '/api/v1/tags/platform')).rejects.toThrow(/ECONNREFUSED/)
    const answer = readSocket(socket)
    socket.write('\r\n')
    const text = (await answer).toString('latin1')
    const [head, body] = [text.slice(0, text.indexOf('\r\n\r\n')), Buffer.from(text.slice(text.indexOf('\r\n\r\n') + 4), 'latin1')]
    expect(head).toMatch(/^HTTP\/1\.1 200 /)
    expect(body.equals(expected)).toBe(true)
    const exit = await shim.exited
    expect(exit).toMatchObject({ code: 0, signal: null })
  })

  it('on SIGINT does not wait for an idle keep-alive connection, and a download acknowledged before is counted', async () => {
    const shim = await startShim('idle')
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const projects = JSON.parse((await readAll(await get(shim.origin, '/api/v1/search?limit=1', agent))).toString()) as { data: { id: string }[] }
    const versions = JSON.parse((await readAll(await get(shim.origin, `/api/v1/projects/${projects.data[0]!.id}/versions`, agent))).toString()) as {
      data: { files: { id: string }[] }[]
    }
    const fileId = versions.data[0]!.files[0]!.id
    const download = await get(shim.origin, `/api/v1/files/${fileId}/download`, agent)
    await readAll(download)
    expect(download.statusCode).toBe(302)
    // The agent keeps its socket open and idle.
    expect(Object.values(agent.freeSockets).flat().length).toBe(1)
    shim.child.kill('SIGINT')
    const exit = await shim.exited
    expect(exit).toMatchObject({ code: 0, signal: null })
    expect(exit.afterMs).toBeLessThan(3_000)
    agent.destroy()
    const db = await openDb(path.join(dir, 'idle.sqlite'), { readonly: true })
    expect(await db.get(`SELECT n FROM file_downloads WHERE file_id = ?`, [fileId])).toEqual({ n: 1 })
    await db.close()
  })

  it('stops at once, exit 1, on a second signal while a request is still in flight', async () => {
    const shim = await startShim('twice')
    const socket = await signalDuringRequest(shim)
    shim.child.kill('SIGTERM')
    const exit = await shim.exited
    expect(exit).toMatchObject({ code: 1, signal: null })
    expect(shim.stderr()).toMatch(/SIGTERM again: stopping now/)
    socket.destroy()
  })
})

describe('starting the shim', () => {
  it('on a port already taken says so and exits 1, without a stack trace', async () => {
    const taken = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    try {
      const child = spawn(process.execPath, ['node_modules/vite-node/dist/cli.mjs', 'shim/cli.ts'], {
        env: { ...process.env, DIST_DIR: inject('distDir'), COUNTERS_FILE: path.join(dir, 'taken.sqlite'), HOST: '127.0.0.1', PORT: String(port) },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      let err = ''
      child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()))
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve))
      expect(code).toBe(1)
      expect(err).toContain(`Not starting: 127.0.0.1:${port} is already in use; set PORT (and HOST) to another`)
      expect(err).not.toMatch(/\n\s+at /)
    } finally {
      await new Promise((resolve) => taken.close(resolve))
    }
  }, 60_000)
})
