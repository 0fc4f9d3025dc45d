/**
 * The dynamic routes under /api/v1, matched on the decoded path segments (the same ones the static
 * lookup used). One file per endpoint in this folder; this file only lists them.
 */
import type { H3Event } from 'h3'
import type { ShimContext } from '../context.ts'
import { downloadsRoutes } from './downloads.ts'
import { projectsRoutes } from './projects.ts'
import { referenceRoutes } from './reference.ts'
import { usersRoutes } from './users.ts'
import { versionFilesRoutes } from './version-files.ts'
import { versionsRoutes } from './versions.ts'

/** What a route handler receives. */
export interface RouteInput {
  ctx: ShimContext
  event: H3Event
  params: Record<string, string>
  /** Raw query string, without `?`. */
  search: string
}

/** A dynamic route: a pattern of literal and `:param` segments. */
export interface Route {
  pattern: readonly string[]
  handler: (input: RouteInput) => Promise<void>
}

/** First match wins: literal routes of a file come before its `:param` routes; reference last. */
const routes: Route[] = [
  ...projectsRoutes,
  ...versionsRoutes,
  ...versionFilesRoutes,
  ...downloadsRoutes,
  ...usersRoutes,
  ...referenceRoutes,
]

/** Finds the route of an API path (segments after /api/v1). */
export function matchRoute(segments: readonly string[]): { handler: Route['handler']; params: Record<string, string> } | null {
  outer: for (const route of routes) {
    if (route.pattern.length !== segments.length) continue
    const params: Record<string, string> = Object.create(null) as Record<string, string>
    for (const [i, part] of route.pattern.entries()) {
      const segment = segments[i]!
      if (part.startsWith(':')) params[part.slice(1)] = segment
      else if (part !== segment) continue outer
    }
    return { handler: route.handler, params }
  }
  return null
}
