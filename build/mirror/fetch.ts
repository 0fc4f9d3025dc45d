/**
 * HTTP for the mirror: GET with retries (network errors, 429 and 5xx, exponential backoff with
 * jitter, Retry-After honoured) and downloads verified against an expected SHA-256 and size while
 * they stream to disk; a file is renamed into place only once it verifies.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, renameSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import path from 'node:path'

/** How the mirror talks to the origin. */
export interface FetchSettings {
  /** Origin, e.g. https://api.example.org (no trailing slash). */
  base: string
  /** Attempts per request after the first. */
  retries: number
  /** Folder for downloads in flight (same file system as the release). */
  partsDir: string
  /** Requests sent (including retries). */
  requests: number
}

/** A file that did not match what the manifest says. */
export class VerifyError extends Error {}

/** GETs a path, retrying transient failures; resolves with a 200 response or throws. */
export async function fetchWithRetry(settings: FetchSettings, urlPath: string): Promise<Response> {
  let lastError: unknown = null
  for (let attempt = 0; attempt <= settings.retries; attempt++) {
    if (attempt > 0) await sleep(backoff(attempt, lastError))
    settings.requests++
    try {
      const res = await fetch(settings.base + urlPath, { redirect: 'follow', headers: { 'user-agent': 'catalog-mirror/1' } })
      if (res.status === 200) return res
      await res.body?.cancel()
      const error = new HttpError(res.status, urlPath, res.headers.get('retry-after'))
      if (res.status !== 429 && res.status < 500) throw error
      lastError = error
    } catch (err) {
      if (err instanceof HttpError && err.status !== 429 && err.status < 500) throw err
      lastError = err
    }
  }
  throw lastError instanceof Error ? lastError : new Error(`GET ${urlPath} failed`)
}

/** Downloads a path to `target`, verifying SHA-256 and size on the way; throws VerifyError on a mismatch. */
export async function downloadTo(settings: FetchSettings, urlPath: string, target: string, expect: { sha256: string; size: number }): Promise<number> {
  const res = await fetchWithRetry(settings, urlPath)
  mkdirSync(settings.partsDir, { recursive: true })
  const part = path.join(settings.partsDir, randomBytes(8).toString('hex'))
  const hash = createHash('sha256')
  let size = 0
  const fh = await open(part, 'w')
  try {
    for await (const chunk of res.body ?? []) {
      const bytes = chunk as Uint8Array
      size += bytes.length
      if (size > expect.size) break
      hash.update(bytes)
      await fh.write(bytes)
    }
  } catch (err) {
    await fh.close()
    rmSync(part, { force: true })
    throw err
  }
  await fh.close()
  const sha256 = hash.digest('hex')
  if (size !== expect.size || sha256 !== expect.sha256) {
    rmSync(part, { force: true })
    await res.body?.cancel().catch(() => {})
    throw new VerifyError(`${urlPath}: expected ${expect.size} bytes with SHA-256 ${expect.sha256}, got ${size > expect.size ? 'more' : size} bytes with ${size > expect.size ? '?' : sha256}`)
  }
  mkdirSync(path.dirname(target), { recursive: true })
  renameSync(part, target)
  return size
}

/** Fetches a small document whole. */
export async function fetchBytes(settings: FetchSettings, urlPath: string): Promise<Buffer> {
  const res = await fetchWithRetry(settings, urlPath)
  return Buffer.from(await res.arrayBuffer())
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    urlPath: string,
    readonly retryAfter: string | null,
  ) {
    super(`GET ${urlPath}: HTTP ${status}`)
  }
}

function backoff(attempt: number, lastError: unknown): number {
  if (lastError instanceof HttpError && lastError.retryAfter && /^\d+$/.test(lastError.retryAfter)) {
    return Math.min(60, Number(lastError.retryAfter)) * 1000 + Math.random() * 250
  }
  return Math.min(10_000, 200 * 2 ** (attempt - 1)) * (0.75 + Math.random() * 0.5)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
