import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { assertError, snapshot, walk } from './support.js';

describe('REST accounts, API keys and authentication', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  describe('success paths', () => {
    it('when staff asks GET /account, then it sees its own account and the key it used (prefix only)', async () => {
      const res = await t.admin.get('/v1/account');
      assert.equal(res.status, 200);
      assert.equal(res.body.role, 'staff');
      assert.equal(res.body.plan, 'business');
      assert.deepEqual(res.body.limits, { perMinute: 1000, perDay: 100000, webhookEndpoints: 20, subscriptions: 50 });
      assert.ok(t.adminKey.startsWith(res.body.apiKey.prefix));
      assert.ok(res.body.apiKey.prefix.startsWith('psk_'));
      assert.equal(res.body.apiKey.key, undefined, 'the secret is never shown again');
      assert.ok(!res.text.includes(t.adminKey));
    });

    it('when staff creates an account, then it is 201 with its first key in full, which works at once', async () => {
      const res = await t.admin.post('/v1/accounts', { name: 'Acme Kennels', role: 'customer', plan: 'free' });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('location'), `/v1/accounts/${res.body.id}`);
      assert.equal(res.body.name, 'Acme Kennels');
      assert.deepEqual(res.body.limits, { perMinute: 60, perDay: 1000, webhookEndpoints: 1, subscriptions: 2 });
      assert.match(res.body.apiKey.key, /^psk_[A-Za-z0-9_-]{22,}$/);
      assert.ok(res.body.apiKey.key.startsWith(res.body.apiKey.prefix));

      const viewer = await t.admin.withKey(res.body.apiKey.key).get('/v1/account');
      assert.equal(viewer.status, 200);
      assert.equal(viewer.body.id, res.body.id);
      assert.equal(viewer.body.role, 'customer');
      assert.equal(viewer.body.apiKey.id, res.body.apiKey.id);
    });

    it('when staff creates an enterprise account with limits, then it has them; without limits, or limits on another plan, it is 400', async () => {
      const res = await t.admin.post('/v1/accounts', {
        name: 'Big',
        role: 'customer',
        plan: 'enterprise',
        limits: { perMinute: 5000, perDay: 2000000 },
      });
      assert.equal(res.status, 201);
      assert.deepEqual(res.body.limits, { perMinute: 5000, perDay: 2000000, webhookEndpoints: 20, subscriptions: 50 });

      const before = await snapshot(t);
      assertError(await t.admin.post('/v1/accounts', { name: 'Big2', role: 'customer', plan: 'enterprise' }), 400, 'VALIDATION_FAILED');
      assertError(
        await t.admin.post('/v1/accounts', { name: 'Small', role: 'customer', plan: 'free', limits: { perMinute: 1, perDay: 1 } }),
        400,
        'VALIDATION_FAILED',
      );
      assert.deepEqual(await snapshot(t), before);
    });

    it('when staff lists accounts, then every account appears once, paged', async () => {
      await createAccount(t, { name: 'Listed' });
      const { items } = await walk(t.admin, '/v1/accounts?limit=2');
      const ids = items.map((a: { id: number }) => a.id);
      assert.equal(new Set(ids).size, ids.length);
      assert.ok(items.some((a: { name: string }) => a.name === 'Listed'));
      assert.ok(items.some((a: { role: string }) => a.role === 'staff'));
    });

    it('when staff updates an account, then the change is visible and takes effect (a promoted customer can act as staff)', async () => {
      const acct = await createAccount(t, { name: 'Promote me' });
      assertError(await acct.client.post('/v1/categories', { name: 'Before promotion' }), 403, 'FORBIDDEN');
      const res = await t.admin.patch(`/v1/accounts/${acct.accountId}`, { name: 'Promoted', role: 'staff', plan: 'business' });
      assert.equal(res.status, 200);
      assert.equal(res.body.name, 'Promoted');
      assert.equal(res.body.role, 'staff');
      assert.deepEqual(res.body.limits, { perMinute: 1000, perDay: 100000, webhookEndpoints: 20, subscriptions: 50 });
      assert.equal((await acct.client.post('/v1/categories', { name: 'After promotion' })).status, 201);
    });

    it('when staff moves an account to enterprise with limits, then it has them, and back to pro drops them', async () => {
      const acct = await createAccount(t);
      const up = await t.admin.patch(`/v1/accounts/${acct.accountId}`, { plan: 'enterprise', limits: { perMinute: 7, perDay: 70 } });
      assert.equal(up.status, 200);
      assert.deepEqual(up.body.limits, { perMinute: 7, perDay: 70, webhookEndpoints: 20, subscriptions: 50 });
      const down = await t.admin.patch(`/v1/accounts/${acct.accountId}`, { plan: 'pro' });
      assert.deepEqual(down.body.limits, { perMinute: 300, perDay: 10000, webhookEndpoints: 5, subscriptions: 10 });
      assertError(await t.admin.patch(`/v1/accounts/${acct.accountId}`, { plan: 'enterprise' }), 400, 'VALIDATION_FAILED');
      assertError(await t.admin.patch(`/v1/accounts/${acct.accountId}`, {}), 400, 'VALIDATION_FAILED');
      assertError(await t.admin.patch('/v1/accounts/987654321', { name: 'Nobody' }), 404, 'NOT_FOUND');
    });

    it('when staff creates a second key, then both keys work for the same account', async () => {
      const acct = await createAccount(t);
      const res = await t.admin.post(`/v1/accounts/${acct.accountId}/api-keys`);
      assert.equal(res.status, 201);
      assert.match(res.body.key, /^psk_/);
      assert.notEqual(res.body.key, acct.key);
      const second = acct.client.withKey(res.body.key);
      assert.equal((await second.get('/v1/account')).body.id, acct.accountId);
      assert.equal((await acct.client.get('/v1/account')).body.id, acct.accountId);
      assertError(await t.admin.post('/v1/accounts/987654321/api-keys'), 404, 'NOT_FOUND');
    });

    it('when staff revokes a key, then it is 204, that key is 401 INVALID_API_KEY at once, and the other keys still work', async () => {
      const acct = await createAccount(t);
      const spare = await t.admin.post(`/v1/accounts/${acct.accountId}/api-keys`);
      assert.equal((await acct.client.get('/v1/account')).status, 200);
      const res = await t.admin.delete(`/v1/api-keys/${acct.keyId}`);
      assert.equal(res.status, 204);
      assertError(await acct.client.get('/v1/account'), 401, 'INVALID_API_KEY');
      assertError(await acct.client.get('/v1/pets'), 401, 'INVALID_API_KEY');
      const { petId } = await createPet(t, { stock: 2 });
      const before = await snapshot(t);
      assertError(await acct.client.post('/v1/store/orders', { petId, quantity: 1 }), 401, 'INVALID_API_KEY');
      assert.deepEqual(await snapshot(t), before);
      assert.equal((await acct.client.withKey(spare.body.key).get('/v1/account')).status, 200);
      assertError(await t.admin.delete('/v1/api-keys/987654321'), 404, 'NOT_FOUND');
    });

    it('when staff lifts the ban of a key, then it is 204 (also when the key is not banned); an unknown key is 404', async () => {
      const acct = await createAccount(t);
      assert.equal((await t.admin.delete(`/v1/api-keys/${acct.keyId}/ban`)).status, 204);
      assert.equal((await acct.client.get('/v1/account')).status, 200);
      assertError(await t.admin.delete('/v1/api-keys/987654321/ban'), 404, 'NOT_FOUND');
    });

    it('when anyone with a key asks GET /rate_limit, then it answers its plan and both windows', async () => {
      const acct = await createAccount(t, { plan: 'free' });
      const res = await acct.client.get('/v1/rate_limit');
      assert.equal(res.status, 200);
      assert.equal(res.body.plan, 'free');
      assert.equal(res.body.resources.minute.windowSeconds, 60);
      assert.equal(res.body.resources.day.windowSeconds, 86400);
    });
  });

  describe('authentication refusals', () => {
    it('when no key is sent, then every operation except the document is 401 UNAUTHENTICATED', async () => {
      for (const [method, path] of [
        ['GET', '/v1/pets'],
        ['GET', '/v1/pets/1'],
        ['POST', '/v1/store/orders'],
        ['GET', '/v1/account'],
        ['GET', '/v1/accounts'],
        ['DELETE', '/v1/api-keys/1'],
      ] as const) {
        const res = await t.anonymous.request(method, path);
        assertError(res, 401, 'UNAUTHENTICATED');
      }
      assert.equal((await t.anonymous.get('/v1/openapi.json')).status, 200);
    });

    it('when an unknown, malformed or empty-looking key is sent, then it is 401 INVALID_API_KEY', async () => {
      for (const key of ['psk_thisKeyDoesNotExistAnywhere123456', 'not-a-psk-key', 'psk_', `psk_${'x'.repeat(300)}`, `${t.adminKey}x`]) {
        assertError(await t.admin.withKey(key).get('/v1/pets'), 401, 'INVALID_API_KEY');
      }
    });

    it('when an invalid key is sent, then nothing is changed by the request', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const before = await snapshot(t);
      const bad = t.admin.withKey('psk_thisKeyDoesNotExistAnywhere123456');
      assertError(await bad.post('/v1/store/orders', { petId, quantity: 1 }), 401, 'INVALID_API_KEY');
      assertError(await bad.put(`/v1/store/inventory/${petId}`, { quantity: 9 }), 401, 'INVALID_API_KEY');
      assertError(await t.anonymous.delete(`/v1/pets/${petId}`), 401, 'UNAUTHENTICATED');
      assert.deepEqual(await snapshot(t), before);
    });
  });

  describe('role refusals', () => {
    let customer: Client;
    let fixture: { petId: number; categoryId: number; orderId: number; accountId: number; keyId: number };
    before(async () => {
      const acct = await createAccount(t, { name: 'Just a customer' });
      customer = acct.client;
      const { petId, categoryId } = await createPet(t, { stock: 5 });
      const placed = await customer.post('/v1/store/orders', { petId, quantity: 1 });
      fixture = { petId, categoryId, orderId: placed.body.id, accountId: acct.accountId, keyId: acct.keyId };
    });

    const staffOnly = (): Array<[string, string, unknown?]> => [
      ['POST', '/v1/pets', { name: 'Nope', categoryId: fixture.categoryId }],
      ['PUT', `/v1/pets/${fixture.petId}`, { name: 'Nope', categoryId: fixture.categoryId }],
      ['DELETE', `/v1/pets/${fixture.petId}`],
      ['POST', '/v1/categories', { name: 'Nope' }],
      ['PUT', `/v1/categories/${fixture.categoryId}`, { name: 'Nope' }],
      ['DELETE', `/v1/categories/${fixture.categoryId}`],
      ['PATCH', `/v1/store/orders/${fixture.orderId}`, { complete: true }],
      ['GET', '/v1/store/inventory'],
      ['PUT', `/v1/store/inventory/${fixture.petId}`, { quantity: 99 }],
      ['POST', '/v1/accounts', { name: 'Nope', role: 'staff', plan: 'business' }],
      ['GET', '/v1/accounts'],
      ['PATCH', `/v1/accounts/${fixture.accountId}`, { role: 'staff' }],
      ['POST', `/v1/accounts/${fixture.accountId}/api-keys`],
      ['DELETE', `/v1/api-keys/${fixture.keyId}`],
      ['DELETE', `/v1/api-keys/${fixture.keyId}/ban`],
    ];

    it('when a customer calls any staff operation, then it is 403 FORBIDDEN and nothing changes', async () => {
      const before = await snapshot(t);
      for (const [method, path, body] of staffOnly()) {
        const res = await customer.request(method, path, body === undefined ? {} : { body });
        assertError(res, 403, 'FORBIDDEN');
      }
      assert.deepEqual(await snapshot(t), before);
      // Still a customer, the key still works.
      assert.equal((await customer.get('/v1/account')).body.role, 'customer');
    });

    it('when a customer calls the operations open to any role, then they succeed', async () => {
      assert.equal((await customer.get('/v1/pets')).status, 200);
      assert.equal((await customer.get(`/v1/pets/${fixture.petId}`)).status, 200);
      assert.equal((await customer.get('/v1/categories')).status, 200);
      assert.equal((await customer.get(`/v1/categories/${fixture.categoryId}`)).status, 200);
      assert.equal((await customer.get('/v1/store/orders')).status, 200);
      assert.equal((await customer.get(`/v1/store/orders/${fixture.orderId}`)).status, 200);
      assert.equal((await customer.get(`/v1/store/inventory/${fixture.petId}`)).status, 200);
      assert.equal((await customer.get('/v1/account')).status, 200);
      assert.equal((await customer.get('/v1/rate_limit')).status, 200);
    });
  });
});
