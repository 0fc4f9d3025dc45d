/**
 * `npm run publish:s3 -- [--dist DIR] [--concurrency N] [--retain SECONDS]`: uploads the live
 * release to an S3-compatible bucket (README, "Publishing to S3-compatible storage"). The only
 * place that reads the S3_* variables; credentials come from the AWS SDK's default chain.
 */
import { parseArgs } from 'node:util'
import { PublishError } from './publish/client.ts'
import { runPublish } from './publish/index.ts'
import { resolvePublishOptions, type PublishOptions } from './publish/options.ts'

const { values } = parseArgs({
  options: {
    dist: { type: 'string' },
    concurrency: { type: 'string' },
    retain: { type: 'string' },
    'part-size-mb': { type: 'string' },
  },
})

const log = (line: string): void => void process.stderr.write(line + '\n')

function integer(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n < min) {
    log(`--${name} must be an integer ≥ ${min}`)
    process.exit(2)
  }
  return n
}

let options: PublishOptions
try {
  const partMb = integer('part-size-mb', values['part-size-mb'], 5)
  options = resolvePublishOptions(
    {
      ...(values.dist ? { distDir: values.dist } : {}),
      ...(values.concurrency ? { concurrency: integer('concurrency', values.concurrency, 1)! } : {}),
      ...(values.retain ? { retainSeconds: integer('retain', values.retain, 0)! } : {}),
      ...(partMb ? { partSize: partMb * 1024 * 1024 } : {}),
    },
    process.env,
    log,
  )
} catch (err) {
  log(`Publish not started: ${err instanceof Error ? err.message : String(err)}`)
  log('usage: S3_BUCKET=… [S3_ENDPOINT=…] [S3_PREFIX=…] npm run publish:s3 -- [--dist DIR] [--concurrency 16] [--retain 3600] [--part-size-mb 16]')
  process.exit(2)
}
try {
  await runPublish(options)
} catch (err) {
  const stage = err instanceof PublishError ? '' : ' (unexpected)'
  log(`Publish failed${stage}: ${err instanceof Error ? err.message : String(err)}`)
  log('The bucket keeps serving whole releases (the pointer moves last); fix the cause and run the same command again: it resumes.')
  process.exit(1)
}
