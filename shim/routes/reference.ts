/** Routes of reference (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The reference routes. */
export const referenceRoutes: Route[] = []
