/** Routes of version-files (see SPEC.md §4). */
import type { Route } from './index.ts'

/** The version-files routes. */
export const versionFilesRoutes: Route[] = []
