/**
 * Entry of the snapshot worker, a child process started by seal-child.ts (through vite-node, as
 * the build itself runs): writes the release's offline snapshot with writeSnapshot, so copying the
 * catalog, inserting (or copying from the previous snapshot) 1.4 million bodies and 5 million names
 * and checking the file happen beside the
 * build's own thread, which writes the manifest. Sends its peak RSS and CPU time when done; a
 * failure goes to stderr and a non-zero exit.
 */
import { z } from 'zod'
import { bodyPackFilesSchema } from './body-pack.ts'
import { fileHashSchema } from './hash-file.ts'
import { hashedAheadSchema, BY_MESSAGE, runAsSealWorker, waitForNameChanges, waitForPathOrder } from './seal-child.ts'
import { writeSnapshot } from './snapshot.ts'

const arg = z.string().min(1)
// writeSnapshot's sources (SnapshotSources): the body pack (or null: read the tree), the previous snapshot (or null) and the copy of the catalog made ahead (or null).
const extraSchema = z.object({
  pack: bodyPackFilesSchema.nullable(),
  previous: z.object({ snapshot: arg, expected: fileHashSchema, hashed: hashedAheadSchema.nullable().optional() }).nullable(),
  catalogCopy: arg.nullable(),
  // The names changed since the previous release (or null); `-`: sent by message once the manifest is written.
  nameChanges: arg.nullable().optional(),
})
const argsSchema = z.tuple([arg, arg, arg, arg, arg, z.string().transform((s) => extraSchema.parse(JSON.parse(s)))])

const [releaseDir, orderFile, pathOrderFile, target, catalogSha256, sources] = argsSchema.parse(process.argv.slice(2).filter((a) => a !== '--'))
// `-`: asked for by message when the bodies are in (the path order may be sorted only then, and only if the change list is not used).
const pathOrder = pathOrderFile === BY_MESSAGE ? waitForPathOrder : pathOrderFile
const nameChanges = sources.nameChanges === BY_MESSAGE ? waitForNameChanges : (sources.nameChanges ?? null)
await runAsSealWorker('snapshot worker', () => writeSnapshot(releaseDir, orderFile, pathOrder, target, catalogSha256, { ...sources, nameChanges }))
