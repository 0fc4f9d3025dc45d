/**
 * Entry of the archive worker, a child process started by seal-child.ts (through vite-node, as
 * the build itself runs): writes the release's tar.gz with writeArchive, so reading 1.4 million
 * bodies and framing 5 million tar entries happen on the second core while the build's own thread
 * writes the manifest. Sends its peak RSS and CPU time when done; a failure goes to stderr and a
 * non-zero exit.
 */
import { z } from 'zod'
import { writeArchive } from './archive.ts'
import { runAsSealWorker } from './seal-child.ts'

const arg = z.string().min(1)
// releaseDir, orderFile, target, then the body pack and its sorted index, or neither (read the tree).
const argsSchema = z.union([z.tuple([arg, arg, arg]), z.tuple([arg, arg, arg, arg, arg])])

const [releaseDir, orderFile, target, pack, sortedIndex] = argsSchema.parse(process.argv.slice(2).filter((a) => a !== '--'))
await runAsSealWorker('archive worker', () => writeArchive(releaseDir, orderFile, target, pack && sortedIndex ? { pack, sortedIndex } : null))
