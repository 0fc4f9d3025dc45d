/**
 * The day secret of download dedup: the visitor is HMAC-SHA256(secret of the UTC day, client key),
 * so a visitor id cannot be linked back to an address once the secret is gone. The secret is kept
 * in memory and in a tmpfs file (a restart keeps it; a reboot does not), never beside the counts.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { z } from 'zod'

const secretFileSchema = z.object({ day: z.string(), key: z.string() })

/** The UTC day of an epoch-ms instant, `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10)
}

/** The UTC day before `day`. */
export function previousDay(day: string): string {
  return utcDay(Date.parse(`${day}T00:00:00Z`) - 86_400_000)
}

/** The visitor id of a client key under a day secret (no address is ever stored). */
export function renderVisitor(secret: Buffer, clientKey: string): string {
  return createHmac('sha256', secret).update(clientKey).digest('base64url')
}

/** A new random day secret. */
export function createSecretKey(): Buffer {
  return randomBytes(32)
}

/** The secret saved in `file` when it is the one of `day`, else null. */
export function readSecretFile(file: string | null, day: string): Buffer | null {
  if (!file || !existsSync(file)) return null
  try {
    const saved = secretFileSchema.parse(JSON.parse(readFileSync(file, 'utf8')))
    return saved.day === day ? Buffer.from(saved.key, 'base64') : null
  } catch {
    return null // A damaged secret file is replaced by the next write.
  }
}

/** Saves the secret of `day` in `file` (atomically, mode 0600); no-op without a file. */
export function writeSecretFile(file: string | null, day: string, key: Buffer): void {
  if (!file) return
  mkdirSync(path.dirname(file), { recursive: true })
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify({ day, key: key.toString('base64') }), { mode: 0o600 })
  renameSync(tmp, file)
}

/** Default place of the day secret: tmpfs when the machine has one (never beside the counts). */
export function defaultSecretFile(countersFile: string): string | null {
  if (!existsSync('/dev/shm')) return null
  const tag = createHmac('sha256', 'catalog').update(path.resolve(countersFile)).digest('hex').slice(0, 16)
  return `/dev/shm/catalog-download-secret-${tag}.json`
}
