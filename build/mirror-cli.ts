/** `npm run mirror -- --from <origin> --to <folder>`: syncs a local mirror (README, "Mirrors and snapshots"). */
import { parseArgs } from 'node:util'
import { MirrorRefused, runMirror } from './mirror/sync.ts'

const { values } = parseArgs({
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    keep: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '8' },
    retries: { type: 'string', default: '5' },
    snapshot: { type: 'boolean', default: false },
  },
})

function positive(name: string, value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer\n`)
    process.exit(2)
  }
  return n
}

if (!values.from || !values.to || !/^https?:\/\//.test(values.from)) {
  process.stderr.write('usage: npm run mirror -- --from <http(s) origin> --to <folder> [--keep 2] [--concurrency 8] [--retries 5] [--snapshot]\n')
  process.exit(2)
}
const log = (line: string): void => void process.stderr.write(line + '\n')
try {
  await runMirror({
    from: values.from,
    to: values.to,
    keep: positive('keep', values.keep),
    concurrency: Math.max(1, positive('concurrency', values.concurrency)),
    retries: positive('retries', values.retries),
    withSnapshot: values.snapshot,
    log,
  })
} catch (err) {
  log(err instanceof MirrorRefused ? `Refused: ${err.message}` : `Mirror failed: ${err instanceof Error ? err.message : String(err)}; the local copy is unchanged`)
  process.exit(1)
}
