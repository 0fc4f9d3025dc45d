/** The machine and software versions a result was measured with. */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from './servers.ts'

/** nproc, memory, CPU model and kernel. */
export function readMachine(): { nproc: number; memoryGb: number; cpuModel: string; kernel: string } {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8')
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown'
  return {
    nproc: Number(execFileSync('nproc', { encoding: 'utf8' }).trim()),
    memoryGb: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    cpuModel: model,
    kernel: os.release(),
  }
}

/** Versions of node, nginx, wrk and h3 (the shim's HTTP library). */
export function readVersions(): { node: string; nginx: string; wrk: string; h3: string } {
  const tool = (cmd: string, args: string[], re: RegExp): string => {
    try {
      const out = execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
      return re.exec(out)?.[1] ?? out.trim()
    } catch (err) {
      // wrk -v exits non-zero after printing its version; nginx -v prints on stderr.
      const e = err as { stdout?: string; stderr?: string }
      const out = `${e.stdout ?? ''}${e.stderr ?? ''}`
      return re.exec(out)?.[1] ?? 'unavailable'
    }
  }
  const pkg = (name: string): string => (JSON.parse(readFileSync(path.join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  return {
    node: process.version,
    nginx: tool('sh', ['-c', 'nginx -v 2>&1'], /nginx\/(\S+)/),
    wrk: tool('wrk', ['-v'], /wrk (\S+)/),
    h3: pkg('h3'),
  }
}
