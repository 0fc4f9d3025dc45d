/**
 * Entry of the search worker, a child process started by startSearchIndex (search-index.ts, through
 * vite-node, as the build itself runs): builds the search index in the file it is given, whose input
 * the catalog connection copied there, so its statements and its JavaScript (documents, bitmaps,
 * typo keys) run beside the render instead of between its pages. Sends its peak RSS and CPU time
 * when done; a failure goes to stderr and a non-zero exit.
 */
import { z } from 'zod'
import { runAsSealWorker } from './release/seal-child.ts'
import { buildSearchFile } from './search-index.ts'

const [file] = z.tuple([z.string().min(1)]).parse(process.argv.slice(2).filter((a) => a !== '--'))
await runAsSealWorker('search worker', () => buildSearchFile(file))
