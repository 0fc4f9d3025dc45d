/**
 * Renders a project's `project.json` record from its plan.
 */
import type { SourceProject } from '../schema/source.ts'
import { DAY_MS, END_MS, getUserId, renderDate, type GenerateContext } from './context.ts'
import { renderId } from './ids.ts'
import { renderUserName } from './names.ts'
import type { ProjectPlan } from './plan.ts'
import { pickSome, type Random } from './random.ts'
import { renderDescription, renderSummary, renderTags, type TextSubject } from './text.ts'
import { memberRoles } from './words.ts'

const CDN = 'https://cdn.example.com'
const LICENSES: Record<'code' | 'art', readonly (readonly [string | null, number])[]> = {
  code: [['MIT', 25], ['LGPL-3.0-only', 15], ['GPL-3.0-only', 10], ['Apache-2.0', 8], ['MPL-2.0', 8], ['LicenseRef-All-Rights-Reserved', 20], ['CC0-1.0', 4], [null, 10]],
  art: [['CC-BY-4.0', 25], ['CC-BY-NC-4.0', 20], ['CC-BY-SA-4.0', 10], ['CC0-1.0', 10], ['LicenseRef-All-Rights-Reserved', 20], [null, 15]],
}

/** Other team members: distinct developers, never the owner. */
function renderMembers(ctx: GenerateContext, rng: Random, plan: ProjectPlan): SourceProject['members'] {
  if (ctx.developerCount < 2 || !rng.chance(0.18)) return []
  const seen = new Set([plan.authorIndex])
  const members: SourceProject['members'] = []
  for (let n = rng.int(1, 3); n > 0; n--) {
    const user = rng.int(0, ctx.developerCount - 1)
    if (seen.has(user)) continue
    seen.add(user)
    members.push({ userId: getUserId(ctx, user), role: rng.pick(memberRoles) })
  }
  return members
}

/** Links to the project's source, issues, wiki, Discord, donations and homepage. */
function renderLinks(rng: Random, plan: ProjectPlan, owner: string): SourceProject['links'] {
  const repo = `https://github.com/${owner}/${plan.slug}`
  const links: SourceProject['links'] = []
  const hasSource = plan.type === 'mod' ? rng.chance(0.7) : rng.chance(0.15)
  if (hasSource) links.push({ kind: 'source', url: repo, label: null })
  if (hasSource && rng.chance(0.8)) links.push({ kind: 'issues', url: `${repo}/issues`, label: null })
  if (hasSource && rng.chance(0.2)) links.push({ kind: 'wiki', url: `${repo}/wiki`, label: null })
  if (rng.chance(0.35)) links.push({ kind: 'discord', url: `https://discord.gg/${plan.id.slice(0, 7)}`, label: 'Discord' })
  if (rng.chance(0.15)) links.push({ kind: 'donation', url: `https://ko-fi.com/${owner.replace(/[^a-z0-9]/g, '')}`, label: 'Ko-fi' })
  if (rng.chance(0.1)) links.push({ kind: 'homepage', url: `https://${plan.slug}.example.org/`, label: null })
  return links
}

/** Screenshots (more often for maps and skins), with ids from a global counter. */
function renderScreenshots(ctx: GenerateContext, rng: Random, plan: ProjectPlan): SourceProject['screenshots'] {
  const count = rng.chance(plan.type === 'mod' ? 0.3 : 0.7) ? rng.int(1, 5) : 0
  return Array.from({ length: count }, (_, k) => {
    const id = renderId(ctx.idKeys.screenshot, ctx.counters.screenshots++)
    return { id, url: `${CDN}/screenshots/${id}.png`, caption: k === 0 ? `${plan.name} in action` : '' }
  })
}

/** Renders the project.json record of a plan. */
export function renderProjectRecord(ctx: GenerateContext, plan: ProjectPlan): SourceProject {
  const rng = plan.rng
  const subject: TextSubject = { name: plan.name, type: plan.type, words: plan.words }
  const owner = renderUserName(ctx.userNames, plan.authorIndex).username
  const categories = pickSome(rng, ctx.reference.categories[plan.type], rng.int(1, 3))
  const license = rng.pickWeighted(LICENSES[plan.type === 'mod' ? 'code' : 'art'])
  const licenseUrl = license === null || license.startsWith('LicenseRef-') ? null : `https://spdx.org/licenses/${license}.html`
  let downloads = 0
  for (const d of plan.downloads) downloads += d
  const favorites = Math.floor(downloads * (0.002 + rng.next() * 0.018))
  const followers = Math.floor(favorites * (0.4 + rng.next() * 1.1))
  const last = plan.versionCount - 1
  const lastChange = Math.max(plan.created[last] as number, plan.published[last] as number)
  const updated = Math.min(END_MS, lastChange + Math.floor((rng.next() * 3 * DAY_MS) / 1000) * 1000)
  const everPublished = plan.status !== 'draft' && plan.status !== 'private'
  return {
    id: plan.id,
    slug: plan.slug,
    type: plan.type,
    name: plan.name,
    summary: renderSummary(rng, subject),
    description: renderDescription(rng, subject),
    status: plan.status,
    iconUrl: rng.chance(0.85) ? `${CDN}/icons/${plan.id}.png` : null,
    bannerUrl: rng.chance(0.2) ? `${CDN}/banners/${plan.id}.png` : null,
    authorId: getUserId(ctx, plan.authorIndex),
    members: renderMembers(ctx, rng, plan),
    categories,
    tags: renderTags(rng, subject),
    license,
    licenseUrl,
    links: renderLinks(rng, plan, owner),
    screenshots: renderScreenshots(ctx, rng, plan),
    favorites,
    followers,
    createdAt: renderDate(plan.projectCreatedMs),
    updatedAt: renderDate(updated),
    publishedAt: everPublished ? renderDate(plan.published[0] as number) : null,
  }
}
