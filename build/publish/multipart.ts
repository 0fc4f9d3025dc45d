/**
 * Multipart upload of a large file (the catalog and the snapshot are gigabytes at the large size,
 * beyond a single PUT's 5 GB): parts read from disk one at a time, each sent with its Content-MD5
 * and checked against its ETag, then completed. On failure the upload is aborted so the store does
 * not keep (and bill) its parts; a kill -9 cannot abort, so the README recommends a lifecycle rule
 * for incomplete multipart uploads.
 */
import { open } from 'node:fs/promises'
import { AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, UploadPartCommand, type PutObjectCommandInput } from '@aws-sdk/client-s3'
import { describeS3Error, PublishError } from './client.ts'
import type { PublishContext } from './context.ts'

/** Uploads `file` in parts of `partSize`; `partMd5s` (base64) come from the hashing pass. Returns the ETag. */
export async function putMultipart(ctx: PublishContext, common: Omit<PutObjectCommandInput, 'Body'>, file: string, size: number, partMd5s: string[]): Promise<string | undefined> {
  const key = common.Key!
  const partSize = ctx.options.partSize
  let uploadId: string | undefined
  try {
    uploadId = (await ctx.client.send(new CreateMultipartUploadCommand(common))).UploadId
  } catch (err) {
    throw describeS3Error(err, 'CreateMultipartUpload', ctx.bucket, key)
  }
  const fh = await open(file, 'r')
  try {
    const parts: { PartNumber: number; ETag: string }[] = []
    for (let i = 0; i < partMd5s.length; i++) {
      const length = Math.min(partSize, size - i * partSize)
      const body = Buffer.alloc(length)
      const { bytesRead } = await fh.read(body, 0, length, i * partSize)
      if (bytesRead !== length) throw new PublishError(`${file} changed while it was uploaded`)
      const md5 = partMd5s[i]!
      let etag: string | undefined
      try {
        etag = (await ctx.client.send(new UploadPartCommand({ Bucket: ctx.bucket, Key: key, UploadId: uploadId, PartNumber: i + 1, Body: body, ContentLength: length, ContentMD5: md5 }))).ETag
      } catch (err) {
        throw describeS3Error(err, `UploadPart ${i + 1}/${partMd5s.length}`, ctx.bucket, key)
      }
      const hex = Buffer.from(md5, 'base64').toString('hex')
      if (etag && /^"?[0-9a-f]{32}"?$/.test(etag) && etag.replace(/"/g, '') !== hex) {
        throw new PublishError(`UploadPart ${i + 1} of s3://${ctx.bucket}/${key}: ETag ${etag}, expected ${hex}`)
      }
      parts.push({ PartNumber: i + 1, ETag: etag ?? `"${hex}"` })
    }
    try {
      const done = await ctx.client.send(new CompleteMultipartUploadCommand({ Bucket: ctx.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }))
      return done.ETag
    } catch (err) {
      throw describeS3Error(err, 'CompleteMultipartUpload', ctx.bucket, key)
    }
  } catch (err) {
    await ctx.client.send(new AbortMultipartUploadCommand({ Bucket: ctx.bucket, Key: key, UploadId: uploadId })).catch(() => {})
    throw err
  } finally {
    await fh.close()
  }
}
