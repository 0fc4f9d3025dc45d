/** Routes of downloads (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The downloads routes. */
export const downloadsRoutes: Route[] = []
