/**
 * The shim moves to a new release by itself (`RELEASE_POLL_MS`, shim/context.ts): after polls that
 * found nothing new, a release built later is served within a few polls, with no call from outside.
 * (A poll that found nothing used to leave the shim on its release for good.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { buildRelease, copySampleData, editSummary, json, startServer, type TestServer } from './harness.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'release-poll-test-'))
const data = copySampleData(root)
const dist = path.join(root, 'dist')
let server: TestServer | undefined

afterAll(async () => {
  await server?.close()
  rmSync(root, { recursive: true, force: true })
})

/** Sodium's summary as the shim serves it. */
async function servedSummary(): Promise<string> {
  return (await json(await server!.get('/projects/sodium'))).data.summary as string
}

describe('the release poll', () => {
  it('finds nothing new without effect, then swaps to the next release on its own', async () => {
    const first = await buildRelease(data, dist)
    server = await startServer(dist, { releasePollMs: 50 })
    const before = await servedSummary()
    // Several polls with nothing new, and two direct checks: each says so.
    await sleep(300)
    expect(await server.ctx.reload()).toBe(false)
    expect(await server.ctx.reload()).toBe(false)
    expect(server.ctx.release.id).toBe(first.pointer.id)

    editSummary(data, 'sodium', 'A summary the poll must find')
    const second = await buildRelease(data, dist)
    const deadline = Date.now() + 5000
    while (server.ctx.release.id !== second.pointer.id && Date.now() < deadline) await sleep(25)
    expect(server.ctx.release.id).toBe(second.pointer.id)
    expect(await servedSummary()).toBe('A summary the poll must find')
    expect(before).not.toBe('A summary the poll must find')
    const pointer = await json(await fetch(`${server.origin}/mirror/pointer.json`))
    expect(pointer.serial).toBe(second.pointer.serial)
  })
})
