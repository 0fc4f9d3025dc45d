/**
 * Who the client is, for rate limiting and download dedup. The socket peer, unless the peer is a
 * configured trusted proxy: then X-Forwarded-For is read from the right, skipping trusted hops, and
 * the first untrusted address is the client. Security: the leftmost X-Forwarded-For entry is
 * whatever the client wrote, so it is never trusted (h3's getRequestIP xForwardedFor reads it).
 */
import type { IncomingMessage } from 'node:http'
import { BlockList, isIP, type Socket } from 'node:net'

/** A matcher of trusted proxy addresses. */
export interface TrustedProxies {
  has(ip: string): boolean
  /** How many CIDRs were configured (0: X-Forwarded-For is never read). */
  readonly size: number
}

/** Parses CIDRs (`10.0.0.0/8`, `::1/128`, or single addresses); throws naming a bad entry. */
export function createTrustedProxies(cidrs: readonly string[]): TrustedProxies {
  const list = new BlockList()
  for (const entry of cidrs) {
    const [address, bits] = entry.split('/')
    const family = isIP(address ?? '')
    if (family === 0) throw new Error(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an IP address or CIDR`)
    const type = family === 4 ? 'ipv4' : 'ipv6'
    const prefix = bits === undefined ? (family === 4 ? 32 : 128) : Number(bits)
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new Error(`TRUSTED_PROXIES: ${JSON.stringify(entry)} has an invalid prefix length`)
    }
    list.addSubnet(address!, prefix, type)
  }
  return {
    has(ip) {
      const family = isIP(ip)
      return family !== 0 && list.check(ip, family === 4 ? 'ipv4' : 'ipv6')
    },
    size: cidrs.length,
  }
}

/**
 * Without trusted proxies the client is the socket peer (X-Forwarded-For is never read), so its key
 * is computed once per keep-alive connection instead of per request (an address check per request
 * cost about 5% of a static read in the profile).
 */
const socketKeys = new WeakMap<Socket, string>()

/** The rate-limit key of a request's client (see clientKey). */
export function readClientKey(req: IncomingMessage, trusted: TrustedProxies): string {
  if (trusted.size > 0) return clientKey(resolveClientIp(req.socket.remoteAddress, req.headers['x-forwarded-for'], trusted))
  let key = socketKeys.get(req.socket)
  if (key === undefined) {
    key = clientKey(unmapAddress(req.socket.remoteAddress ?? ''))
    socketKeys.set(req.socket, key)
  }
  return key
}

/** `::ffff:203.0.113.5` → `203.0.113.5`; other addresses unchanged (lowercased). */
export function unmapAddress(ip: string): string {
  const lower = ip.toLowerCase()
  const m = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower)
  return m ? m[1]! : lower
}

/** Resolves the client address from the socket peer and X-Forwarded-For. */
export function resolveClientIp(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  let client = unmapAddress(peer ?? '')
  if (!trusted.has(client) || forwardedFor === undefined) return client
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',').map((h) => h.trim())
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = unmapAddress(hops[i]!)
    if (isIP(hop) === 0) break
    client = hop
    if (!trusted.has(hop)) break
  }
  return client
}

/** Expands an IPv6 address to its 8 groups. */
function expandIpv6(ip: string): string[] {
  const [head, tail] = ip.split('::') as [string, string | undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const middle = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0')
  return [...left, ...middle, ...right].map((g) => g.padStart(4, '0'))
}

/**
 * The key a client is counted under: an IPv4 address as is; an IPv6 address by its /64, since one
 * subscriber usually holds a whole /64 and could otherwise rotate addresses to escape the limit.
 */
export function clientKey(ip: string): string {
  if (isIP(ip) !== 6) return ip
  const withoutZone = ip.split('%')[0]!
  return `${expandIpv6(withoutZone).slice(0, 4).join(':')}::/64`
}
