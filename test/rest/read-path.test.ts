import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPet, recordSql, startApp, type TestApp } from '../helpers/app.js';
import { KEY_CACHE_TTL_MS } from '../../src/http/authentication.js';

/**
 * A REST read stays off the ORM: plain SQL on a prepared statement, no EntityManager forked, one
 * statement per read (the key cached), whether or not it is conditional.
 */
describe('REST read path', () => {
  let t: TestApp;
  let petId: number;
  before(async () => {
    // The webhook worker polls through the ORM (its own forks) every WEBHOOK_POLL_MS: not during this test.
    t = await startApp({ env: { WEBHOOK_POLL_MS: '60000' } });
    ({ petId } = await createPet(t));
  });
  after(() => t?.close());

  it('when pets are read by ids with a cached key, then one prepared statement runs and no EntityManager is forked', async () => {
    const path = `/v1/pets?ids=${petId},${petId + 1000}`;
    // The key cache keeps a key for KEY_CACHE_TTL_MS from its lookup. createPet's requests cached the admin key; an entry
    // from then could expire between the first read and the measured ones (a lookup, with its fork, in the middle of
    // the measurement on a slow machine). Past it, the first read looks the key up afresh, and the
    // measured reads follow it within that time.
    await new Promise((resolve) => setTimeout(resolve, KEY_CACHE_TTL_MS + 100));
    const first = await t.admin.get(path);
    assert.equal(first.status, 200);
    const em = t.app.orm.em;
    const fork = em.fork.bind(em);
    let forks = 0;
    em.fork = ((...args: Parameters<typeof em.fork>) => {
      // Background workers (src/events/) fork their own; a request's fork would come from its path. The whole stack is
      // read (V8 keeps 10 frames by default: a worker's fork deep inside the ORM's transaction would lose its origin).
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = Infinity;
      const stack = new Error().stack ?? '';
      Error.stackTraceLimit = limit;
      if (!/[/\\]events[/\\]/.test(stack)) forks++;
      return fork(...args);
    }) as typeof em.fork;
    const sql = recordSql(t.app);
    sql.start();
    try {
      assert.equal((await t.admin.get(path)).status, 200);
      assert.equal((await t.admin.get(path, { headers: { 'if-none-match': first.headers.get('etag')! } })).status, 304);
    } finally {
      em.fork = fork;
    }
    const statements = sql.stop();
    assert.equal(forks, 0, 'no EntityManager forked');
    assert.deepEqual(statements, [
      'select id, name, category_id, status from pets where id in (?, ?) order by id asc limit ?',
      'select id, name, category_id, status from pets where id in (?, ?) order by id asc limit ?',
    ]);
  });
});
