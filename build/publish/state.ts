/**
 * The publish state kept in the bucket beside the release (`<prefix>.publish/state.json`): whether
 * a run is in progress (a run that finds one was interrupted HEADs before writing, so it resumes
 * without writing again what is already there), the last release published, and the lists of
 * names retired by each publish that wait for their retention before they are deleted.
 */
import { z } from 'zod'
import { getObjectBytes } from './client.ts'
import type { PublishContext } from './context.ts'
import { uploadBytes } from './put.ts'

/** A list of names a publish stopped serving, deleted once its retention has passed. */
export const retiredListSchema = z.object({
  serial: z.number().int().positive(),
  /** Key of the gzipped list (one release-relative name per line). */
  key: z.string(),
  names: z.number().int().nonnegative(),
  /** When the pointer stopped naming them; null while that pointer is not written yet. */
  liveAt: z.string().nullable(),
})
/** A retired list. */
export type RetiredList = z.infer<typeof retiredListSchema>

/** The publish state document. */
export const publishStateSchema = z.object({
  format: z.literal(1),
  inProgress: z.object({ serial: z.number().int().positive(), startedAt: z.string() }).nullable(),
  published: z.object({ serial: z.number().int().positive(), manifestSha256: z.string(), publishedAt: z.string() }).nullable(),
  retired: z.array(retiredListSchema),
})
/** The publish state. */
export type PublishState = z.infer<typeof publishStateSchema>

/** Key of the state document. */
export function stateKey(prefix: string): string {
  return `${prefix}.publish/state.json`
}

/** Key of the list of names retired by the publish of `serial`. */
export function retiredKey(prefix: string, serial: number): string {
  return `${prefix}.publish/retired-${serial}.txt.gz`
}

/** The bucket's publish state; an empty one when there is none (or it cannot be read). */
export async function readPublishState(ctx: PublishContext): Promise<PublishState> {
  const bytes = await getObjectBytes(ctx, stateKey(ctx.options.prefix))
  const empty: PublishState = { format: 1, inProgress: null, published: null, retired: [] }
  if (!bytes) return empty
  try {
    return publishStateSchema.parse(JSON.parse(bytes.toString('utf8')))
  } catch {
    ctx.options.log('The publish state in the bucket is unreadable; starting from an empty one (a resumed run HEADs before writing)')
    return { ...empty, inProgress: { serial: 1, startedAt: new Date(0).toISOString() } }
  }
}

/** Writes the publish state (never cached: only the publisher reads it). */
export async function writePublishState(ctx: PublishContext, state: PublishState): Promise<void> {
  const body = Buffer.from(JSON.stringify(publishStateSchema.parse(state), null, 2) + '\n')
  await uploadBytes(ctx, stateKey(ctx.options.prefix), body, { contentType: 'application/json', cacheControl: 'no-store', contentDisposition: null })
}
