import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';
import { onOwnPostgres, redisUrl } from '../helpers/services.js';

/**
 * Several identical instances on one PostgreSQL database and one Redis (docs/OPERATIONS.md, "Running several instances"): no oversell,
 * idempotency across instances, the same data everywhere.
 */
describe('scale-out: two instances on one PostgreSQL database and one Redis', async () => {
  const redis = await redisUrl();
  let a: TestApp;
  let b: TestApp;

  const skip = await onOwnPostgres(
    'scale',
    {
      setup: async (url) => {
        const env = { REDIS_URL: redis!, RATE_LIMIT_KEY_PREFIX: `petstore-scale-${randomBytes(4).toString('hex')}` };
        // Both start at once on the empty database: migrations and the first-start bootstrap run once.
        const adminKey = `psk_${randomBytes(24).toString('base64url')}`;
        [a, b] = await Promise.all([
          startApp({ databaseUrl: url, env: { ...env, ADMIN_API_KEY: adminKey } }),
          startApp({ databaseUrl: url, env: { ...env, ADMIN_API_KEY: adminKey } }),
        ]);
      },
      teardown: async () => {
        await a?.close();
        await b?.close();
      },
    },
    { Redis: redis },
  );

  it('when both start at once on an empty database, then there is one staff account and its key works on both', { skip }, async () => {
    const [ra, rb] = await Promise.all([a.admin.get('/v1/accounts'), b.admin.get('/v1/accounts')]);
    assert.equal(ra.status, 200);
    assert.equal(rb.status, 200);
    assert.deepEqual(ra.body, rb.body);
    assert.equal(ra.body.filter((acc: { role: string }) => acc.role === 'staff').length, 1);
  });

  it('when a pet is created on one instance, then the other serves it', { skip }, async () => {
    const { petId } = await createPet(a, { name: 'Shared' });
    const res = await b.admin.get(`/v1/pets?ids=${petId}`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.map((p: { name: string }) => p.name),
      ['Shared'],
    );
  });

  it('when 60 orders race over both instances against stock 7, then exactly 7 are placed and stock is 0', { skip }, async () => {
    const { petId } = await createPet(a, { stock: 7 });
    const buyer = await createAccount(a, { plan: 'business' });
    // Requests alternate between the two instances.
    const clients = [buyer.client, new Client(b.url, buyer.key)];
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => clients[i % 2]!.post('/v1/store/orders', { petId, quantity: 1 })),
    );
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 7, `statuses: ${statuses.join(',')}`);
    assert.ok(
      statuses.every((s) => s === 201 || s === 409),
      `only 201 and 409 expected, got ${[...new Set(statuses)].join(',')}`,
    );
    const stock = await b.admin.get(`/v1/store/inventory/${petId}`);
    assert.deepEqual(stock.body, { petId, quantity: 0, status: 'pending' });
  });

  it('when the same idempotency key reaches both instances at once, then one order is created', { skip }, async () => {
    const { petId } = await createPet(a, { stock: 10 });
    const buyer = await createAccount(a, { plan: 'business' });
    const key = `race-${randomBytes(4).toString('hex')}`;
    const onA = buyer.client;
    const onB = new Client(b.url, buyer.key);
    const send = (c: typeof onA) => c.post('/v1/store/orders', { petId, quantity: 2 }, { headers: { 'idempotency-key': key } });
    const responses = await Promise.all([send(onA), send(onB), send(onA), send(onB)]);
    const created = responses.filter((r) => r.status === 201);
    assert.ok(created.length >= 1, `statuses: ${responses.map((r) => r.status).join(',')}`);
    assert.ok(responses.every((r) => r.status === 201 || (r.status === 409 && r.body.code === 'IDEMPOTENCY_KEY_IN_FLIGHT')));
    assert.equal(new Set(created.map((r) => r.body.id)).size, 1, 'every success names the same order');
    const orders = await a.admin.get(`/v1/store/orders?petId=${petId}`);
    assert.equal(orders.body.length, 1);
    const stock = await b.admin.get(`/v1/store/inventory/${petId}`);
    assert.equal(stock.body.quantity, 8);
  });
});
