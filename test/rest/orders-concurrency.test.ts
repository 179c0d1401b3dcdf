import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { assertError, stockOf, walk } from './support.js';

describe('REST orders under concurrency, and idempotency keys', () => {
  let t: TestApp;
  let alice: Client;
  let bob: Client;
  before(async () => {
    t = await startApp();
    alice = (await createAccount(t, { name: 'Alice' })).client;
    bob = (await createAccount(t, { name: 'Bob' })).client;
  });
  after(() => t.close());

  const ordersOf = async (client: Client, petId: number) => (await walk(client, `/v1/store/orders?petId=${petId}&limit=100`)).items;

  it('when 40 orders race for a stock of 5, then exactly 5 are placed (201), the rest are 409, stock is 0 and the pet pending', async () => {
    const { petId } = await createPet(t, { stock: 5 });
    const clients = await Promise.all(Array.from({ length: 4 }, (_, i) => createAccount(t, { name: `Racer ${i}` })));
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => clients[i % clients.length]!.client.post('/v1/store/orders', { petId, quantity: 1 })),
    );
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 201).length, 5, `statuses: ${statuses.join(',')}`);
    for (const r of results.filter((x) => x.status !== 201)) {
      assert.equal(r.status, 409, r.text);
      assert.ok(['INSUFFICIENT_STOCK', 'PET_NOT_AVAILABLE'].includes(r.body.code), r.text);
    }
    assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'pending' });
    const orders = await ordersOf(t.admin, petId);
    assert.equal(orders.length, 5);
    assert.deepEqual(
      orders.map((o: { id: number }) => o.id).sort(),
      results
        .filter((r) => r.status === 201)
        .map((r) => r.body.id)
        .sort(),
    );
  });

  it('when orders of several units race, then stock never goes below zero and placed quantities add up', async () => {
    const { petId } = await createPet(t, { stock: 10 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => alice.post('/v1/store/orders', { petId, quantity: (i % 3) + 1 })),
    );
    const placed = results.filter((r) => r.status === 201).reduce((sum, r) => sum + r.body.quantity, 0);
    for (const r of results) assert.ok(r.status === 201 || r.status === 409, r.text);
    const stock = await stockOf(t, petId);
    assert.ok(stock.quantity >= 0);
    assert.equal(placed + stock.quantity, 10);
  });

  it('when orders and cancellations race, then every cancelled unit comes back exactly once', async () => {
    const { petId } = await createPet(t, { stock: 6 });
    const first = await Promise.all(Array.from({ length: 6 }, () => alice.post('/v1/store/orders', { petId, quantity: 1 })));
    assert.ok(first.every((r) => r.status === 201));
    // Every order cancelled twice at once, while new orders compete for the returning stock.
    const cancels = first.flatMap((r) => [alice.delete(`/v1/store/orders/${r.body.id}`), alice.delete(`/v1/store/orders/${r.body.id}`)]);
    const again = Array.from({ length: 10 }, () => bob.post('/v1/store/orders', { petId, quantity: 1 }));
    const [cancelled, reordered] = await Promise.all([Promise.all(cancels), Promise.all(again)]);
    assert.equal(cancelled.filter((r) => r.status === 204).length, 6, cancelled.map((r) => r.status).join(','));
    for (const r of cancelled.filter((x) => x.status !== 204)) assert.ok([404, 409].includes(r.status), r.text);
    const placedAgain = reordered.filter((r) => r.status === 201).length;
    const stock = await stockOf(t, petId);
    assert.equal(stock.quantity + placedAgain, 6);
    assert.equal((await ordersOf(t.admin, petId)).length, placedAgain);
  });

  describe('idempotency keys', () => {
    it('when a request is repeated with the same key and payload, then the stored response is replayed and one order exists', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const key = randomUUID();
      const body = { petId, quantity: 2, shipDate: '2026-12-01T10:00:00Z' };
      const first = await alice.post('/v1/store/orders', body, { headers: { 'idempotency-key': key } });
      assert.equal(first.status, 201);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const second = await alice.post('/v1/store/orders', body, { headers: { 'idempotency-key': key } });
      assert.equal(second.status, 201);
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      assert.equal(second.headers.get('location'), first.headers.get('location'));
      assert.equal((await ordersOf(alice, petId)).length, 1);
      assert.deepEqual(await stockOf(t, petId), { quantity: 3, status: 'available' });
    });

    it('when the same key comes with another payload, then it is 422 IDEMPOTENCY_KEY_REUSED and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const key = randomUUID();
      assert.equal((await alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } })).status, 201);
      const res = await alice.post('/v1/store/orders', { petId, quantity: 2 }, { headers: { 'idempotency-key': key } });
      assertError(res, 422, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal((await ordersOf(alice, petId)).length, 1);
      assert.deepEqual(await stockOf(t, petId), { quantity: 4, status: 'available' });
    });

    it('when the first request with a key was refused, then a retry replays the same refusal', async () => {
      const { petId } = await createPet(t, { stock: 1 });
      const key = randomUUID();
      const first = await alice.post('/v1/store/orders', { petId, quantity: 5 }, { headers: { 'idempotency-key': key } });
      assertError(first, 409, 'INSUFFICIENT_STOCK');
      const second = await alice.post('/v1/store/orders', { petId, quantity: 5 }, { headers: { 'idempotency-key': key } });
      assertError(second, 409, 'INSUFFICIENT_STOCK');
      assert.equal(second.body.message, first.body.message);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(second.headers.get('idempotent-replayed'), 'true', 'a replayed refusal says it is a replay');
      assert.deepEqual(await stockOf(t, petId), { quantity: 1, status: 'available' });
    });

    it('when duplicates with one key race, then exactly one order is created and the others replay it or are 409 IDEMPOTENCY_KEY_IN_FLIGHT', async () => {
      const { petId } = await createPet(t, { stock: 50 });
      const key = randomUUID();
      const results = await Promise.all(
        Array.from({ length: 12 }, () => alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } })),
      );
      const created = results.filter((r) => r.status === 201);
      assert.ok(created.length >= 1, results.map((r) => r.status).join(','));
      assert.equal(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true').length, 1);
      for (const r of created) assert.deepEqual(r.body, created[0]!.body);
      for (const r of results.filter((x) => x.status !== 201)) assertError(r, 409, 'IDEMPOTENCY_KEY_IN_FLIGHT');
      assert.equal((await ordersOf(alice, petId)).length, 1);
      assert.deepEqual(await stockOf(t, petId), { quantity: 49, status: 'available' });
      // Once settled, a retry replays.
      const later = await alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } });
      assert.equal(later.status, 201);
      assert.equal(later.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(later.body, created[0]!.body);
    });

    it('when another account uses the same key, then it gets its own order (keys are per account)', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const key = randomUUID();
      const a = await alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } });
      const b = await bob.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } });
      assert.equal(a.status, 201);
      assert.equal(b.status, 201);
      assert.notEqual(a.body.id, b.body.id);
      assert.equal(b.headers.get('idempotent-replayed'), null);
      assertError(await bob.get(`/v1/store/orders/${a.body.id}`), 404, 'NOT_FOUND');
      assert.deepEqual(await stockOf(t, petId), { quantity: 3, status: 'available' });
      // And another payload under the same key from the other account is not "reused" either.
      const c = await createAccount(t, { name: 'Carol' });
      assert.equal((await c.client.post('/v1/store/orders', { petId, quantity: 2 }, { headers: { 'idempotency-key': key } })).status, 201);
    });

    it('when the key is longer than 255 characters or not visible ASCII, then it is 400 and nothing is ordered', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      for (const key of ['k'.repeat(256), 'has space', 'tab\there']) {
        assertError(
          await alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } }),
          400,
          'VALIDATION_FAILED',
        );
      }
      assert.equal(
        (await alice.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': 'k'.repeat(255) } })).status,
        201,
      );
      assert.deepEqual(await stockOf(t, petId), { quantity: 4, status: 'available' });
    });

    it('when a key is older than 24 hours, then the next claim by its account drops it and the key can be used afresh', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const { client, accountId } = await createAccount(t, { name: 'Expiring' });
      const send = (quantity: number, key: string) =>
        client.post('/v1/store/orders', { petId, quantity }, { headers: { 'idempotency-key': key } });
      assert.equal((await send(1, 'old-key')).status, 201);
      const connection = t.app.orm.em.getConnection();
      const records = async () =>
        Number(
          (
            await connection.execute<{ n: number | string }[]>('select count(*) as n from idempotency_records where account_id = ?', [
              accountId,
            ])
          )[0]!.n,
        );
      assert.equal(await records(), 1);
      // Age the record past its 24 hours, as the clock would.
      await t.app.orm.em.fork().nativeUpdate('IdempotencyRecord', { account: accountId }, { expiresAt: new Date(Date.now() - 1000) });
      assert.equal((await send(1, 'new-key')).status, 201);
      assert.equal(await records(), 1, 'the expired record is gone, only the new key is kept');
      // The old key, with another payload, is a new order rather than 422 IDEMPOTENCY_KEY_REUSED.
      const reused = await send(2, 'old-key');
      assert.equal(reused.status, 201);
      assert.equal(reused.headers.get('idempotent-replayed'), null);
    });
  });
});
