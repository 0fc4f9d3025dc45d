/** `npm run build`: builds data/ into a new release of dist/ (options: README, "Configuration"). */
import { parseArgs } from 'node:util'
import { resolveBuildOptions } from './config.ts'
import { resolveOrExit } from './env.ts'
import { runBuild } from './index.ts'

const { values } = parseArgs({
  options: {
    data: { type: 'string' },
    dist: { type: 'string' },
    'base-url': { type: 'string' },
  },
})

const options = resolveOrExit(() => resolveBuildOptions({ dataDir: values.data, distDir: values.dist, baseUrl: values['base-url'] }, process.env))
const result = await runBuild(options)
if (!result.ok) {
  for (const p of result.problems) process.stderr.write(`${p.file}: ${p.path}: ${p.message}\n`)
  process.stderr.write(`Build failed: ${result.problems.length} problem(s); the live release is unchanged.\n`)
  process.exit(1)
}
