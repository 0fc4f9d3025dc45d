/**
 * Renders user records. Users 0..developerCount-1 own and join projects; the rest only browse.
 */
import type { SourceUser } from '../schema/source.ts'
import { getUserId, getUserJoinedMs, renderDate, type GenerateContext } from './context.ts'
import { renderUserName } from './names.ts'
import { createRandom } from './random.ts'
import { locations } from './words.ts'

/** Renders the record of user `index`. */
export function renderUserRecord(ctx: GenerateContext, index: number): SourceUser {
  const rng = createRandom(`${ctx.seed}\u0000user\u0000${index}`)
  const id = getUserId(ctx, index)
  const { username, name } = renderUserName(ctx.userNames, index)
  const isDeveloper = index < ctx.developerCount
  const links: SourceUser['links'] = {}
  if (isDeveloper && rng.chance(0.3)) links.website = `https://${username.replace(/[^a-z0-9]/g, '')}.example.org/`
  if (isDeveloper && rng.chance(0.6)) links.github = `https://github.com/${username}`
  if (rng.chance(0.15)) links.discord = `https://discord.gg/${id.slice(0, 7)}`
  if (rng.chance(0.1)) links.twitter = `https://twitter.com/${username.replace(/-/g, '_')}`
  if (rng.chance(0.1)) links.youtube = `https://www.youtube.com/@${username}`
  const bio = rng.chance(0.5)
    ? rng.pick([
        'Making things with blocks since beta.',
        'I write mods in my spare time. Bug reports welcome!',
        'Map maker, redstone tinkerer and occasional streamer.',
        'Pixel artist. Commissions open.',
        'Just here to play.',
      ])
    : ''
  const roll = rng.next()
  return {
    id,
    username,
    name,
    bio,
    avatarUrl: rng.chance(0.7) ? `https://cdn.example.com/avatars/${id}.png` : null,
    links,
    role: roll < 0.0002 ? 'admin' : roll < 0.0012 ? 'moderator' : 'user',
    developer: isDeveloper ? { verified: index < ctx.developerCount * 0.02 || rng.chance(0.03) } : null,
    location: rng.chance(0.3) ? rng.pick(locations) : null,
    joinedAt: renderDate(getUserJoinedMs(ctx, index)),
  }
}
