/**
 * Writes one file of the release to its key, verified: the local bytes must hash as the release
 * says, the store must answer with the ETag of those bytes (MD5, or MD5 of the part MD5s for a
 * multipart upload), and Content-MD5 lets stores that check it refuse a corrupted body. In a
 * resumed run the key is HEADed first and an object with the same size, SHA-256 (user metadata)
 * and ETag is kept: an interrupted run wrote and verified it already.
 */
import { createHash } from 'node:crypto'
import { createReadStream, readFileSync, statSync } from 'node:fs'
import path from 'node:path'
import { PutObjectCommand } from '@aws-sdk/client-s3'
import { describeS3Error, headObject, PublishError } from './client.ts'
import { reportProgress, type PublishContext } from './context.ts'
import { resolveHeaders, resolveKey, type ObjectHeaders } from './layout.ts'
import { putMultipart } from './multipart.ts'

/** A file to publish. */
export interface UploadItem {
  /** Release-relative name (`public/...`). */
  name: string
  /** SHA-256 its bytes must have, or null when nothing states it (shards and change files). */
  sha256: string | null
}

/** What a file's bytes hash to, and its body when it is small enough to hold. */
interface LocalFile {
  size: number
  sha256: string
  /** ETags the store may answer for these bytes (without quotes). */
  etags: string[]
  md5: string | null
  body: Buffer | null
  /** MD5 (base64) of each part of a large file. */
  parts: string[]
}

/** Uploads a file unless a resumed run finds it already verified in place; counts either. */
export async function uploadFile(ctx: PublishContext, item: UploadItem): Promise<void> {
  const key = resolveKey(ctx.options.prefix, item.name)
  const file = await readLocalFile(path.join(ctx.release.dir, item.name), ctx.options.partSize)
  if (item.sha256 && file.sha256 !== item.sha256) {
    throw new PublishError(`${item.name} in ${ctx.release.dir} does not hash as the release says (${file.sha256}, expected ${item.sha256}); rebuild before publishing`)
  }
  if (ctx.resume && (await isInPlace(ctx, key, file))) {
    ctx.counts.resumed++
  } else {
    await writeObject(ctx, key, file, resolveHeaders(item.name, ctx.options), path.join(ctx.release.dir, item.name))
    ctx.counts.uploaded++
    ctx.counts.bytes += file.size
  }
  reportProgress(ctx)
}

/** Uploads bytes that are not a release file (publish state, retired lists). */
export async function uploadBytes(ctx: PublishContext, key: string, body: Buffer, headers: ObjectHeaders): Promise<void> {
  await writeObject(ctx, key, describeBody(body), headers, null)
}

/** PUTs (or uploads in parts) and checks the ETag; a mismatch is written again, twice at most. */
async function writeObject(ctx: PublishContext, key: string, file: LocalFile, headers: ObjectHeaders, source: string | null): Promise<void> {
  const common = {
    Bucket: ctx.bucket,
    Key: key,
    ContentType: headers.contentType,
    CacheControl: headers.cacheControl,
    ...(headers.contentDisposition ? { ContentDisposition: headers.contentDisposition } : {}),
    // A CDN or proxy maps x-amz-meta-x-ratelimit-limit to X-Ratelimit-Limit (README).
    Metadata: { 'x-ratelimit-limit': String(ctx.options.rateLimit), sha256: file.sha256 },
  }
  for (let attempt = 1; ; attempt++) {
    let etag: string | undefined
    if (file.body) {
      try {
        etag = (await ctx.client.send(new PutObjectCommand({ ...common, Body: file.body, ContentLength: file.size, ContentMD5: file.md5! }))).ETag
      } catch (err) {
        throw describeS3Error(err, 'PUT', ctx.bucket, key)
      }
    } else {
      etag = await putMultipart(ctx, common, source!, file.size, file.parts)
    }
    if (await isVerified(ctx, key, file, etag)) return
    if (attempt === 3) throw new PublishError(`PUT s3://${ctx.bucket}/${key}: the store keeps answering ETag ${etag ?? 'none'}, expected ${file.etags.join(' or ')}; not publishing a pointer to it`)
  }
}

/** The returned ETag is the MD5 the store computed; a store whose ETags are not MD5s is checked by HEAD (size and SHA-256 metadata). */
async function isVerified(ctx: PublishContext, key: string, file: LocalFile, etag: string | undefined): Promise<boolean> {
  const tag = etag?.replace(/"/g, '')
  if (tag && /^[0-9a-f]{32}(-\d+)?$/.test(tag)) return file.etags.includes(tag)
  const head = await headObject(ctx, key)
  return head !== null && head.ContentLength === file.size && head.Metadata?.sha256 === file.sha256
}

/** Whether the key already holds exactly these bytes (size, SHA-256 metadata and ETag agree). */
async function isInPlace(ctx: PublishContext, key: string, file: LocalFile): Promise<boolean> {
  const head = await headObject(ctx, key)
  if (!head || head.ContentLength !== file.size || head.Metadata?.sha256 !== file.sha256) return false
  const tag = head.ETag?.replace(/"/g, '')
  return !tag || !/^[0-9a-f]{32}(-\d+)?$/.test(tag) || file.etags.includes(tag)
}

/** A body sent in one PUT: its SHA-256, and its MD5 as Content-MD5 and as the ETag the store must answer. */
function describeBody(body: Buffer): LocalFile {
  const md5 = createHash('md5').update(body)
  return { size: body.length, sha256: createHash('sha256').update(body).digest('hex'), etags: [md5.copy().digest('hex')], md5: md5.digest('base64'), body, parts: [] }
}

/** Reads a small file whole; streams a large one to hash it and the MD5s of its parts. */
async function readLocalFile(file: string, partSize: number): Promise<LocalFile> {
  const size = statSync(file).size
  if (size <= partSize) {
    return describeBody(readFileSync(file))
  }
  const sha = createHash('sha256')
  const whole = createHash('md5')
  const parts: Buffer[] = []
  let part = createHash('md5')
  let inPart = 0
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    let bytes = chunk as Buffer
    sha.update(bytes)
    whole.update(bytes)
    while (bytes.length > 0) {
      const take = Math.min(bytes.length, partSize - inPart)
      part.update(bytes.subarray(0, take))
      inPart += take
      bytes = bytes.subarray(take)
      if (inPart === partSize) {
        parts.push(part.digest())
        part = createHash('md5')
        inPart = 0
      }
    }
  }
  if (inPart > 0) parts.push(part.digest())
  // S3 and MinIO give a multipart object the MD5 of the concatenated part MD5s, a dash and the
  // part count; some stores (s3rver) the MD5 of the whole object. Either proves the bytes.
  const etags = [`${createHash('md5').update(Buffer.concat(parts)).digest('hex')}-${parts.length}`, whole.digest('hex')]
  return { size, sha256: sha.digest('hex'), etags, md5: null, body: null, parts: parts.map((p) => p.toString('base64')) }
}
