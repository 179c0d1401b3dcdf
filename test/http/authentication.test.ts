import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { ApiKeyAuthenticator } from '../../src/http/authentication.js';
import { keyRegistry } from '../../src/domain/index.js';

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
    GraphQL: (id: number) =>
      t.admin.graphql('mutation($id: ID!) { updateAccount(id: $id, input: { role: staff }) { role } }', { id: globalId('Account', id) }),
  };
  const revoke = {
    REST: (keyId: number) => t.admin.delete(`/v1/api-keys/${keyId}`),
    GraphQL: (keyId: number) =>
      t.admin.graphql('mutation($id: ID!) { revokeApiKey(keyId: $id) { revokedAt } }', { id: globalId('ApiKey', keyId) }),
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
 * The cache's misses: the requests that carry one key when its entry is missing or expired share one lookup (on
 * PostgreSQL every request in flight used to send its own), and a change made on this instance is never undone by
 * a lookup that began before it. A real key store on the app's database, counted (and, for the second case, held
 * after its read) by a thin wrapper.
 */
describe('authentication: the requests that miss the cache together share one lookup', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t?.close());

  it('when 20 requests with one key miss the cache at once, then the key is looked up once and each gets its caller', async () => {
    const customer = await createAccount(t, { role: 'customer', plan: 'pro' });
    const store = keyRegistry(t.app.orm.em, t.app.reader);
    let lookups = 0;
    // A minute's cache: the counts below must not depend on how fast this machine is.
    const auth = new ApiKeyAuthenticator(
      {
        ...store,
        authenticate: (raw) => {
          lookups++;
          return store.authenticate(raw);
        },
      },
      60_000,
    );
    const actors = await Promise.all(Array.from({ length: 20 }, () => auth.authenticate(customer.key)));
    assert.equal(lookups, 1);
    assert.deepEqual([...new Set(actors.map((a) => a?.accountId))], [customer.accountId]);
    assert.equal((await auth.authenticate(customer.key))?.accountId, customer.accountId);
    assert.equal(lookups, 1, 'then cached');
  });

  it('when a key is revoked here while a lookup of it is under way, then requests after the revocation are refused and the earlier lookup does not fill the cache', async () => {
    const customer = await createAccount(t, { role: 'customer', plan: 'pro' });
    const store = keyRegistry(t.app.orm.em, t.app.reader);
    let read!: () => void;
    const wasRead = new Promise<void>((r) => (read = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let lookups = 0;
    const auth = new ApiKeyAuthenticator(
      {
        ...store,
        authenticate: async (raw) => {
          const actor = await store.authenticate(raw);
          if (++lookups === 1) {
            // The first lookup has read the key as it was, and answers only after the revocation.
            read();
            await released;
          }
          return actor;
        },
      },
      60_000,
    );
    const early = auth.authenticate(customer.key);
    await wasRead;
    const revoked = await t.admin.delete(`/v1/api-keys/${customer.keyId}`);
    assert.equal(revoked.status, 204, revoked.text);
    auth.forget();
    // Answered while the earlier lookup is still held: it must not wait for (or share) that lookup.
    let timer: NodeJS.Timeout | undefined;
    const later = await Promise.race([
      auth.authenticate(customer.key),
      new Promise((r) => (timer = setTimeout(() => r('still waiting'), 2000))),
    ]);
    clearTimeout(timer);
    assert.equal(later, null, 'a request after the revocation looks the key up afresh');
    release();
    assert.equal((await early)?.accountId, customer.accountId, 'the lookup begun before the revocation saw the key as it was');
    assert.equal(await auth.authenticate(customer.key), null, 'and its answer, come last, did not fill the cache');
    assert.equal(lookups, 2);
  });
});
