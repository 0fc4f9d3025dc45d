import { defineConfig } from 'vitest/config'

/**
 * Endpoint tests that run a second time through real nginx in front of the shim (test/harness.ts,
 * CATALOG_TEST_FRONT=nginx): nginx plus shim must pass the same checks as the shim alone. The other
 * files test the shim's own internals or the build and run once (README, "Running behind nginx").
 */
const THROUGH_NGINX = [
  'test/foundation.test.ts',
  'test/projects.test.ts',
  'test/versions.test.ts',
  'test/version-files.test.ts',
  'test/users-reference.test.ts',
  'test/search.test.ts',
  'test/openapi.test.ts',
  'test/browser.test.ts',
  'test/downloads.test.ts',
]

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'shim', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'nginx', include: THROUGH_NGINX, env: { CATALOG_TEST_FRONT: 'nginx' } } },
    ],
  },
})
