/** Builds the bundled sample catalog once for the whole run; tests read it through `inject('distDir')`. */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type {} from 'vitest'
import type { TestProject } from 'vitest/node'
import { resolveBuildOptions } from '../build/config.ts'
import { runBuild } from '../build/index.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    distDir: string
  }
}

let dir = ''

export async function setup(project: TestProject): Promise<void> {
  dir = mkdtempSync(path.join(os.tmpdir(), 'catalog-test-'))
  const distDir = path.join(dir, 'dist')
  const result = await runBuild(resolveBuildOptions({ dataDir: 'data', distDir, countersFile: null, log: () => {} }))
  if (!result.ok) {
    throw new Error(`the sample catalog does not build:\n${result.problems.map((p) => `${p.file}: ${p.path}: ${p.message}`).join('\n')}`)
  }
  project.provide('distDir', distDir)
}

export function teardown(): void {
  if (dir) rmSync(dir, { recursive: true, force: true })
}
