/** Routes of projects (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The projects routes. */
export const projectsRoutes: Route[] = []
