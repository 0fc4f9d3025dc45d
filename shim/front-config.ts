/**
 * The nginx front server's configuration (`npm run front-config`): nginx serves the live release's
 * files for the requests the shim would answer from a file anyway, with the shim's headers, and
 * proxies everything else to the shim. Pure: options in, configuration text out.
 *
 * Routing is decided on the raw request target (SEGMENT below): a GET/HEAD with no query whose
 * segments decode, in nginx as in the shim, to plain names (no segment starting with a dot, none
 * empty, no encoded `/` or `\`) maps to exactly the file the shim would read, so nginx never
 * serves a file the shim would not (encoded slashes, `..`, `//` all go to the shim).
 * If-Match and If-Unmodified-Since go to the shim too: nginx would answer them with 412s the shim
 * never sends. A miss falls through to the shim, which answers 404 in the envelope.
 *
 * ETags agree because every stored body's mtime is its content mtime (build/render/etag.ts) and
 * nginx's ETag is "<hex mtime>-<hex size>"; nginx's If-None-Match handling is the contract's (a
 * list, `*`, weak comparison). Last-Modified is removed and If-Modified-Since ignored (the shim
 * sends neither), ranges are off (the shim always answers the whole body).
 */
import { z } from 'zod'
import { renderServerBlock } from './front-server-block.ts'

/** A value written into the configuration unquoted: no spaces, quotes, braces, `;`, `$` or `#`. */
const confWord = z.string().min(1).regex(/^[^\s"'{};$#\\]+$/, 'may not contain spaces, quotes, braces, ;, $, # or \\')

/** Options of the generated configuration. */
export const frontConfigOptionsSchema = z.object({
  /** Absolute folder holding `current` (the shim's DIST_DIR). */
  distDir: confWord.regex(/^\//, 'must be an absolute path'),
  /** The shim's address, `host:port` (what nginx proxies to). */
  shim: confWord.regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'must be host:port'),
  /** Where nginx listens, `host:port`. */
  listen: confWord.regex(/^[A-Za-z0-9.[\]:-]+:\d{1,5}$/, 'must be host:port'),
  /** The shim's RATE_LIMIT, announced in X-Ratelimit-Limit. */
  rateLimit: z.number().int().positive(),
  /** The shim's Cache-Control settings (CACHE_SCOPE, MAX_AGE, STALE_WHILE_REVALIDATE). */
  cacheScope: z.enum(['private', 'public']),
  maxAge: z.number().int().nonnegative(),
  staleWhileRevalidate: z.number().int().nonnegative(),
  /**
   * Requests per minute per client address that nginx itself allows on static reads (limit_req: a
   * burst of that many, then the same average rate; 429 in the envelope past it); 0 = not limited.
   */
  staticRateLimit: z.number().int().nonnegative().default(0),
  /** Seconds nginx may keep using an open file after `current` moved (open_file_cache_valid). */
  openFileCacheValid: z.number().int().positive().default(2),
  /**
   * null: an http-context include (maps, upstream, server), for /etc/nginx/conf.d/. A folder: a
   * complete nginx.conf (daemon off, pid, logs and temp paths under that folder), as the tests run it.
   */
  completePrefix: confWord.regex(/^\//, 'must be an absolute path').nullable().default(null),
  /** `user` of a complete configuration's workers (as root, nginx runs them as nobody, who may not read the release). */
  user: confWord.nullable().default(null),
  /** worker_processes of a complete configuration. */
  workers: z.union([z.number().int().positive(), z.literal('auto')]).default('auto'),
})
export type FrontConfigOptions = z.input<typeof frontConfigOptionsSchema>

/**
 * A path segment nginx may map to a file itself: characters that need no decoding (unreserved and
 * the sub-delims a client may leave raw, such as `+` in version numbers) and escapes of bytes other
 * than `/`, `\`, DEL and controls, not starting with a dot (so never `.` or `..`, encoded or not).
 * nginx decodes such a segment exactly as the shim's decodeURIComponent does, into one segment that
 * passes the shim's isSafePath, so it opens the file the shim would open. Anything else (encoded
 * slashes, dot segments, `//`, NUL, malformed escapes) goes to the shim.
 */
const SEGMENT = `(?:[A-Za-z0-9_~!*'()+,;=:@-]|%(?!2[Ee]|2[Ff]|5[Cc]|7[Ff])[2-9A-Fa-f][0-9A-Fa-f])(?:[A-Za-z0-9._~!*'()+,;=:@-]|%(?!2[Ff]|5[Cc]|7[Ff])[2-9A-Fa-f][0-9A-Fa-f]){0,254}`

/**
 * Object names nginx serves itself: a SEGMENT in encodeURIComponent's alphabet (upper-case escapes,
 * no raw sub-delims), so that the raw name is the shim's Content-Disposition value for the links
 * the API gives out. Other spellings go to the shim.
 */
const OBJECT_NAME = `(?:[A-Za-z0-9_!~*'()-]|%(?!2E|2F|5C|7F)[2-9A-F][0-9A-F])(?:[A-Za-z0-9._!~*'()-]|%(?!2F|5C|7F)[2-9A-F][0-9A-F]){0,254}`

/** Renders the configuration (throws a zod error naming the bad option). */
export function renderFrontConfig(input: FrontConfigOptions): string {
  const o = frontConfigOptionsSchema.parse(input)
  const body = [...renderHttpLevel(o), ...renderServerBlock(o)].join('\n')
  return o.completePrefix === null ? `${HEADER}\n${body}\n` : renderComplete(o, o.completePrefix, body)
}

const HEADER = `# Generated by \`npm run front-config\` (README, "Running behind nginx or a CDN"). Do not edit: regenerate.`

/** Parsed options (defaults filled in). */
export type FrontConfig = z.output<typeof frontConfigOptionsSchema>

function renderHttpLevel(o: FrontConfig): string[] {
  const lines = [
    `upstream catalog_shim {`,
    `  server ${o.shim};`,
    `  keepalive 32;`,
    `  # Shorter than the shim's keep-alive (65 s): nginx closes an idle connection before the shim does.`,
    `  keepalive_timeout 60s;`,
    `}`,
    `# Static candidates, on the raw target (no query; segments that decode to plain names).`,
    `map $request_uri $catalog_static_kind {`,
    `  default "";`,
    `  "~^/api/v1(?:/${SEGMENT})+$" api;`,
    `  "~^/objects/[0-9a-f]{64}/(?<catalog_object_name>${OBJECT_NAME})$" object;`,
    `  "~^/mirror(?:/${SEGMENT})+$" mirror;`,
    `}`,
    `# nginx honours * in If-None-Match only alone; the shim anywhere in the list.`,
    `map $http_if_none_match $catalog_star_in_list {`,
    `  default "";`,
    `  "*" "";`,
    `  "~[*]" star;`,
    `}`,
    `# 0: nginx may serve it from the release; 1: the shim answers.`,
    `map "$request_method:$catalog_static_kind:$http_if_match$http_if_unmodified_since$catalog_star_in_list" $catalog_to_shim {`,
    `  default 1;`,
    `  "~^(?:GET|HEAD):(?:api|object|mirror):$" 0;`,
    `}`,
  ]
  if (o.staticRateLimit > 0) {
    lines.push(`limit_req_zone $binary_remote_addr zone=catalog_static:10m rate=${o.staticRateLimit}r/m;`)
  }
  return lines
}

function renderComplete(o: FrontConfig, prefix: string, body: string): string {
  const indented = body
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n')
  return `${HEADER}
daemon off;
${o.user ? `user ${o.user};\n` : ''}worker_processes ${o.workers};
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events {
  worker_connections 1024;
}
http {
  access_log off;
  keepalive_timeout 65s;
  keepalive_requests 10000;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
${indented}
}
`
}
