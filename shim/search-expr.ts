/**
 * FTS5 MATCH expressions over search_all (build/search-index.ts), built only from search tokens
 * (letters and digits, so a quoted token cannot close its quotes), marker characters and hex facet
 * tokens: user text never becomes FTS5 syntax.
 */
import { MARK, renderFacetToken, renderWholeToken } from '../build/search-text.ts'
import type { ProjectsQuery } from './search.ts'
import type { SearchPlan } from './search-plan.ts'

type Group = 'name' | 'meta' | 'summary'

const quote = (token: string): string => `"${token}"`
const any = (parts: string[]): string => (parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`)
const every = (parts: string[]): string => (parts.length === 1 ? parts[0]! : `(${parts.join(' AND ')})`)

/** Facet tokens of the list filters: any value of a group, every group (AND); [] without filters. */
export function listFilterGroups(query: ProjectsQuery): string[][] {
  const groups: string[][] = []
  const add = (kind: string, values: readonly string[] | undefined): void => {
    if (values && values.length > 0) groups.push([...new Set(values)].map((v) => renderFacetToken(kind, v)))
  }
  add('y', query.type ? [query.type] : undefined)
  add('c', query.category)
  add('g', query.gameVersion)
  add('p', query.platform)
  add('t', query.tag)
  // Usernames are stored lowercase; SQLite's lower() (used before) folds ASCII only, and so does this.
  add('a', query.author !== undefined ? [query.author.replace(/[A-Z]/g, (c) => c.toLowerCase())] : undefined)
  return groups
}

/** The filter part of listFilterGroups as an FTS5 expression; null without filters. */
export function renderFilterExpression(groups: readonly (readonly string[])[]): string | null {
  return groups.length > 0 ? every(groups.map((g) => any(g.map(quote)))) : null
}

/** Combines a text expression with the filter expression (parenthesised: FTS5's NOT binds tighter than AND). */
export function withFilter(text: string, filter: string | null): string {
  return filter ? `(${text} AND ${filter})` : text
}

/**
 * The longer words a marked prefix ("\uE000sod") stands for: the vocabulary terms the plan lists
 * for it, else FTS5's `*`. The prefix's own term is left out: every caller has it already, as the
 * marked word or as the plain word (which every marked ASCII word also is).
 */
function listPrefixForms(plan: SearchPlan, prefix: string): string[] {
  const terms = plan.expansions.get(prefix)
  return terms ? terms.filter((t) => t !== prefix).map(quote) : [`${quote(prefix)}*`]
}

/** Whether token i is the last one and matches as a prefix. */
const isPrefix = (plan: SearchPlan, i: number): boolean => plan.prefix && i === plan.tokens.length - 1

/** Token i in the given field groups (prefix forms for name and meta words when it is the one being typed). */
function renderTokenIn(plan: SearchPlan, i: number, groups: Group[], typos: boolean): string {
  const t = plan.tokens[i]!
  const parts = groups.map((g) => quote(MARK[g] + t))
  if (isPrefix(plan, i)) for (const g of groups) if (g !== 'summary') parts.push(...listPrefixForms(plan, MARK[g] + t))
  if (typos) {
    for (const c of plan.typos.get(i) ?? []) {
      for (const g of groups) if (g !== 'summary') parts.push(quote(MARK[g] + c))
      // A candidate may be a whole joined name ("nochatreprts" → nochatreports).
      if (groups.includes('name')) parts.push(quote(MARK.joined + c))
    }
  }
  return any(parts)
}

/** Token i anywhere: the plain word, or a name/meta word it is a prefix of, or a typo candidate. */
function renderTokenAnywhere(plan: SearchPlan, i: number, typos: boolean): string {
  const t = plan.tokens[i]!
  const parts = [quote(t)]
  if (isPrefix(plan, i)) parts.push(...listPrefixForms(plan, MARK.name + t), ...listPrefixForms(plan, MARK.meta + t))
  if (typos) for (const c of plan.typos.get(i) ?? []) parts.push(quote(MARK.name + c), quote(MARK.meta + c), quote(MARK.joined + c))
  return any(parts)
}

/** The query's words joined (as typed, or with each corrected token replaced by its best candidate). */
function joinTokens(plan: SearchPlan, corrected: boolean): string {
  return plan.tokens.map((t, i) => (corrected ? (plan.typos.get(i)?.[0] ?? t) : t)).join('')
}

/** A joined-name token, as a prefix when the last token is being typed. */
function renderJoined(plan: SearchPlan, corrected: boolean, prefix: boolean): string {
  return `${quote(MARK.joined + joinTokens(plan, corrected))}${prefix ? '*' : ''}`
}

/**
 * Everything the query matches: all tokens anywhere; or two adjacent tokens written as one word
 * ("mod menu" finds "Modmenu"); or the tokens joined being (the start of) a whole name or slug.
 */
export function renderMatchAll(plan: SearchPlan, typos: boolean): string {
  return `(${listMatchAlternatives(plan, typos).join(' OR ')})`
}

/** The alternatives of renderMatchAll: every token anywhere first, then merged and joined words. */
function listMatchAlternatives(plan: SearchPlan, typos: boolean): string[] {
  const n = plan.tokens.length
  const alternatives = [every(plan.tokens.map((_, i) => renderTokenAnywhere(plan, i, typos)))]
  if (n >= 2 && n <= 6) {
    for (let m = 0; m < n - 1; m++) {
      const merged = plan.tokens[m]! + plan.tokens[m + 1]!
      const mergedPart = isPrefix(plan, m + 1) ? any([quote(merged), `${quote(MARK.name + merged)}*`]) : quote(merged)
      const rest = plan.tokens.flatMap((_, i) => (i === m || i === m + 1 ? [] : [renderTokenAnywhere(plan, i, false)]))
      alternatives.push(every([...rest, mergedPart]))
    }
  }
  alternatives.push(renderJoined(plan, false, plan.prefix))
  if (typos && plan.typos.size > 0) alternatives.push(renderJoined(plan, true, plan.prefix))
  return alternatives
}

/**
 * The ranking stages, best first; each is a subset of renderMatchAll(plan, typos) so a result is
 * listed once, in the first stage that has it: the exact name or slug; the query completes the
 * whole name ("sod" → Sodium before Sodium Extra); the name starts with the query's words; every
 * word is a word of the name; the name starts with what is typed; every word in the name as typed
 * so far; in the name, tags, categories or author; in those or the summary. A whole word beats a
 * prefix, so "mod" lists "Better Mod" before "Modern Tools".
 */
export function renderStages(plan: SearchPlan, typos: boolean): string[] {
  const words = plan.tokens.map((t, i) => (typos ? (plan.typos.get(i)?.[0] ?? t) : t))
  const exactPlan: SearchPlan = { ...plan, prefix: false }
  const all = (p: SearchPlan, groups: Group[]): string => every(p.tokens.map((_, i) => renderTokenIn(p, i, groups, typos)))
  const stages = [renderJoined(plan, typos, false)]
  if (plan.prefix) stages.push(`${quote(renderWholeToken(words))}*`)
  stages.push(`${all(exactPlan, ['name'])} AND ${renderJoined(plan, typos, true)}`, all(exactPlan, ['name']))
  if (plan.prefix) stages.push(renderJoined(plan, typos, true), all(plan, ['name']))
  stages.push(all(plan, ['name', 'meta']))
  if (!typos) stages.push(all(plan, ['name', 'meta', 'summary']))
  // A stage equal to an earlier one (a prefix standing for no longer word) adds nothing.
  return [...new Set(stages)]
}

/** An expression split for counting (see renderCountParts). */
export interface CountParts {
  core: string
  /** The count of `core` (with the filter) when known beforehand (shim/search-count.ts). */
  coreCount?: number | null
  /** The single plain word `core` is, when it is one (its count is its document frequency). */
  word: string | null
  extra: string | null
}

/**
 * renderMatchAll split for counting: `core` is every token as a plain word (a pure AND, FTS5's
 * fastest path; for a single word its count is stored in search_terms) and
 * `extra` what the other alternatives add (prefix and typo forms, merged and joined words), each
 * part driven by a short doclist. count(all) = count(core) + count(extra NOT core), so a common
 * word costs no OR-merge of its long doclist with the others.
 */
export function renderCountParts(plan: SearchPlan, typos: boolean): CountParts {
  const n = plan.tokens.length
  const core = every(plan.tokens.map(quote))
  const extras: string[] = []
  for (let i = 0; i < n; i++) {
    const t = plan.tokens[i]!
    const own: string[] = []
    if (isPrefix(plan, i)) own.push(...listPrefixForms(plan, MARK.name + t), ...listPrefixForms(plan, MARK.meta + t))
    if (typos) for (const c of plan.typos.get(i) ?? []) own.push(quote(MARK.name + c), quote(MARK.meta + c), quote(MARK.joined + c))
    if (own.length === 0) continue
    extras.push(every([any(own), ...plan.tokens.flatMap((_, j) => (j === i ? [] : [renderTokenAnywhere(plan, j, typos)]))]))
  }
  extras.push(...listMatchAlternatives(plan, typos).slice(1))
  return { core, word: n === 1 ? plan.tokens[0]! : null, extra: extras.length > 0 ? any(extras) : null }
}
