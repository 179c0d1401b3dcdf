import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, startApp, type TestApp } from '../helpers/app.js';

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
