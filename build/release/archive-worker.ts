/**
 * Entry of the archive worker, a child process started by seal-child.ts (through vite-node, as
 * the build itself runs): writes the release's tar.gz with writeArchive, so reading 1.4 million
 * bodies and framing 5 million tar entries happen on the second core while the build's own thread
 * writes the manifest. Sends its peak RSS and CPU time when done; a failure goes to stderr and a
 * non-zero exit.
 */
import { z } from 'zod'
import { bodyPackFilesSchema } from './body-pack.ts'
import { writeArchive } from './archive.ts'
import { fileHashSchema } from './hash-file.ts'
import { runAsSealWorker } from './seal-child.ts'

const arg = z.string().min(1)
// What writeArchive takes beyond its three paths: the body pack (or null: read the tree) and the previous archive (or null).
const extraSchema = z.object({
  pack: bodyPackFilesSchema.nullable(),
  previous: z.object({ archive: arg, members: arg, expected: fileHashSchema }).nullable(),
})
const argsSchema = z.tuple([arg, arg, arg, z.string().transform((s) => extraSchema.parse(JSON.parse(s)))])

const [releaseDir, orderFile, target, { pack, previous }] = argsSchema.parse(process.argv.slice(2).filter((a) => a !== '--'))
await runAsSealWorker('archive worker', () => writeArchive(releaseDir, orderFile, target, pack, previous))
