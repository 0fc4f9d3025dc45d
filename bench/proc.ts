/** Reads CPU time and memory of benchmarked processes from /proc (Linux). */
import { readFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'

const ticksPerSecond = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
})()

/** User + system CPU seconds used so far by the given processes (0 for a process that is gone). */
export function readCpuSeconds(pids: readonly number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // The process exited: nothing more to count.
    }
  }
  return ticks / ticksPerSecond
}

/**
 * Resident and peak resident memory of a process in MB (VmRSS, VmHWM), and VmRSS's private part
 * (RssAnon) and file pages mapped (RssFile: the binary, and a memory-mapped catalog), or null when
 * it is gone.
 */
export function readMemoryMb(pid: number): { rssMb: number; peakMb: number; anonMb: number; fileMb: number } | null {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return null
  }
  const kb = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024, anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024 }
}

/** Child process ids of a process (nginx master → its worker). */
export function listChildPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/**
 * Resident memory of a process and all its descendants, summed (MB): a build with worker
 * processes holds all of it at once. Sampled, so a peak between two samples can be missed.
 */
export function readTreeRssMb(pid: number): number | null {
  const own = readMemoryMb(pid)
  // An exited, not yet reaped process has no VmRSS line (NaN).
  if (!own || !Number.isFinite(own.rssMb)) return null
  let total = own.rssMb
  for (const child of listChildPids(pid)) total += readTreeRssMb(child) ?? 0
  return total
}
