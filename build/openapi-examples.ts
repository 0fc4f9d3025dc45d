/**
 * Example objects of the OpenAPI document, modelled on the sample catalog (Lithium by lumenwright).
 * Each is parsed by its resource schema when this module loads, so an example cannot drift from
 * the shape it illustrates: a schema change that breaks one fails the build.
 */
import {
  authorSchema,
  categorySchema,
  contentTypeSchema,
  dependencySchema,
  errorSchema,
  fileSchema,
  gameVersionSchema,
  pageMetaSchema,
  projectDetailSchema,
  projectSummarySchema,
  statisticsSchema,
  userProfileSchema,
  versionSchema,
  type ProjectSummary,
  type Version,
} from './schema/api.ts'

const author = authorSchema.parse({
  id: 'ObIipvG3',
  username: 'lumenwright',
  name: 'Elena Marsh',
  avatarUrl: 'https://cdn.example.org/avatars/lumenwright.png',
  verified: true,
})

const file = fileSchema.parse({
  id: 'IKe0lJGC',
  filename: 'lithium-fabric-mc1.20.4-0.12.1.jar',
  size: 795,
  sha256: '4023621081c79c4ec1ef26ed3a1bfeb186f2953fc36deb6868d2d03bbf2e2132',
  sha1: 'bafa20415e0a1f63a86b316ab00f05657c8a27ec',
  contentType: 'application/java-archive',
  primary: true,
  downloadUrl: 'https://api.example.org/api/v1/files/IKe0lJGC/download',
})

const dependencies = [
  dependencySchema.parse({
    type: 'required',
    project: { id: 'p1e5t4a0', slug: 'fabric-api', name: 'Fabric API', type: 'mod' },
    versionId: null,
    external: null,
  }),
  dependencySchema.parse({ type: 'embedded', project: null, versionId: null, external: { source: 'maven', id: 'org.joml:joml:1.10.5' } }),
]

const version: Version = versionSchema.parse({
  id: 'eeVny0lO',
  projectId: 'zFBsxX0L',
  versionNumber: 'mc1.20.4-0.12.1',
  name: 'Lithium mc1.20.4-0.12.1',
  channel: 'stable',
  status: 'published',
  gameVersions: ['1.20.4'],
  platforms: ['fabric'],
  downloads: 1203995,
  changelog: '## Changes\n- Updated to Minecraft 1.20.4\n\n## Fixes\n- Fixed an incorrect comparator output next to composters',
  createdAt: '2024-01-28T14:14:41.000Z',
  publishedAt: '2024-01-28T16:59:41.000Z',
  files: [file],
  dependencies,
})

const summary: ProjectSummary = projectSummarySchema.parse({
  id: 'zFBsxX0L',
  type: 'mod',
  slug: 'lithium',
  name: 'Lithium',
  summary: 'No-compromises game logic optimization mod. Well suited for clients and servers of all kinds',
  iconUrl: 'https://cdn.example.org/icons/lithium.png',
  url: '/mod/lithium',
  status: 'published',
  author,
  categories: ['optimization', 'server-side'],
  tags: ['performance', 'server', 'tick'],
  gameVersions: ['1.20.1', '1.20.4', '1.21.1'],
  platforms: ['fabric', 'neoforge'],
  license: 'LGPL-3.0-only',
  downloads: 7504617,
  favorites: 15800,
  followers: 14100,
  createdAt: '2022-09-08T06:22:05.000Z',
  updatedAt: '2025-08-06T15:14:05.000Z',
  publishedAt: '2022-09-15T11:17:05.000Z',
})

const detail = projectDetailSchema.parse({
  ...summary,
  description: 'Lithium is a general-purpose optimization mod that makes the game logic faster without changing how the game behaves.',
  bannerUrl: null,
  licenseUrl: 'https://www.gnu.org/licenses/lgpl-3.0.html',
  links: [
    { kind: 'source', url: 'https://github.com/lumenwright/lithium', label: null },
    { kind: 'wiki', url: 'https://github.com/lumenwright/lithium/wiki', label: 'Wiki' },
  ],
  screenshots: [{ id: 'shot-1', url: 'https://cdn.example.org/screens/lithium-1.png', caption: 'Tick times before and after' }],
  members: [{ role: 'owner', user: author }],
  currentVersion: version,
})

const profile = userProfileSchema.parse({
  ...author,
  bio: 'Graphics programmer by day, rendering optimization nerd by night. I maintain Sodium and Lithium.',
  links: { github: 'https://github.com/lumenwright', website: 'https://lumenwright.example.org' },
  role: 'user',
  developer: { verified: true },
  location: 'Portland, USA',
  joinedAt: '2020-01-20T20:35:38.000Z',
  stats: { projects: 3, downloads: 70216855, followers: 83100, favorites: 90500 },
})

const meta = pageMetaSchema.parse({ page: 1, limit: 20, total: 43, totalPages: 3 })

/** One example value per resource. */
export const resourceExamples = {
  author,
  file,
  version,
  summary,
  detail,
  profile,
  meta,
  statistics: statisticsSchema.parse({ projects: 43, versions: 237, files: 270, authors: 23, downloads: 219366556 }),
  category: categorySchema.parse({ slug: 'optimization', name: 'Optimization', projectType: 'mod', group: 'categories', icon: 'optimization' }),
  contentType: contentTypeSchema.parse({
    slug: 'mod',
    name: 'Mods',
    fileExtensions: ['.jar'],
    maxFileSize: 104857600,
    platformsLabel: 'Loaders',
    platforms: ['fabric', 'forge', 'neoforge', 'quilt'],
    enabled: true,
  }),
  gameVersion: gameVersionSchema.parse({ version: '1.21.8', type: 'release', releasedAt: '2025-07-17T10:00:00.000Z', major: false }),
}

/** Example error bodies by status. */
export const errorExamples = {
  404: errorSchema.parse({ error: { code: 'not_found', message: 'Project "no-such-project" was not found', requestId: '6f1c2a9e-3b7d-4c55-9a0e-2f8d1b7c4e10' } }),
  405: errorSchema.parse({
    error: { code: 'method_not_allowed', message: 'Method POST is not allowed: the API is read-only', requestId: '0b7e6c1d-52a4-4f0e-8d3c-9a1f2e4b6c7d' },
  }),
  422: errorSchema.parse({
    error: {
      code: 'validation_failed',
      message: 'Invalid parameter limit: must be at most 100',
      details: [{ path: 'limit', message: 'must be at most 100' }],
      requestId: 'c3d9a2f4-8e1b-4a6c-b5d7-1e2f3a4b5c6d',
    },
  }),
  429: errorSchema.parse({
    error: { code: 'rate_limited', message: 'Rate limit of 120 requests per 60 s exceeded; retry after 12 s', requestId: '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a' },
  }),
}
