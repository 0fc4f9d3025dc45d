// Profiles every Node process it is preloaded into, as `--cpu-prof` would (which NODE_OPTIONS
// refuses): NODE_OPTIONS="--import $PWD/bench/results/rebuild-s50/prof-preload.mjs" PROF_DIR=DIR.
// Each process's main thread is sampled every 1 ms and written at exit to
// DIR/<pid>-<start ms>.cpuprofile, with its command line beside it in <pid>-<start ms>.argv.
// Used for the build's seal workers (BUILD-PROFILE.md, Session 50).
import { Session } from 'node:inspector'
import { writeFileSync } from 'node:fs'
import { isMainThread } from 'node:worker_threads'

const dir = process.env.PROF_DIR
if (dir && isMainThread) {
  const session = new Session()
  session.connect()
  session.post('Profiler.enable')
  session.post('Profiler.setSamplingInterval', { interval: 1000 })
  session.post('Profiler.start')
  const started = Date.now()
  // The inspector answers a session of the same thread synchronously, so the profile is written before the process ends.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (err) return
      writeFileSync(`${dir}/${process.pid}-${started}.cpuprofile`, JSON.stringify(result.profile))
      writeFileSync(`${dir}/${process.pid}-${started}.argv`, `${process.argv.join(' ')}\n`)
    })
  })
}
