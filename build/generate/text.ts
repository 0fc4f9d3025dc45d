/**
 * Prose of generated records: summaries, Markdown descriptions (0.5–4 KB), changelogs and tags.
 */
import type { Random } from './random.ts'
import { pickSome } from './random.ts'
import type { ProjectType } from './reference.ts'
import { adjectives, changeObjects, changeVerbs, features } from './words.ts'

/** What the prose is about: the project's name and the words it was composed of. */
export type TextSubject = { name: string; type: ProjectType; words: readonly string[] }

const lower = (word: string): string => word.toLowerCase()

/** Renders a one-sentence summary (well under 300 characters). */
export function renderSummary(rng: Random, subject: TextSubject): string {
  const [adjective = 'new', topic = 'world'] = subject.words.map(lower)
  const [f1, f2, f3] = pickSome(rng, features, 3)
  if (subject.type === 'map') {
    return rng.pick([
      `A ${adjective} ${topic} map with hidden secrets, custom ${f1} and hours of exploration.`,
      `Survive the ${adjective} ${topic}: a handcrafted map for 1–4 players.`,
      `Find your way out of the ${topic} before night falls. Includes custom ${f1} and ${f2}.`,
    ])
  }
  if (subject.type === 'skin') {
    return rng.pick([
      `A ${adjective} ${topic} skin with shading on every layer.`,
      `${subject.name}: a hand-drawn ${topic} skin, in classic and slim variants.`,
      `Dress up as a ${adjective} ${topic}.`,
    ])
  }
  return rng.pick([
    `Adds ${rng.int(3, 120)} new ${f1} and ${f2} themed around ${topic}.`,
    `A lightweight mod that improves ${topic} and ${f1} without changing the vanilla feel.`,
    `${subject.name} brings ${f1}, ${f2} and ${f3} to your world.`,
    `Makes ${topic} ${adjective} again: configurable ${f1}, better ${f2} and fewer headaches.`,
  ])
}

/** Renders a sentence about the subject. */
function renderSentence(rng: Random, subject: TextSubject): string {
  const [adjective = 'new', topic = 'world'] = subject.words.map(lower)
  const [f1, f2] = pickSome(rng, features, 2)
  return rng.pick([
    `${subject.name} was made for players who want more ${f1} without losing the vanilla feel.`,
    `All ${f1} are crafted with ${lower(rng.pick(adjectives))} details and a few surprises.`,
    `All ${f1} can be configured in the config file or through the in-game menu.`,
    `The ${f2} work on dedicated servers and in single player alike.`,
    `It started as a small ${adjective} experiment and grew into something much bigger.`,
    `Expect ${rng.int(2, 40)} new ${f1}, ${rng.int(2, 25)} ${f2} and plenty of balance changes.`,
    `Compatible with most popular ${f2} packs; report conflicts on the issue tracker.`,
    `Performance matters: the ${topic} logic runs only when a player is nearby.`,
  ])
}

const renderParagraph = (rng: Random, subject: TextSubject): string =>
  Array.from({ length: rng.int(2, 5) }, () => renderSentence(rng, subject)).join(' ')

/** Renders a Markdown description of roughly 0.5–4 KB. */
export function renderDescription(rng: Random, subject: TextSubject): string {
  const target = 500 + Math.floor(Math.pow(rng.next(), 1.6) * 3300)
  const parts = [`# ${subject.name}`, renderParagraph(rng, subject)]
  let length = parts[0]!.length + parts[1]!.length
  const sections = ['Features', 'Installation', 'Compatibility', 'Configuration', 'FAQ', 'Credits', 'Support']
  let s = 0
  while (length < target) {
    const title = sections[s % sections.length] as string
    s++
    let body: string
    if (title === 'Features') {
      body = pickSome(rng, features, rng.int(3, 8))
        .map((f) => `- **${f[0]?.toUpperCase()}${f.slice(1)}**: ${renderSentence(rng, subject)}`)
        .join('\n')
    } else if (title === 'Installation') {
      body = '1. Install the loader for your game version.\n2. Drop the file into the folder.\n3. Start the game.'
    } else if (title === 'FAQ') {
      body = `**Can I use it in a modpack?** Yes.\n\n**Will you port it?** ${renderSentence(rng, subject)}`
    } else {
      body = renderParagraph(rng, subject)
    }
    const section = `## ${title}${s > sections.length ? ` (${Math.floor(s / sections.length)})` : ''}\n\n${body}`
    parts.push(section)
    length += section.length + 2
  }
  return parts.join('\n\n') + '\n'
}

/** Renders a short Markdown changelog. */
export function renderChangelog(rng: Random): string {
  const lines = Array.from({ length: rng.int(1, 6) }, () => `- ${rng.pick(changeVerbs)} ${rng.pick(changeObjects)}`)
  return lines.join('\n')
}

/** Picks 0–5 lowercase tags from the subject's words and features. */
export function renderTags(rng: Random, subject: TextSubject): string[] {
  const pool = [...new Set([...subject.words.map(lower), ...pickSome(rng, features, 4)])]
  return pickSome(rng, pool, rng.int(0, 5))
}
