/**
 * CPU profiles of the build and of every worker process it starts (load, write, search, snapshot,
 * archive), which `--cpu-prof` cannot reach: Node refuses it in NODE_OPTIONS, and the workers are
 * started without the build's flags (build/worker-process.ts). Preloaded through NODE_OPTIONS, which
 * every child inherits, it starts V8's profiler in each process that runs a TypeScript entry and
 * writes `<entry>-<pid>.cpuprofile` into PROFILE_DIR (default `bench/.work/profiles`) when the
 * process exits (a process killed by a signal writes none):
 *
 *   NODE_OPTIONS="--require ./bench/profile-all.cjs" PROFILE_DIR=/tmp/prof npm run build
 *
 * Open the files in Chrome's DevTools (Performance) or VS Code. Sampling every PROFILE_INTERVAL_US
 * microseconds (default 1000). It lives outside build/, so it does not change the key under which a
 * rebuild reuses the live release's versions' JSON (build/catalog-memo.ts).
 */
'use strict'
const path = require('node:path')

const entry = process.argv.slice(1).find((a) => /\.(ts|mts)$/.test(a))
if (entry) {
  const inspector = require('node:inspector')
  const fs = require('node:fs')
  const dir = path.resolve(process.env.PROFILE_DIR || path.join(__dirname, '.work', 'profiles'))
  const session = new inspector.Session()
  session.connect()
  session.post('Profiler.enable')
  session.post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US) || 1000 })
  session.post('Profiler.start')
  process.on('exit', () => {
    // An in-process session answers synchronously, so the profile is written before the process ends.
    session.post('Profiler.stop', (err, result) => {
      if (err) return process.stderr.write(`profile-all: ${err.message}\n`)
      fs.mkdirSync(dir, { recursive: true })
      fs.writeFileSync(path.join(dir, `${path.basename(entry).replace(/\.m?ts$/, '')}-${process.pid}.cpuprofile`), JSON.stringify(result.profile))
    })
  })
}
