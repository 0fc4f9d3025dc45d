/**
 * `npm run rollback -- [--dist DIR] [--to SERIAL]`: publishes a kept older release again as a new
 * serial (README, "Operations"). Default: the release the live one was built after.
 */
import { parseArgs } from 'node:util'
import { resolveBuildOptions } from './config.ts'
import { resolveOrExit } from './env.ts'
import { rereleaseRelease, RereleaseError } from './release/rerelease.ts'

const usage = 'usage: npm run rollback -- [--dist DIR] [--to SERIAL]\n'
let values: { dist?: string; to?: string }
try {
  ;({ values } = parseArgs({ options: { dist: { type: 'string' }, to: { type: 'string' } } }))
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n${usage}`)
  process.exit(2)
}
const to = values.to === undefined ? undefined : Number(values.to)
if (to !== undefined && (!Number.isInteger(to) || to < 1)) {
  process.stderr.write(`--to must be a release serial (a positive integer), got ${JSON.stringify(values.to)}\n${usage}`)
  process.exit(2)
}
// A roll-back loads no source: BUILD_CHANGED_FILES is not read (a stale list must not stop it).
const options = resolveOrExit(() => resolveBuildOptions({ distDir: values.dist, changedFiles: null }, process.env))
try {
  await rereleaseRelease(options, to)
} catch (err) {
  if (!(err instanceof RereleaseError)) throw err
  process.stderr.write(`Roll-back refused: ${err.message}; the live release is unchanged.\n`)
  process.exit(1)
}
