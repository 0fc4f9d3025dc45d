/**
 * Pure renderers: normalised source rows → API resources (SPEC.md §2). Used by the build for every
 * pre-rendered file and stored JSON, and by the shim for what it assembles, so the same resource is
 * byte-identical whichever path served it. Field order follows the schemas in schema/api.ts.
 */
import type {
  ApiFile,
  Author,
  Dependency,
  ProjectDetail,
  ProjectSummary,
  Statistics,
  UserProfile,
  Version,
} from '../schema/api.ts'
import type { SourceDependency, SourceProject, SourceUser, SourceVersion } from '../schema/source.ts'

/** A version's file after normalisation (size and hashes known). */
export interface RenderFileInput {
  id: string
  filename: string
  primary: boolean
  contentType: string
  size: number
  sha256: string
  sha1: string | null
}

/** A version record after normalisation (its files carry size and hashes). */
export type NormalisedVersion = Omit<SourceVersion, 'files'> & { files: RenderFileInput[] }

/** What renderers need to know about the deployment. */
export interface RenderSettings {
  /** Public origin, e.g. https://api.example.org */
  baseUrl: string
}

/** Reference to a visible project, as embedded in dependencies. */
export interface ProjectRef {
  id: string
  slug: string
  name: string
  type: SourceProject['type']
}

/** Values of a project computed from its visible versions. */
export interface ProjectDerived {
  author: Author
  downloads: number
  gameVersions: string[]
  platforms: string[]
}

/** Renders the embedded user summary. */
export function renderAuthor(user: SourceUser): Author {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    avatarUrl: user.avatarUrl,
    verified: user.developer?.verified ?? false,
  }
}

/** Renders a project summary (search results, bulk reads, user project lists). */
export function renderProjectSummary(project: SourceProject, derived: ProjectDerived): ProjectSummary {
  return {
    id: project.id,
    type: project.type,
    slug: project.slug,
    name: project.name,
    summary: project.summary,
    iconUrl: project.iconUrl,
    url: `/${project.type}/${project.slug}`,
    status: project.status,
    author: derived.author,
    categories: project.categories,
    tags: project.tags,
    gameVersions: derived.gameVersions,
    platforms: derived.platforms,
    license: project.license,
    downloads: derived.downloads,
    favorites: project.favorites,
    followers: project.followers,
    createdAt: project.createdAt,
    updatedAt: project.updatedAt,
    publishedAt: project.publishedAt,
  }
}

/** Renders the full project page payload. */
export function renderProjectDetail(
  summary: ProjectSummary,
  project: SourceProject,
  members: { role: string; user: Author }[],
  currentVersion: Version | null,
): ProjectDetail {
  return {
    ...summary,
    description: project.description,
    bannerUrl: project.bannerUrl,
    licenseUrl: project.licenseUrl,
    links: project.links.map((l) => ({ kind: l.kind, url: l.url, label: l.label })),
    screenshots: project.screenshots.map((s) => ({ id: s.id, url: s.url, caption: s.caption })),
    members,
    currentVersion,
  }
}

/** The counting download endpoint of a file. */
export function renderDownloadUrl(settings: RenderSettings, fileId: string): string {
  return `${settings.baseUrl}/api/v1/files/${fileId}/download`
}

/** Renders a file of a version. */
export function renderFile(settings: RenderSettings, file: RenderFileInput): ApiFile {
  return {
    id: file.id,
    filename: file.filename,
    size: file.size,
    sha256: file.sha256,
    sha1: file.sha1,
    contentType: file.contentType,
    primary: file.primary,
    downloadUrl: renderDownloadUrl(settings, file.id),
  }
}

/** A dependency resolved against the visible catalog (null target = not visible). */
export interface ResolvedDependency {
  source: SourceDependency
  project: ProjectRef | null
  versionId: string | null
}

/** Renders a dependency; returns null when it names nothing visible (it is then left out). */
export function renderDependency(dep: ResolvedDependency): Dependency | null {
  if (dep.source.external) {
    return {
      type: dep.source.type,
      project: null,
      versionId: null,
      external: { source: dep.source.external.source, id: dep.source.external.id },
    }
  }
  if (!dep.project) return null
  return {
    type: dep.source.type,
    project: { id: dep.project.id, slug: dep.project.slug, name: dep.project.name, type: dep.project.type },
    versionId: dep.versionId,
    external: null,
  }
}

/** Renders a version with its files and visible dependencies. */
export function renderVersion(
  settings: RenderSettings,
  version: NormalisedVersion,
  downloads: number,
  dependencies: ResolvedDependency[],
): Version {
  const deps: Dependency[] = []
  for (const d of dependencies) {
    const rendered = renderDependency(d)
    if (rendered) deps.push(rendered)
  }
  return {
    id: version.id,
    projectId: version.projectId,
    versionNumber: version.versionNumber,
    name: version.name,
    channel: version.channel,
    status: version.status,
    gameVersions: version.gameVersions,
    platforms: version.platforms,
    downloads,
    changelog: version.changelog,
    createdAt: version.createdAt,
    publishedAt: version.publishedAt,
    files: version.files.map((f) => renderFile(settings, f)),
    dependencies: deps,
  }
}

/** Leaves the changelog out of a rendered version (includeChangelog=false), keeping field order. */
export function omitChangelog(version: Version): Version {
  const { changelog: _changelog, ...rest } = version
  return rest
}

/** Renders a public profile. */
export function renderUserProfile(user: SourceUser, stats: UserProfile['stats']): UserProfile {
  return {
    id: user.id,
    username: user.username,
    name: user.name,
    bio: user.bio,
    avatarUrl: user.avatarUrl,
    links: user.links,
    role: user.role,
    developer: user.developer ? { verified: user.developer.verified } : null,
    location: user.location,
    joinedAt: user.joinedAt,
    stats,
  }
}

/** Renders the platform totals. */
export function renderStatistics(totals: Statistics): Statistics {
  return {
    projects: totals.projects,
    versions: totals.versions,
    files: totals.files,
    authors: totals.authors,
    downloads: totals.downloads,
  }
}
