/**
 * Entry of the snapshot worker, a child process started by seal-child.ts (through vite-node, as
 * the build itself runs): writes the release's offline snapshot with writeSnapshot, so copying the
 * catalog, inserting 1.4 million bodies and 5 million names and checking the file happen beside the
 * build's own thread, which writes the manifest. Sends its peak RSS and CPU time when done; a
 * failure goes to stderr and a non-zero exit.
 */
import { z } from 'zod'
import { runAsSealWorker } from './seal-child.ts'
import { writeSnapshot } from './snapshot.ts'

const arg = z.string().min(1)
// releaseDir, orderFile, pathOrderFile, target, catalogSha256, then the body pack and its sorted index, or neither (read the tree).
const argsSchema = z.union([z.tuple([arg, arg, arg, arg, arg]), z.tuple([arg, arg, arg, arg, arg, arg, arg])])

const [releaseDir, orderFile, pathOrderFile, target, catalogSha256, pack, sortedIndex] = argsSchema.parse(process.argv.slice(2).filter((a) => a !== '--'))
await runAsSealWorker(
  'snapshot worker',
  () => writeSnapshot(releaseDir, orderFile, pathOrderFile, target, catalogSha256, pack && sortedIndex ? { pack, sortedIndex } : null)
)
