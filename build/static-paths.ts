/**
 * How URLs map to files of a release, shared by the build (which writes them) and the shim (which
 * serves them). A URL path P under /api/v1 is stored as `public/P.json`, so `projects/x` and
 * `projects/x/versions` can both exist (a path is never both a file and a folder). File objects are
 * stored as they are addressed: `public/objects/<sha256>/<filename>`.
 */

export const API_PREFIX = '/api/v1'
export const OBJECTS_PREFIX = '/objects'

/** Release-relative file of an API path such as `/projects/sodium` (without the /api/v1 prefix). */
export function apiFile(apiPath: string): string {
  return `public/api/v1${apiPath}.json`
}

/** Release-relative file of a content-addressed file object. */
export function objectFile(sha256: string, filename: string): string {
  return `public/objects/${sha256}/${filename}`
}

/** Path (under the site root) of a content-addressed file object, URL-encoded. */
export function objectUrlPath(sha256: string, filename: string): string {
  return `${OBJECTS_PREFIX}/${sha256}/${encodeURIComponent(filename)}`
}

/** Content types of file objects by extension; anything else is application/octet-stream. */
export const OBJECT_CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.jar': 'application/java-archive',
  '.zip': 'application/zip',
  '.mcworld': 'application/zip',
  '.png': 'image/png',
}

/** The Content-Type of a file object, from its name. */
export function contentTypeOf(filename: string): string {
  const dot = filename.lastIndexOf('.')
  return (dot === -1 ? undefined : OBJECT_CONTENT_TYPES[filename.slice(dot).toLowerCase()]) ?? 'application/octet-stream'
}

/** Content type of the pre-rendered API bodies (the shim sends the same). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** Content types of the mirror documents (build/release/formats.ts) by extension. */
export const MIRROR_CONTENT_TYPES: Readonly<Record<string, string>> = { '.json': 'application/json', '.gz': 'application/gzip', '.sqlite': 'application/vnd.sqlite3' }

/** The Content-Type of a mirror document, from its name. */
export function mirrorContentTypeOf(name: string): string {
  const dot = name.lastIndexOf('.')
  return (dot === -1 ? undefined : MIRROR_CONTENT_TYPES[name.slice(dot)]) ?? 'application/octet-stream'
}
