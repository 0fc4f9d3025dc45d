/**
 * Text rules shared by the search index (build/search-index.ts) and the search queries
 * (shim/search-*.ts): how text becomes tokens, the marked token forms the index stores for each
 * field group, facet tokens, and the deletion keys of typo tolerance. Both sides must agree
 * exactly, so they live in one place.
 */

/**
 * Marker characters (Unicode private use, which the unicode61 tokenizer keeps inside a token)
 * prefixed to a token to say which field group it came from. Source text is stripped of the
 * whole private-use block before indexing, so no user text can produce a marked token.
 */
export const MARK = {
  /** Words of the name, slug and CamelCase parts of the name. */
  name: '\uE000',
  /** Words of tags and of the author's username and display name. */
  meta: '\uE001',
  /** Words of the summary. */
  summary: '\uE002',
  /** The whole name (and the whole slug) joined into one token: exact and "starts with". */
  joined: '\uE003',
  /** Word count + joined name: "the query completes the whole name". */
  whole: '\uE004',
  /** Filter values: kind letter + hex of the value. */
  facet: '\uE005',
} as const

const PRIVATE_USE = /[\uE000-\uF8FF]/gu

/**
 * Characters that the SQLite unicode61 tokenizer certainly treats as token characters: letters
 * and digits of the scripts below. Anything else separates tokens, so a query token is always a
 * single FTS5 token (a split one would become a phrase, an error with detail=none).
 */
const TOKEN_RUN =
  /(?:(?=[\p{L}\p{N}])[a-z0-9\u00b2\u00b3\u00b9\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff\u05d0-\u05ea\u0620-\u064a\u3041-\u30ff\u4e00-\u9fff\uac00-\ud7a3])+/gu

/** The lowercase tokens of a text (NFKC-normalised, so full-width letters match). */
export function tokenizeText(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(TOKEN_RUN) ?? []
}

/** Words of a CamelCase name ("NoChatReports" → no chat reports), lowercase; [] if none. */
export function splitCamelCase(text: string): string[] {
  const parts = text.normalize('NFKC').split(/(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u)
  return parts.length > 1 ? parts.flatMap(tokenizeText) : []
}

/** Removes marker characters from source text before it is indexed. */
export function stripMarkers(text: string): string {
  return text.replace(PRIVATE_USE, ' ')
}

/** The index token of a filter value: one token whatever the value holds. */
export function renderFacetToken(kind: string, value: string): string {
  return `${MARK.facet}${kind}${Buffer.from(value, 'utf8').toString('hex')}`
}

/** The whole-name token: word count, then the words joined. */
export function renderWholeToken(words: readonly string[]): string {
  return `${MARK.whole}${words.length}${words.join('')}`
}

/** Shortest term kept in the typo vocabulary, and longest (long joined names are not typo targets). */
export const TYPO_TERM_MIN = 3
export const TYPO_TERM_MAX = 24

/** Every string made by deleting one character (deduplicated). */
export function listDeletions(term: string): string[] {
  const chars = [...term]
  const out = new Set<string>()
  for (let i = 0; i < chars.length; i++) out.add(chars.slice(0, i).join('') + chars.slice(i + 1).join(''))
  return [...out]
}
