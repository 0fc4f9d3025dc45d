/** CPU time for progress lines: on a shared machine a steadier figure than wall time. */

/** ` (CPU 12.3s)`: user + system seconds of the whole process (SQLite's and libuv's threads too) since `since`. */
export function formatCpu(since: NodeJS.CpuUsage): string {
  const used = process.cpuUsage(since)
  return ` (CPU ${((used.user + used.system) / 1e6).toFixed(1)}s)`
}
