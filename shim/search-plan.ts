/**
 * What a search query means before it runs: its tokens, whether the last one matches as a prefix,
 * and typo candidates for tokens that match no name, tag, author or joined name (search_typos,
 * build/search-index.ts). A token that is a real word of the catalog is never corrected, and
 * corrections of a word that exists elsewhere rank after every exact result (no "autocorrect").
 */
import type { Db } from '../build/db/sqlite.ts'
import { isAsciiWord } from '../build/search-bitmaps.ts'
import { listDeletions, MARK, tokenizeText } from '../build/search-text.ts'

/** The analysed query. */
export interface SearchPlan {
  tokens: string[]
  /** The last token also matches as a prefix of a name, slug, tag or author word. */
  prefix: boolean
  /** Typo candidates per token index (vocabulary terms), best first. */
  typos: Map<number, string[]>
  /** True when a corrected token also exists as typed somewhere: corrections rank after exact results. */
  demoted: boolean
  /**
   * The vocabulary terms a marked prefix ("\uE000sod") stands for, when they are few (ASCII
   * tokens only): an OR of them is read lazily, while FTS5 merges every doclist of a `prefix*`
   * before its first row (again in each stage and count). A prefix not listed is matched with `*`.
   */
  expansions: Map<string, string[]>
  /** Documents having each token as a plain word, and documents in all (search_docs). */
  docs: number[]
  documents: number
}

/** At most this many distinct tokens count (the rest is ignored): bounds the FTS5 expression and its cost. */
export const MAX_TOKENS = 12
const MAX_TOKEN_LENGTH = 64
/** Shortest prefix matched (a 1-character prefix would match a large part of the vocabulary). */
const MIN_PREFIX = 2
/** Tokens shorter than this are never corrected; from TWO_TYPOS on, two edits are allowed. */
const MIN_TYPO_LENGTH = 4
const TWO_TYPOS = 8
/** A token found in this many documents or more is a real word, never corrected. */
const MAX_TYPO_DOCS = 5
const MAX_CANDIDATES = 6
const MAX_CORRECTED_TOKENS = 4
/** A prefix standing for more vocabulary terms than this is matched with FTS5's `*`. */
const MAX_EXPANSION = 12

/**
 * The distinct search tokens of what the user typed (build/search-text.ts tokenizeText: letters
 * and digits only, so quotes, `*`, `:`, `^`, `-` and parentheses never reach FTS5), at most
 * MAX_TOKENS, the last one typed kept last (it is the one being typed, matched as a prefix).
 */
export function getSearchTokens(q: string | undefined): string[] {
  if (!q) return []
  const all = tokenizeText(q).map((t) => t.slice(0, MAX_TOKEN_LENGTH))
  const last = all[all.length - 1]
  const distinct = [...new Set(all.filter((t) => t !== last))].slice(0, MAX_TOKENS - 1)
  return last === undefined ? [] : [...distinct, last]
}

interface TokenFacts {
  i: number
  plain: number
  head: number
  headPrefix: number
  /** For the prefix token: JSON arrays of (up to MAX_EXPANSION + 1) name and meta terms it starts. */
  nameTerms: string | null
  metaTerms: string | null
  documents: number
}

/** Analyses the tokens against the vocabulary (one query, plus one for typo candidates if any). */
export async function planSearch(db: Db, tokens: string[]): Promise<SearchPlan> {
  const lastIndex = tokens.length - 1
  const prefix = lastIndex >= 0 && [...tokens[lastIndex]!].length >= MIN_PREFIX
  const plan: SearchPlan = { tokens, prefix, typos: new Map(), demoted: false, expansions: new Map(), docs: tokens.map(() => 0), documents: 0 }
  const startsWith = (mark: string): string =>
    `(SELECT json_group_array(term) FROM (SELECT term FROM search_terms WHERE term >= ${mark} || j.value AND term < ${mark} || j.value || char(1114111) ORDER BY term LIMIT ${MAX_EXPANSION + 1}))`
  const facts = await db.all<TokenFacts>(
    `SELECT j.key AS i,
       coalesce((SELECT docs FROM search_terms WHERE term = j.value), 0) AS plain,
       EXISTS (SELECT 1 FROM json_each(?2) m, search_terms s WHERE s.term = m.value || j.value) AS head,
       j.key = ?3 AND EXISTS (SELECT 1 FROM json_each(?2) m, search_terms s WHERE s.term > m.value || j.value AND s.term < m.value || j.value || char(1114111)) AS headPrefix,
       CASE WHEN j.key = ?3 THEN ${startsWith('?4')} END AS nameTerms,
       CASE WHEN j.key = ?3 THEN ${startsWith('?5')} END AS metaTerms,
       (SELECT max(rank) FROM search_docs) AS documents
     FROM json_each(?1) j`,
    [JSON.stringify(tokens), JSON.stringify([MARK.name, MARK.meta, MARK.joined]), prefix ? lastIndex : -1, MARK.name, MARK.meta],
  )
  for (const f of facts) {
    plan.docs[f.i] = f.plain
    plan.documents = f.documents
  }
  // Stored terms are FTS5's (diacritics removed): only an ASCII token is certainly spelt the same.
  for (const f of facts) {
    if (!isAsciiWord(tokens[f.i]!)) continue
    for (const [mark, json] of [[MARK.name, f.nameTerms], [MARK.meta, f.metaTerms]] as const) {
      const terms = json === null ? null : (JSON.parse(json) as string[])
      if (terms && terms.length <= MAX_EXPANSION) plan.expansions.set(mark + tokens[f.i]!, terms)
    }
  }
  const eligible = facts.filter(
    (f) => [...tokens[f.i]!].length >= MIN_TYPO_LENGTH && !f.head && !f.headPrefix && f.plain < MAX_TYPO_DOCS,
  ).slice(0, MAX_CORRECTED_TOKENS)
  if (eligible.length === 0) return plan
  const keys: [number, string][] = []
  for (const f of eligible) for (const k of listTypoKeys(tokens[f.i]!)) keys.push([f.i, k])
  const rows = await db.all<{ i: number; term: string }>(
    `SELECT DISTINCT j.value->>0 AS i, s.term FROM json_each(?) j JOIN search_typos s ON s.key = j.value->>1`,
    [JSON.stringify(keys)],
  )
  for (const f of eligible) {
    const token = tokens[f.i]!
    const limit = [...token].length >= TWO_TYPOS ? 2 : 1
    const candidates = rows
      .filter((r) => r.i === f.i && r.term !== token)
      .map((r) => ({ term: r.term, d: getEditDistance(token, r.term) }))
      .filter((c) => c.d <= limit)
      .sort((a, b) => a.d - b.d || (a.term < b.term ? -1 : a.term > b.term ? 1 : 0))
      .slice(0, MAX_CANDIDATES)
      .map((c) => c.term)
    if (candidates.length === 0) continue
    plan.typos.set(f.i, candidates)
    if (f.plain > 0) plan.demoted = true
  }
  return plan
}

/** Deletion keys of a query token: itself, its 1-deletions and, for long tokens, 2-deletions. */
function listTypoKeys(token: string): string[] {
  const once = listDeletions(token)
  const keys = new Set([token, ...once])
  if ([...token].length >= TWO_TYPOS) for (const k of once) for (const k2 of listDeletions(k)) keys.add(k2)
  return [...keys]
}

/** Edit distance with adjacent transpositions (optimal string alignment), over code points. */
export function getEditDistance(a: string, b: string): number {
  const s = [...a]
  const t = [...b]
  let prev2: number[] = []
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j)
  for (let i = 1; i <= s.length; i++) {
    const cur = [i]
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost)
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) d = Math.min(d, prev2[j - 2]! + 1)
      cur.push(d)
    }
    prev2 = prev
    prev = cur
  }
  return prev[t.length]!
}
