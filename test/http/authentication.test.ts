import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, recordSql, startApp, type TestApp } from '../helpers/app.js';
import pg from 'pg';
import { onOwnPostgres, untilBackend } from '../helpers/services.js';

/**
 * Authentications are cached for a second; a change to what a key authenticates as (its account's
 * role or plan, its revocation) must apply at once on the instance that made it, whichever facade
 * made it: the domain triggers the cache's `forget`, not each handler.
 */
describe('authentication cache follows account changes at once, on both facades', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t?.close());

  const promote = {
    REST: (id: number) => t.admin.patch(`/v1/accounts/${id}`, { role: 'staff' }),
    GraphQL: (id: number) => t.admin.graphql('mutation($id: ID!) { updateAccount(id: $id, input: { role: staff }) { role } }', { id: String(id) }),
  };
  const revoke = {
    REST: (keyId: number) => t.admin.delete(`/v1/api-keys/${keyId}`),
    GraphQL: (keyId: number) => t.admin.graphql('mutation($id: ID!) { revokeApiKey(keyId: $id) { revokedAt } }', { id: String(keyId) }),
  };

  for (const facade of ['REST', 'GraphQL'] as const) {
    it(`when staff promotes a customer through ${facade}, then the customer's cached key acts as staff on its very next request`, async () => {
      const customer = await createAccount(t, { role: 'customer', plan: 'pro' });
      assert.equal((await customer.client.get('/v1/store/inventory')).status, 403, 'cached as a customer');
      const changed = await promote[facade](customer.accountId);
      assert.equal(changed.status, 200, changed.text);
      assert.equal((await customer.client.get('/v1/store/inventory')).status, 200);
    });

    it(`when staff revokes a key through ${facade}, then its cached authentication is gone on its very next request`, async () => {
      const customer = await createAccount(t, { role: 'customer', plan: 'pro' });
      assert.equal((await customer.client.get('/v1/account')).status, 200, 'cached as valid');
      const revoked = await revoke[facade](customer.keyId);
      assert.ok(revoked.status === 204 || revoked.status === 200, revoked.text);
      const after = await customer.client.get('/v1/account');
      assert.equal(after.status, 401);
      assert.equal(after.body.code, 'INVALID_API_KEY');
    });
  }

});

/**
 * On PostgreSQL a key's lookup waits on the network, so the requests that miss the cache together (a hot key whose
 * entry just expired: every request in flight) would each send their own query. They share one. (On SQLite the
 * lookup completes before the next request is read.)
 */
describe('authentication: one lookup for the requests that miss the cache together (PostgreSQL)', async () => {
  let t: TestApp;
  let db: pg.Client;
  const skip = await onOwnPostgres('keys', {
    async setup(url) {
      t = await startApp({ databaseUrl: url });
      db = new pg.Client({ connectionString: url });
      await db.connect();
    },
    async teardown() {
      await db?.end();
      await t?.close();
    },
  });

  it('when 20 requests with one uncached key arrive while its lookup is under way, then the key is looked up once and all 20 are answered', { skip }, async () => {
    const customer = await createAccount(t, { role: 'customer', plan: 'pro' });
    const sql = recordSql(t.app);
    // The keys' table held by another transaction: the first lookup waits, so every request arrives while it is under way.
    await db.query('begin');
    await db.query('lock table api_keys in access exclusive mode');
    sql.start();
    const answering = Promise.all(Array.from({ length: 20 }, () => customer.client.get('/v1/account')));
    try {
      await untilBackend(db, "wait_event_type = 'Lock'", 'no lookup waited for the keys table');
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      await db.query('commit');
    }
    const answers = await answering;
    // The authentication's lookup finds the key by its hash (the answer's own read of the key is by id).
    const lookups = sql.stop().filter((statement) => /from [`"]api_keys[`"].* where [`"]a0[`"]\.[`"]hash[`"] = /.test(statement));
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(20).fill(200),
    );
    assert.equal(lookups.length, 1, `the key was looked up ${lookups.length} times`);
  });
});
