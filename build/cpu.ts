/** CPU time and peak memory for progress lines: on a shared machine steadier figures than wall time. */
import { readFileSync } from 'node:fs'

/** ` (CPU 12.3s)`: user + system seconds of the whole process (SQLite's and libuv's threads too) since `since`. */
export function formatCpu(since: NodeJS.CpuUsage): string {
  const used = process.cpuUsage(since)
  return ` (CPU ${((used.user + used.system) / 1e6).toFixed(1)}s)`
}

/**
 * Peak resident memory of this process in bytes: VmHWM where Linux has it. A child started with
 * spawn reports in `resourceUsage().maxRSS` the resident size of the forked parent before exec
 * (Linux keeps the larger of the old and new images), so a worker forked from a 500 MB build
 * claimed 500 MB; VmHWM belongs to the image after exec.
 */
export function readPeakRssBytes(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))
    if (match) return Number(match[1]) * 1024
  } catch {
    // Not Linux: the portable figure, with the caveat above.
  }
  return process.resourceUsage().maxRSS * 1024
}
