/**
 * Settings read from the environment by every entry point (the build's commands and the shim): allowed
 * values or a clear refusal naming the variable, in one wording (README, "Configuration").
 */

/** A setting from the environment that is not one of its allowed values. */
export class ConfigError extends Error {}

/**
 * An integer setting between min and max; `fallback` when unset or empty. Anything else is refused
 * with a message naming the variable: a typo must not silently build with the default.
 */
export function envInt(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  const n = Number(value)
  if (!/^\d+$/.test(value.trim()) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer from ${min} up` : `an integer from ${min} to ${max}`
    throw new ConfigError(`${name} must be ${range}, got ${JSON.stringify(value)}`)
  }
  return n
}

/**
 * A switch: `1` is on, `0` is off, unset or empty is `fallback` (on unless given); anything else is
 * refused (`false` would otherwise read as on).
 */
export function envSwitch(env: Record<string, string | undefined>, name: string, fallback = true): boolean {
  const value = env[name]
  if (value === undefined || value === '') return fallback
  if (value === '1') return true
  if (value === '0') return false
  throw new ConfigError(`${name} must be 0 or 1, got ${JSON.stringify(value)}`)
}

/**
 * A text setting (a path, a URL, a host): its value, or undefined when unset or empty, so the
 * caller's default applies as for every other setting (`DIST_DIR=` must not build into the current
 * folder, nor `BASE_URL=` write relative download URLs).
 */
export function envText(env: Record<string, string | undefined>, name: string): string | undefined {
  const value = env[name]
  return value === undefined || value === '' ? undefined : value
}

/** One of a list of words; the first is the default (unset or empty). */
export function envChoice<T extends string>(env: Record<string, string | undefined>, name: string, allowed: readonly [T, ...T[]]): T {
  const value = env[name]
  if (value === undefined || value === '') return allowed[0]
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`)
  return value as T
}

/** Runs a command's option resolution; a ConfigError is printed with the README's pointer and exits 2 before anything is done. */
export function resolveOrExit<T>(resolve: () => T): T {
  try {
    return resolve()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`${err.message} (README, "Configuration"); nothing was built or changed.\n`)
    process.exit(2)
  }
}
