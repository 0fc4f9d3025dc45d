/**
 * Before any load: every server must answer the same URLs with the same bytes and Content-Type,
 * and a 304 to its own ETag — otherwise the comparison would not be of the same work.
 */
import { readFileSync } from 'node:fs'

/** A server to check and its URL list ("path<TAB>etag"). */
export interface VerifyTarget {
  name: string
  port: number
  listFile: string
}

/** Checks up to `sample` distinct URLs of the map ("path<TAB>file") on every target. */
export async function verifySameAnswers(targets: readonly VerifyTarget[], mapFile: string, sample: number): Promise<void> {
  const entries = readFileSync(mapFile, 'utf8').trim().split('\n').map((l) => l.split('\t') as [string, string])
  const step = Math.max(1, Math.floor(entries.length / sample))
  const chosen = entries.filter((_, i) => i % step === 0).slice(0, sample)
  for (const target of targets) {
    const etags = new Map(readFileSync(target.listFile, 'utf8').trim().split('\n').map((l) => l.split('\t') as [string, string]))
    for (const [urlPath, file] of chosen) {
      const url = `http://127.0.0.1:${target.port}${urlPath}`
      const res = await fetch(url)
      const body = Buffer.from(await res.arrayBuffer())
      const type = res.headers.get('content-type')
      if (res.status !== 200 || !body.equals(readFileSync(file)) || type !== 'application/json; charset=utf-8') {
        throw new Error(`${target.name}: ${urlPath} answered ${res.status} ${type} with ${body.length} bytes, not the release file`)
      }
      const etag = etags.get(urlPath)
      if (res.headers.get('etag') !== etag) throw new Error(`${target.name}: ${urlPath} ETag ${res.headers.get('etag')} is not the listed ${etag}`)
      const conditional = await fetch(url, { headers: { 'If-None-Match': etag! } })
      await conditional.arrayBuffer()
      if (conditional.status !== 304) throw new Error(`${target.name}: ${urlPath} with If-None-Match answered ${conditional.status}, not 304`)
    }
  }
}
