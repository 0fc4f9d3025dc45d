/**
 * The server block of the nginx front configuration (shim/front-config.ts): the static locations,
 * which answer with the shim's headers (the same constants the shim sends), the proxy to the shim
 * for everything else, and the envelopes of the errors nginx answers itself.
 */
import { MIRROR_CONTENT_TYPES, OBJECT_CONTENT_TYPES } from '../build/static-paths.ts'
import { IMMUTABLE, mutableCacheControl } from './app.ts'
import type { FrontConfig } from './front-config.ts'
import { MUTABLE_MIRROR_NAMES } from './mirror-file.ts'
import { EXPOSED_HEADERS, JSON_TYPE } from './respond.ts'

/** Internal URIs of the error envelopes nginx answers itself. */
const ERRORS = '/__catalog-error'

/** Sends the request to the shim unless it is a static candidate (in a location: `return` inside `if` is safe there). */
const TO_SHIM = [`    if ($catalog_to_shim) {`, `      return 418;`, `    }`]

/** The server block: static locations with the shim's headers, the proxy to the shim, nginx's own error envelopes. */
export function renderServerBlock(o: FrontConfig): string[] {
  const root = `${o.distDir.replace(/\/+$/, '')}/current/public`
  const mutable = mutableCacheControl({ options: o })
  return [
    `server {`,
    `  listen ${o.listen};`,
    `  root ${root};`,
    `  server_tokens off;`,
    `  # The shim accepts request headers up to 16 KB (long If-None-Match lists); so does nginx.`,
    `  large_client_header_buffers 4 32k;`,
    `  # Files are opened through the \`current\` symlink; a cached descriptor is re-checked after`,
    `  # this many seconds, so a release swap shows within that time (the shim polls every 2 s).`,
    `  open_file_cache max=10000 inactive=30s;`,
    `  open_file_cache_valid ${o.openFileCacheValid}s;`,
    `  open_file_cache_errors off;`,
    `  sendfile on;`,
    `  tcp_nopush on;`,
    `  # Compression would make nginx's ETags weak (W/...): the shim sends identity bodies, so does nginx.`,
    `  gzip off;`,
    `  if_modified_since off;`,
    `  max_ranges 0;`,
    `  etag on;`,
    `  # Errors nginx answers itself get the envelope. A URI, not a named location: a malformed`,
    `  # request line has no URI to carry into a named location.`,
    `  error_page 400 ${ERRORS}/400;`,
    `  error_page 413 ${ERRORS}/413;`,
    `  error_page 414 494 ${ERRORS}/414;`,
    `  error_page 502 504 =503 ${ERRORS}/503;`,
    ...(o.staticRateLimit > 0 ? [`  error_page 429 ${ERRORS}/429;`] : []),
    `  error_page 418 = @shim;`,
    `  # A request sent to the shim by error_page 418 may still meet nginx's own errors (502 when the shim is down).`,
    `  recursive_error_pages on;`,
    `  # Only a request for an internal location itself is a 404 of nginx's: the shim answers it.`,
    `  error_page 404 = @shim;`,
    `  location /api/v1/ {`,
    ...TO_SHIM,
    `    try_files $uri.json @shim;`,
    ...renderStaticHeaders(o, { 'Cache-Control': mutable }, JSON_TYPE, {}),
    `  }`,
    `  location /objects/ {`,
    ...TO_SHIM,
    `    try_files $uri @shim;`,
    ...renderStaticHeaders(o, { 'Cache-Control': IMMUTABLE, 'Content-Disposition': `attachment; filename*=UTF-8''$catalog_object_name` }, 'application/octet-stream', OBJECT_CONTENT_TYPES),
    `  }`,
    ...MUTABLE_MIRROR_NAMES.flatMap((name) => [
      `  location = /mirror/${name} {`,
      ...TO_SHIM,
      `    try_files $uri @shim;`,
      ...renderStaticHeaders(o, { 'Cache-Control': mutable }, 'application/octet-stream', MIRROR_CONTENT_TYPES),
      `  }`,
    ]),
    `  location /mirror/ {`,
    ...TO_SHIM,
    `    try_files $uri @shim;`,
    ...renderStaticHeaders(o, { 'Cache-Control': IMMUTABLE }, 'application/octet-stream', MIRROR_CONTENT_TYPES),
    `  }`,
    `  location / {`,
    `    return 418;`,
    `  }`,
    `  location @shim {`,
    `    proxy_pass http://catalog_shim;`,
    `    proxy_http_version 1.1;`,
    `    proxy_set_header Connection "";`,
    `    proxy_set_header Host $http_host;`,
    `    # The shim trusts this hop (TRUSTED_PROXIES) and reads the client from the right of the list.`,
    `    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`,
    `    proxy_set_header X-Forwarded-Proto $scheme;`,
    `    proxy_redirect off;`,
    `    proxy_connect_timeout 5s;`,
    `    proxy_read_timeout 60s;`,
    `  }`,
    ...renderErrorLocation(o, `${ERRORS}/400`, 400, 'bad_request', 'The request is malformed', {}),
    ...renderErrorLocation(o, `${ERRORS}/413`, 413, 'payload_too_large', 'The request is too large', {}),
    ...renderErrorLocation(o, `${ERRORS}/414`, 414, 'uri_too_long', 'The request target or its headers are too long', {}),
    ...renderErrorLocation(o, `${ERRORS}/503`, 503, 'unavailable', 'The API is temporarily unavailable', { 'Retry-After': '5' }),
    ...(o.staticRateLimit > 0
      ? renderErrorLocation(o, `${ERRORS}/429`, 429, 'rate_limited', `Rate limit of ${o.staticRateLimit} requests per 60 s exceeded; retry after 1 s`, { 'Retry-After': '1' })
      : []),
    `}`,
  ]
}

/** Headers every answer carries (always: on 304s and errors too), as the shim's setCommonHeaders. */
function renderCommonHeaders(o: FrontConfig): string[] {
  return [
    `    add_header Access-Control-Allow-Origin "*" always;`,
    `    add_header Access-Control-Expose-Headers "${EXPOSED_HEADERS}" always;`,
    `    add_header X-Ratelimit-Limit "${o.rateLimit}" always;`,
    `    add_header X-Request-Id $request_id always;`,
  ]
}

function renderStaticHeaders(o: FrontConfig, headers: Record<string, string>, defaultType: string, types: Readonly<Record<string, string>>): string[] {
  const byType = new Map<string, string[]>()
  for (const [ext, type] of Object.entries(types)) byType.set(type, [...(byType.get(type) ?? []), ext.slice(1)])
  return [
    `    types {${[...byType].map(([type, exts]) => ` ${type} ${exts.join(' ')};`).join('')} }`,
    `    default_type "${defaultType}";`,
    // burst = N - 1 with nodelay: N reads at once, then one per 60/N seconds (a leaky bucket, not the shim's fixed window).
    ...(o.staticRateLimit > 0 ? [`    limit_req zone=catalog_static burst=${o.staticRateLimit - 1} nodelay;`, `    limit_req_status 429;`] : []),
    ...renderCommonHeaders(o),
    ...Object.entries(headers).map(([name, value]) => `    add_header ${name} "${value}" always;`),
    `    # The shim sends no Last-Modified (the mtime is the content mtime, not a date).`,
    `    add_header Last-Modified "";`,
  ]
}

/** An error nginx answers itself (before or instead of the shim), in the envelope with a request id. */
function renderErrorLocation(o: FrontConfig, name: string, status: number, code: string, message: string, headers: Record<string, string>): string[] {
  return [
    `  location = ${name} {`,
    `    internal;`,
    `    default_type "${JSON_TYPE}";`,
    ...renderCommonHeaders(o),
    `    add_header Cache-Control "no-store" always;`,
    ...Object.entries(headers).map(([n, v]) => `    add_header ${n} "${v}" always;`),
    `    return ${status} '{"error":{"code":"${code}","message":"${message}","requestId":"$request_id"}}';`,
    `  }`,
  ]
}
