/** Routes of versions (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The versions routes. */
export const versionsRoutes: Route[] = []
