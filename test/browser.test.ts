/**
 * What a web-based mod manager does, in a real headless Chromium: a page served from another origin
 * calls the API with fetch, reads ETag and X-Ratelimit-Limit (exposed by CORS), revalidates with
 * If-None-Match (a preflighted header), and reads the 404 envelope.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { startServer, type TestServer } from './harness.ts'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

let api: TestServer
let page: Server
let pageOrigin: string
let browser: Browser

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium package (.ci/run does)`)
  api = await startServer(inject('distDir'))
  page = createServer((_req, res) => {
    res.setHeader('Content-Type', 'text/html')
    res.end('<!doctype html><title>mod manager</title><p>ready</p>')
  })
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve))
  // A different port is a different origin, so every call below is cross-origin.
  pageOrigin = `http://localhost:${(page.address() as AddressInfo).port}`
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
})

afterAll(async () => {
  await browser?.close()
  await new Promise<void>((resolve) => page?.close(() => resolve()))
  expect(api.serverErrors()).toBe(0)
  await api.close()
})

describe('a browser on another origin', () => {
  it('reads exposed headers, revalidates with If-None-Match and sees the 404 envelope', async () => {
    const tab = await browser.newPage()
    await tab.goto(pageOrigin)
    const result = await tab.evaluate(async (base: string) => {
      const first = await fetch(`${base}/api/v1/projects/sodium`, { cache: 'no-store' })
      const body = await first.json()
      const etag = first.headers.get('etag')
      const again = await fetch(`${base}/api/v1/projects/sodium`, { cache: 'no-store', headers: { 'If-None-Match': etag ?? '' } })
      const missing = await fetch(`${base}/api/v1/projects/no-such-project-here`, { cache: 'no-store' })
      return {
        status: first.status,
        slug: body.data.slug as string,
        etag,
        limit: first.headers.get('x-ratelimit-limit'),
        revalidated: again.status,
        missingStatus: missing.status,
        missing: await missing.json(),
        missingRequestId: missing.headers.get('x-request-id'),
      }
    }, api.origin)
    await tab.close()
    expect(result.status).toBe(200)
    expect(result.slug).toBe('sodium')
    expect(result.etag).toMatch(/^"/)
    expect(result.limit).toMatch(/^\d+$/)
    expect(result.revalidated).toBe(304)
    expect(result.missingStatus).toBe(404)
    expect(result.missing.error.code).toBe('not_found')
    expect(result.missing.error.requestId).toBe(result.missingRequestId)
  })
})
