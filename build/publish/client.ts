/**
 * The one module that talks to the bucket: the SDK client, small GET/HEAD helpers and the error
 * that names the bucket and key. Transient failures (network, 5xx, throttling) are retried by the
 * SDK's standard strategy (exponential backoff with jitter, `retries` attempts after the first);
 * what is left when it gives up is permanent, or transient for too long, and stops the publish.
 */
import { GetObjectCommand, HeadObjectCommand, S3Client, type HeadObjectCommandOutput } from '@aws-sdk/client-s3'
import type { PublishSettings } from './options.ts'

/** A publish that cannot go on; the message names the bucket, the key and what to fix. */
export class PublishError extends Error {}

/** Creates the S3 client of a publish. */
export function createS3Client(options: PublishSettings): S3Client {
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    maxAttempts: options.retries + 1,
    retryMode: 'standard',
    // SDK v3 ≥ 3.729 adds CRC32 checksums to every request by default; older S3-compatible servers
    // (s3rver, some MinIO/Ceph versions) reject or ignore them. Integrity is checked with Content-MD5
    // and the returned ETag instead (put.ts), which every S3-compatible store supports.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  })
}

/** What the bucket and the client of a publish are. */
export interface BucketRef {
  client: S3Client
  bucket: string
}

/** Hints for the errors retrying cannot fix. */
const HINTS: Record<string, string> = {
  NoSuchBucket: 'the bucket does not exist (check S3_BUCKET, S3_ENDPOINT and S3_REGION)',
  AccessDenied: 'the credentials may not do this (check the bucket policy and the key pair)',
  InvalidAccessKeyId: 'the access key is unknown to the store (check AWS_ACCESS_KEY_ID)',
  SignatureDoesNotMatch: 'the secret key is wrong (check AWS_SECRET_ACCESS_KEY)',
  PermanentRedirect: 'the bucket is in another region (check S3_REGION) or needs S3_FORCE_PATH_STYLE',
  AuthorizationHeaderMalformed: 'the region does not match the bucket (check S3_REGION)',
}

/** Wraps an SDK error into a PublishError naming the operation, bucket and key. */
export function describeS3Error(err: unknown, operation: string, bucket: string, key: string): PublishError {
  if (err instanceof PublishError) return err
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }
  const code = e.name ?? 'Error'
  const status = e.$metadata?.httpStatusCode
  const hint = HINTS[code] ?? (status === 403 ? HINTS.AccessDenied : null)
  const detail = e.message && e.message !== code && e.message !== 'UnknownError' ? `: ${e.message}` : ''
  return new PublishError(`${operation} s3://${bucket}/${key} failed: ${code}${status ? ` (HTTP ${status})` : ''}${detail}${hint ? ` — ${hint}` : ''}`)
}

/** Whether an SDK error says the key does not exist. */
export function isMissingKey(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
  return e.name === 'NoSuchKey' || (e.name === 'NotFound' && e.$metadata?.httpStatusCode === 404)
}

/** Reads an object whole, or null when the key does not exist (a missing bucket throws). */
export async function getObjectBytes(ref: BucketRef, key: string): Promise<Buffer | null> {
  try {
    const res = await ref.client.send(new GetObjectCommand({ Bucket: ref.bucket, Key: key }))
    return Buffer.from(await res.Body!.transformToByteArray())
  } catch (err) {
    if (isMissingKey(err)) return null
    throw describeS3Error(err, 'GET', ref.bucket, key)
  }
}

/** HEADs an object, or null when the key does not exist. */
export async function headObject(ref: BucketRef, key: string): Promise<HeadObjectCommandOutput | null> {
  try {
    return await ref.client.send(new HeadObjectCommand({ Bucket: ref.bucket, Key: key }))
  } catch (err) {
    if (isMissingKey(err)) return null
    throw describeS3Error(err, 'HEAD', ref.bucket, key)
  }
}
