import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { startApp, type TestApp } from '../helpers/app.js';

interface SqliteDatabase {
  exec(sql: string): void;
  close(): void;
}
const require = createRequire(import.meta.url);
const skip = process.env.TEST_DATABASE_URL ? 'SQLite only' : false;

describe('ops: SQLite under write contention answers 503, never 500', { skip }, () => {
  let t: TestApp;
  let other: SqliteDatabase;
  let path: string;
  before(async () => {
    t = await startApp({ env: { DB_BUSY_TIMEOUT_MS: '150' } });
    if (t.config.database.kind !== 'sqlite') throw new Error('SQLite only');
    path = t.config.database.path;
    const Database = require('libsql') as new (path: string) => SqliteDatabase;
    other = new Database(path);
    other.exec('pragma busy_timeout = 0');
  });
  after(async () => {
    other?.close();
    await t.close();
  });

  it('when another connection holds the write lock, then writes on both facades are 503 UNAVAILABLE with Retry-After, reads still work, and nothing was written', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    other.exec('BEGIN IMMEDIATE');
    try {
      const rest = await t.admin.post('/v1/categories', { name: 'Contended' });
      assert.equal(rest.status, 503, rest.text);
      assert.deepEqual([rest.body.code, rest.body.status], ['UNAVAILABLE', 503]);
      assert.equal(rest.headers.get('retry-after'), '1');

      const gql = await t.admin.graphql('mutation { createCategory(input: {name: "Contended too"}) { id } }');
      assert.ok(gql.status < 500 || gql.status === 503, gql.text);
      assert.equal(gql.body.errors[0].extensions.code, 'UNAVAILABLE');
      assert.equal(gql.body.errors[0].extensions.status, 503);

      const order = await t.admin.post('/v1/store/orders', { petId: 1, quantity: 1 });
      assert.ok(order.status === 503 || order.status === 400, order.text);

      // WAL: readers are not blocked by a writer.
      assert.equal((await t.admin.get('/v1/categories')).status, 200);
    } finally {
      other.exec('ROLLBACK');
    }
    const after = await t.admin.get('/v1/categories');
    assert.equal(after.body.length, before);
    // The refused transactions left nothing behind on the app's connection: later writes commit.
    for (const name of ['Contended', 'After contention']) {
      const retry = await t.admin.post('/v1/categories', { name });
      assert.equal(retry.status, 201, retry.text);
    }
  });

  it('when a transaction is open, then it already holds the write lock (BEGIN IMMEDIATE)', async () => {
    const Database = require('libsql') as new (path: string) => SqliteDatabase;
    const probe = new Database(path);
    try {
      probe.exec('pragma busy_timeout = 0');
      await t.app.orm.em.fork().transactional(async () => {
        assert.throws(() => probe.exec('BEGIN IMMEDIATE'), /locked|busy/i);
      });
    } finally {
      probe.close();
    }
  });
});
