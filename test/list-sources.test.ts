/**
 * The rebuild's listing of record files (build/list-sources.ts): one GNU `find` walk gives the same
 * files, kinds and stat signatures as fast-glob with a `statSync` per name, on a folder with the
 * cases fast-glob's patterns treat specially (dot names, symlinks, folders named like files, names
 * with spaces, tabs, newlines and non-ASCII letters, files too deep for any pattern).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { recordKinds } from '../build/load-records.ts'
import { findSignature, hasGnuFind, listSources, patternRegExp, type ListedSource } from '../build/list-sources.ts'
import { sourceSignature } from '../build/staging-cache.ts'

const root = mkdtempSync(path.join(os.tmpdir(), 'list-sources-test-'))
const data = path.join(root, 'data')
const outside = path.join(root, 'outside')
const patterns = Object.values(recordKinds).map((k) => k.pattern)

function put(file: string, text = '{}'): void {
  mkdirSync(path.dirname(path.join(data, file)), { recursive: true })
  writeFileSync(path.join(data, file), text)
}

const listed = [
  'catalog.json',
  'reference/categories/magic.json',
  'reference/types/mod.json',
  'users/alice.json',
  'users/with space.json',
  'users/tab\tname.json',
  'users/new\nline.json',
  'users/ünïcödé.json',
  'projects/sodium/project.json',
  'projects/sodium/versions/1.0.json',
  'projects/sodium/versions/linked.json',
  'projects/elsewhere/project.json',
  'projects/elsewhere/versions/2.0.json',
]
for (const file of listed) if (!file.includes('linked') && !file.startsWith('projects/elsewhere')) put(file, JSON.stringify({ file }))
// Never listed: dot names (file or folder), other extensions, too deep, a folder named *.json, a broken link.
for (const file of ['users/.hidden.json', 'users/.json', 'users/notes.txt', 'projects/.git/project.json', 'projects/sodium/versions/old/1.0.json', 'projects/sodium/.versions/x.json', 'catalog.json.bak']) put(file)
mkdirSync(path.join(data, 'projects/sodium/versions/folder.json'), { recursive: true })
symlinkSync(path.join(root, 'missing.json'), path.join(data, 'projects/sodium/versions/broken.json'))
// Symlinks are followed: to a file, and to a project folder outside the data folder.
writeFileSync(path.join(root, 'target.json'), '{"linked":true}')
symlinkSync(path.join(root, 'target.json'), path.join(data, 'projects/sodium/versions/linked.json'))
mkdirSync(path.join(outside, 'versions'), { recursive: true })
writeFileSync(path.join(outside, 'project.json'), '{}')
writeFileSync(path.join(outside, 'versions/2.0.json'), '{}')
symlinkSync(outside, path.join(data, 'projects/elsewhere'))
// Times with nanoseconds, before and after 2001 (ten-digit seconds), as find prints them.
utimesSync(path.join(data, 'users/alice.json'), 1.5, 999_999_999.123456)
utimesSync(path.join(data, 'catalog.json'), new Date('2026-11-23T09:00:00.987654321Z'), new Date('2026-11-23T09:00:00.987654321Z'))

afterAll(() => rmSync(root, { recursive: true, force: true }))

async function list(useFind: boolean): Promise<ListedSource[]> {
  const out: ListedSource[] = []
  await listSources(data, patterns, async (entry) => {
    out.push(entry)
  }, useFind)
  return out.sort((a, b) => (a[1] < b[1] ? -1 : 1))
}

describe('listing the record files of a rebuild', () => {
  it('patterns match as fast-glob does: no slash and no leading dot under a star', () => {
    const users = patternRegExp('users/*.json')
    expect(['users/a.json', 'users/a b.json', 'users/a.b.json'].every((f) => users.test(f))).toBe(true)
    expect(['users/.a.json', 'users/.json', 'users/a/b.json', 'users/a.json.bak', 'xusers/a.json'].some((f) => users.test(f))).toBe(false)
    expect(() => patternRegExp('projects/**/x.json')).toThrow(/unsupported/)
    expect(() => patternRegExp('users/{a,b}.json')).toThrow(/unsupported/)
  })

  it('fast-glob with a stat per name lists exactly the record files, with their stat signatures', async () => {
    const entries = await list(false)
    expect(entries.map((e) => e[1])).toEqual([...listed].sort())
    for (const [i, file, signature] of entries) {
      expect(patternRegExp(patterns[i]!).test(file), file).toBe(true)
      expect(signature).toBe(sourceSignature(statSync(path.join(data, file))))
    }
  })

  it.runIf(hasGnuFind())('one find walk gives the same files, kinds and signatures', async () => {
    expect(await list(true)).toEqual(await list(false))
  })

  it("reads find's times with Node's arithmetic", () => {
    const st = statSync(path.join(data, 'catalog.json'))
    expect(findSignature(`${st.size} 1795424400.9876543210 1795424400.0000000010 ${st.ino}`)).toBe(`${st.size}:${1795424400 * 1e3 + 987654321 / 1e6}:${1795424400 * 1e3 + 1 / 1e6}:${st.ino}`)
    expect(findSignature('5 7 12.5 42')).toBe('5:7000:12500:42')
  })

  it.runIf(hasGnuFind())('a missing data folder is an error, not an empty listing', async () => {
    await expect(listSources(path.join(root, 'nowhere'), patterns, async () => {}, true)).rejects.toThrow(/ENOENT.*nowhere/)
    writeFileSync(path.join(root, 'plain'), '')
    await expect(listSources(path.join(root, 'plain'), patterns, async () => {}, true)).rejects.toThrow(/plain is not a folder/)
  })
})
