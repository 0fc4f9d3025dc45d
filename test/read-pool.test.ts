/**
 * The shim's read connections (READ_CONNECTIONS, createDbPool): a query spills to the next
 * connection once the first has two in flight, so a queue of SQLite work runs on more than one
 * thread; on a real SQLite file and through the real server.
 */
import { mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { createDbPool, keepingStatements, openDb, type Db, type SqlParams } from '../build/db/sqlite.ts'
import { resolveShimOptions, shimDefaults, threadPoolWarning } from '../shim/config.ts'
import { expectSameAnswersAtOnce, startServer, type TestServer } from './harness.ts'

/** A Db whose queries wait until the test settles them, recording what each connection was asked. */
function heldDb(name: string, log: string[]): Db & { settle(fail?: boolean): void; closed: boolean } {
  const pending: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = []
  const held = <T>(sql: string): Promise<T> => {
    log.push(`${name}:${sql}`)
    return new Promise<T>((resolve, reject) => pending.push({ resolve: resolve as (v: unknown) => void, reject }))
  }
  const db = {
    raw: null as never,
    file: name,
    closed: false,
    run: (sql: string) => held<{ changes: number; lastID: number }>(sql),
    all: <T>(sql: string, _params?: SqlParams) => held<T[]>(sql),
    get: <T>(sql: string, _params?: SqlParams) => held<T | undefined>(sql),
    exec: (sql: string) => held<void>(sql),
    prepare: () => Promise.reject(new Error('not used')),
    close: async () => {
      db.closed = true
    },
    settle(fail = false) {
      const next = pending.shift()!
      if (fail) next.reject(new Error(`${name} failed`))
      else next.resolve([])
    },
  }
  return db
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('createDbPool', () => {
  it('spills a query to the next connection once the first has two in flight', async () => {
    const log: string[] = []
    const a = heldDb('a', log)
    const b = heldDb('b', log)
    const pool = createDbPool([a, b])
    const queries = ['q1', 'q2', 'q3', 'q4', 'q5'].map((q) => pool.all(q))
    // a takes two; then b, as a has two; then b again; then a, the first of two with two each.
    expect(log).toEqual(['a:q1', 'a:q2', 'b:q3', 'b:q4', 'a:q5'])
    b.settle()
    await queries[2]
    void pool.get('q6')
    expect(log.at(-1)).toBe('b:q6')
    for (let i = 0; i < 3; i++) a.settle()
    await Promise.all([queries[0], queries[1], queries[4]])
    void pool.get('q7')
    expect(log.at(-1)).toBe('a:q7')
  })

  it('spilling at one, sends each query to the connection with the fewest in flight, the first of those on a tie', async () => {
    const log: string[] = []
    const a = heldDb('a', log)
    const b = heldDb('b', log)
    const pool = createDbPool([a, b], 1)
    const q1 = pool.all('q1')
    const q2 = pool.get('q2')
    const q3 = pool.all('q3')
    expect(log).toEqual(['a:q1', 'b:q2', 'a:q3'])
    // b finishes: it has none in flight, a has two.
    b.settle()
    await q2
    void pool.run('q4')
    expect(log.at(-1)).toBe('b:q4')
    // A failed query frees its connection as well.
    a.settle(true)
    await expect(q1).rejects.toThrow('a failed')
    void pool.exec('q5')
    expect(log.at(-1)).toBe('a:q5')
    a.settle()
    await q3
    await tick()
    void pool.all('q6')
    expect(log.at(-1)).toBe('a:q6')
    await pool.close()
    expect([a.closed, b.closed]).toEqual([true, true])
  })

  it('is the connection itself when there is one, and refuses none', () => {
    const only = heldDb('only', [])
    expect(createDbPool([only])).toBe(only)
    expect(() => createDbPool([])).toThrow('a pool needs at least one connection')
  })

  describe('on a real SQLite file', () => {
    let dir: string
    let file: string
    beforeAll(async () => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'read-pool-'))
      file = path.join(dir, 'catalog.sqlite')
      const db = await openDb(file)
      await db.exec(`CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3);`)
      await db.close()
    })
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    /** The order in which a long query and two short ones sent after it finish, on two connections. */
    async function finishOrder(): Promise<string[]> {
      const pool = createDbPool(await Promise.all([openDb(file, { readonly: true }), openDb(file, { readonly: true })]))
      const order: string[] = []
      // About half a second of SQLite work in one step (one sqlite3_step, the connection held throughout).
      const long = pool
        .get<{ n: number }>(`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000) SELECT count(*) AS n FROM c`)
        .then((row) => order.push(`long ${row!.n}`))
      // Sent once the long one is running (the binding's threads take queued work in no fixed order).
      await new Promise((resolve) => setTimeout(resolve, 150))
      const shorts = ['first', 'second'].map((name) => pool.get<{ n: number }>(`SELECT sum(n) AS n FROM t`).then((row) => order.push(`${name} short ${row!.n}`)))
      await Promise.all([long, ...shorts])
      await pool.close()
      return order
    }

    it('runs the query queued second behind a long one on the second connection, beside it', async () => {
      // The first short query waits behind the long one on the first connection; the second spills
      // to the idle one and is done while the long one still runs. (On one connection it would wait
      // too; the order in which the binding's threads then finish is not fixed, so it is not asserted.)
      const order = await finishOrder()
      expect(order[0]).toBe('second short 6')
      expect([...order].sort()).toEqual(['first short 6', 'long 4000000', 'second short 6'])
    })
  })
})

describe('READ_CONNECTIONS', () => {
  it('defaults to two and takes 1 to 16', () => {
    expect(shimDefaults.readConnections).toBe(2)
    expect(resolveShimOptions({}, {}).readConnections).toBe(2)
    expect(resolveShimOptions({}, { READ_CONNECTIONS: '1' }).readConnections).toBe(1)
    expect(resolveShimOptions({}, { READ_CONNECTIONS: '16' }).readConnections).toBe(16)
    for (const bad of ['0', '17', 'two', '-1']) {
      expect(() => resolveShimOptions({}, { READ_CONNECTIONS: bad })).toThrow(`READ_CONNECTIONS must be an integer from 1 to 16, got "${bad}"`)
    }
  })

  it('warns when the connections would leave libuv fewer than two threads', () => {
    expect(threadPoolWarning(2, {})).toBeNull()
    expect(threadPoolWarning(3, {})).toBe(
      `READ_CONNECTIONS=3 leaves 1 of libuv's 4 threads for file reads and the download counter: set UV_THREADPOOL_SIZE=5 (README, "Configuration")`,
    )
    expect(threadPoolWarning(3, { UV_THREADPOOL_SIZE: '5' })).toBeNull()
    expect(threadPoolWarning(8, { UV_THREADPOOL_SIZE: '6' })).toContain('leaves 0 of')
  })

  describe('through the server', () => {
    let server: TestServer
    let hashes: string[]
    beforeAll(async () => {
      const dist = inject('distDir')
      const catalog = await openDb(path.join(realpathSync(path.join(dist, 'current')), 'catalog.sqlite'), { readonly: true })
      hashes = (await catalog.all<{ sha1: string }>(`SELECT sha1 FROM files WHERE sha1 IS NOT NULL ORDER BY id LIMIT 6`)).map((r) => r.sha1)
      await catalog.close()
      server = await startServer(dist, { readConnections: 3, cacheBytes: 0 })
    })
    afterAll(async () => {
      expect(server.serverErrors()).toBe(0)
      await server.close()
    })

    it('answers queries running at once as it answers them one at a time', async () => {
      expect(hashes).toHaveLength(6)
      const paths = [
        '/projects?q=sodium',
        '/projects?limit=5&sort=downloads',
        '/categories',
        `/version-files?hashes=${hashes.join(',')}`,
        `/version-files/update?hashes=${hashes.join(',')}&platform=fabric`,
      ]
      const alone: string[] = []
      for (const p of paths) {
        const res = await server.get(p)
        expect(res.status, p).toBe(200)
        alone.push(await res.text())
      }
      expect(JSON.parse(alone[3]!).data).toHaveProperty(hashes[0]!)
      await expectSameAnswersAtOnce(server, paths, alone)
    })
  })
})

describe('openDb statementCache', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(path.join(realpathSync(os.tmpdir()), 'statements-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  async function numbersDb(file: string): Promise<void> {
    const db = await openDb(file)
    await db.exec(`CREATE TABLE n (i INTEGER PRIMARY KEY, sq INTEGER); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100) INSERT INTO n SELECT i, i * i FROM c;`)
    await db.close()
  }

  /** A read connection to a new numbers database keeping `limit` statements, and the texts it prepares. */
  async function numbersReader(name: string, limit: number): Promise<{ db: Db; prepared: string[] }> {
    const file = path.join(dir, `${name}.sqlite`)
    await numbersDb(file)
    const db = await openDb(file, { readonly: true, statementCache: limit })
    const prepared: string[] = []
    const prepare = db.raw.prepare.bind(db.raw)
    db.raw.prepare = ((sql: string, ...rest: never[]) => (prepared.push(sql), prepare(sql, ...rest))) as typeof db.raw.prepare
    return { db, prepared }
  }

  it('prepares a text once for every call, answers concurrent calls with their own values, and closes with statements kept', async () => {
    const { db, prepared } = await numbersReader('once', 4)
    const sql = `SELECT i, sq FROM n WHERE i IN (SELECT value FROM json_each(?)) ORDER BY i`
    const asks = Array.from({ length: 30 }, (_, k) => [k + 1, k + 50])
    const answers = await Promise.all(asks.map((ids) => db.all<{ i: number; sq: number }>(sql, [JSON.stringify(ids)])))
    expect(answers).toEqual(asks.map((ids) => ids.map((i) => ({ i, sq: i * i }))))
    expect(await db.all(sql, [JSON.stringify([100, 7])])).toEqual([{ i: 7, sq: 49 }, { i: 100, sq: 10000 }])
    expect(prepared).toEqual([sql])
    // Named parameters bind the same way on a kept statement.
    expect(await db.all(`SELECT sq FROM n WHERE i = $i`, { $i: 12 })).toEqual([{ sq: 144 }])
    await db.close()
  })

  it('keeps at most its limit, least recently used dropped first, and gives every text its own answers throughout', async () => {
    const { db, prepared } = await numbersReader('lru', 3)
    const text = (k: number): string => `SELECT sq + ${k} AS v FROM n WHERE i = ?`
    const ask = async (k: number, i: number): Promise<void> => expect(await db.all(text(k), [i])).toEqual([{ v: i * i + k }])
    // 1, 2, 3 kept; 1 used again (most recent); 4 evicts 2, the least recent; 2 is prepared again.
    await ask(1, 2)
    await ask(2, 3)
    await ask(3, 4)
    await ask(1, 5)
    await ask(4, 6)
    await ask(1, 7)
    await ask(3, 8)
    await ask(2, 9)
    expect(prepared).toEqual([text(1), text(2), text(3), text(4), text(2)])
    // Many texts at once, past the limit while their calls are in flight: none meets a finalized statement.
    await Promise.all(Array.from({ length: 40 }, (_, k) => ask(10 + (k % 20), 1 + k)))
    await db.close()
  })

  it('rejects a text SQLite cannot prepare with its error (no hang), forgets it, and still closes', async () => {
    const file = path.join(dir, 'bad.sqlite')
    await numbersDb(file)
    const db = await openDb(file, { readonly: true, statementCache: 8 })
    const bad = `SELECT nope FROM n WHERE i = ?`
    const [first, second] = await Promise.allSettled([db.all(bad, [1]), db.all(bad, [2])])
    expect(first.status === 'rejected' && String(first.reason)).toMatch(/no such column: nope/)
    expect(second.status === 'rejected' && String(second.reason)).toMatch(/no such column: nope/)
    await expect(db.all(bad, [3])).rejects.toThrow(/no such column: nope/)
    // A bad value for a good statement fails that call only.
    await expect(db.all(`SELECT sq FROM n WHERE i = ?`, [1, 2, 3])).rejects.toThrow(/SQLITE_RANGE/)
    expect(await db.all(`SELECT sq FROM n WHERE i = ?`, [3])).toEqual([{ sq: 9 }])
    await db.close()
  })
})

describe('keepingStatements', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(path.join(realpathSync(os.tmpdir()), 'kept-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** Keeps this thread busy (no turn of the event loop) until `file` is larger than `size` or `ms` have passed: whether it grew. */
  function busyUntilGrown(file: string, size: number, ms: number): boolean {
    const end = Date.now() + ms
    while (Date.now() < end) if (statSync(file).size > size) return true
    return false
  }

  it('runs a kept statement while this thread is busy, where Database#all waits for this thread to run it', async () => {
    const file = path.join(dir, 'grow.sqlite')
    const db = await openDb(file)
    await db.exec(`CREATE TABLE blobs (k INTEGER PRIMARY KEY, b BLOB NOT NULL)`)
    // Each insert adds 1 MB to the file: seen from this thread by stat, without a turn of its event loop.
    const insert = `INSERT INTO blobs (b) VALUES (zeroblob(?)) RETURNING k`
    const reads = keepingStatements(db, 2)
    expect(await reads.all(insert, [1 << 20])).toEqual([{ k: 1 }])
    let size = statSync(file).size
    const kept = reads.all(insert, [1 << 20])
    expect(busyUntilGrown(file, size, 20_000)).toBe(true)
    expect(await kept).toEqual([{ k: 2 }])
    // Database#all prepares the statement on SQLite's thread, and runs it once this thread hears it is prepared.
    size = statSync(file).size
    const plain = db.all(insert, [1 << 20])
    expect(busyUntilGrown(file, size, 1_000)).toBe(false)
    expect(await plain).toEqual([{ k: 3 }])
    expect(statSync(file).size).toBeGreaterThan(size)
    // release finalizes the kept statements and leaves the connection open; close closes it.
    await reads.release()
    expect(await db.all(`SELECT count(*) AS n, sum(length(b)) AS bytes FROM blobs`)).toEqual([{ n: 3, bytes: 3 << 20 }])
    const again = keepingStatements(db, 1)
    expect(await again.all(`SELECT k FROM blobs WHERE k > ? ORDER BY k`, [1])).toEqual([{ k: 2 }, { k: 3 }])
    await again.close()
    await expect(db.all(`SELECT 1`)).rejects.toThrow(/SQLITE_MISUSE|closed/)
  })
})
