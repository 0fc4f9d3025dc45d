/** Routes of users (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The users routes. */
export const usersRoutes: Route[] = []
