/**
 * A locked or full SQLite file (docs/OPERATIONS.md): a write that cannot get the lock waits without stalling the
 * process and then answers 503 UNAVAILABLE with Retry-After; a full disk answers 503 (not 500) and
 * turns readiness 503 until there is room again.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { assertError } from '../rest/support.js';

interface SqliteDatabase {
  exec(sql: string): void;
  close(): void;
}
const require = createRequire(import.meta.url);
const skip = process.env.TEST_DATABASE_URL ? 'SQLite only' : false;

describe('ops: a foreign write lock on the SQLite file', { skip }, () => {
  let t: TestApp;
  let other: SqliteDatabase;
  before(async () => {
    // The default budget (DB_BUSY_TIMEOUT_MS): about 2 s of waiting for the lock.
    t = await startApp();
    if (t.config.database.kind !== 'sqlite') throw new Error('SQLite only');
    const Database = require('libsql') as new (path: string) => SqliteDatabase;
    other = new Database(t.config.database.path);
    other.exec('pragma busy_timeout = 0');
  });
  after(async () => {
    other?.close();
    await t.close();
  });

  it('when another connection holds the write lock, then /healthz and reads answer while a write waits, and the write gets 503 with Retry-After', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    other.exec('BEGIN IMMEDIATE');
    let writeDone = false;
    try {
      const write = t.admin.post('/v1/categories', { name: 'Locked out' }).finally(() => (writeDone = true));
      // Let the write start waiting for the lock, then read while it waits.
      await new Promise((r) => setTimeout(r, 150));
      const health = await t.anonymous.get('/healthz');
      const read = await t.admin.get('/v1/categories');
      assert.equal(health.status, 200);
      assert.equal(read.status, 200);
      assert.equal(writeDone, false, 'the reads were answered only after the waiting write gave up');
      const refused = await write;
      assertError(refused, 503, 'UNAVAILABLE');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    } finally {
      other.exec('ROLLBACK');
    }
    const retry = await t.admin.post('/v1/categories', { name: 'Locked out' });
    assert.equal(retry.status, 201, retry.text);
    assert.equal((await t.admin.get('/v1/categories')).body.length, before + 1);
  });

  it('when the lock is released while a write waits, then the write goes through', async () => {
    other.exec('BEGIN IMMEDIATE');
    const write = t.admin.post('/v1/categories', { name: 'Patient' });
    await new Promise((r) => setTimeout(r, 300));
    other.exec('ROLLBACK');
    const created = await write;
    assert.equal(created.status, 201, created.text);
  });
});

describe('ops: the SQLite file cannot grow (disk full)', { skip }, () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  /**
   * A real SQLITE_FULL: the app's own connection may not grow the file past its current size
   * (max_page_count is per connection, so it is set on the app's connection before each step).
   */
  const capAt = async (pages: number) => {
    await t.app.orm.em.getConnection().execute(`pragma max_page_count = ${pages}`);
  };
  const pageCount = async () =>
    Number((await t.app.orm.em.getConnection().execute<Array<{ page_count: number }>>('pragma page_count'))[0]!.page_count);

  it('when the file cannot grow, then writes answer 503 UNAVAILABLE with Retry-After (never 500), /readyz turns 503, and both recover once there is room', async () => {
    // No free page inside the file either (a migration that drops an index leaves one): only growth could make room.
    await t.app.orm.em.getConnection().execute('vacuum');
    const cap = await pageCount();
    const statuses: number[] = [];
    let full: TestResponse | undefined;
    for (let i = 0; i < 200 && !full; i++) {
      await capAt(cap);
      const res = await t.admin.post('/v1/categories', { name: `Filler ${i}`, description: 'x'.repeat(1000) });
      statuses.push(res.status);
      if (res.status !== 201) full = res;
    }
    assert.ok(full, 'the file never filled up');
    assertError(full, 503, 'UNAVAILABLE');
    assert.ok(Number(full.headers.get('retry-after')) >= 1);
    assert.deepEqual(
      statuses.filter((s) => s !== 201 && s !== 503),
      [],
    );

    await capAt(cap);
    const ready = await t.anonymous.get('/readyz');
    assert.equal(ready.status, 503, ready.text);
    assert.equal(ready.body.checks.database, false);
    assert.equal((await t.admin.get('/v1/categories')).status, 200, 'reads still work');

    await capAt(1_000_000_000);
    const again = await t.anonymous.get('/readyz');
    assert.equal(again.status, 200, again.text);
    const created = await t.admin.post('/v1/categories', { name: 'After the cleanup', description: 'x'.repeat(1000) });
    assert.equal(created.status, 201, created.text);
  });
});
