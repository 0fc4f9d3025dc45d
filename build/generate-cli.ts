/**
 * Entry point of `npm run generate -- --projects N --seed S --out DIR`: writes a deterministic
 * synthetic source catalog. The only generator file that reads argv.
 */
import { parseArgs } from 'node:util'
import { formatGenerateSummary, generateCatalog, generateDefaults, resolveGenerateOptions } from './generate.ts'
import { mutateCatalog } from './generate/mutate.ts'

const usage = `Usage: npm run generate -- --out DIR [options]

  --out DIR            output folder (created; must be empty unless --force)
  --projects N         number of projects (default ${generateDefaults.projects}); users = ceil(N/2)
  --seed S             seed; the same N and S write byte-identical files (default "${generateDefaults.seed}")
  --reference DIR      source catalog to copy catalog.json and reference/ from (default: the repository's data/)
  --force              replace catalog.json, reference/, users/ and projects/ in a non-empty DIR
  --concurrency N      file writes in flight (default ${generateDefaults.concurrency} = synchronous writeFileSync, measured fastest)
  --dry-run            generate and count without writing
  --quiet              no progress lines
  --mutate PCT         instead of generating, edit PCT % of the projects of the catalog in DIR in place
                       (chosen by --seed; for incremental rebuild measurements, see README "Performance")
`

/** Parses argv, generates the catalog and prints the summary; exits non-zero on error. */
async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      out: { type: 'string' },
      projects: { type: 'string' },
      seed: { type: 'string' },
      reference: { type: 'string' },
      force: { type: 'boolean', default: false },
      concurrency: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      mutate: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(usage)
    return
  }
  if (!values.out) throw new Error('--out DIR is required\n\n' + usage)
  if (values.mutate !== undefined) {
    const s = mutateCatalog({ dir: values.out, percent: Number(values.mutate), seed: values.seed ?? generateDefaults.seed })
    process.stdout.write(`Mutated ${s.editedProjects} of ${s.projects} projects (${s.editedVersions} versions) in ${values.out}\n`)
    return
  }
  const toInt = (value: string | undefined, fallback: number): number => (value === undefined ? fallback : Number(value))
  const options = resolveGenerateOptions({
    out: values.out,
    projects: toInt(values.projects, generateDefaults.projects),
    seed: values.seed ?? generateDefaults.seed,
    reference: values.reference ?? generateDefaults.reference,
    force: values.force,
    concurrency: toInt(values.concurrency, generateDefaults.concurrency),
    dryRun: values['dry-run'],
    onProgress: values.quiet ? undefined : (line) => process.stderr.write(line + '\n'),
  })
  const summary = await generateCatalog(options)
  process.stdout.write(formatGenerateSummary(summary) + '\n')
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`generate: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
