import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { assertError, snapshot, stockOf, walk } from './support.js';

/** The state table of docs/API.md ("States and rules"), row by row, allowed and refused, over REST. */
describe('REST store: orders and inventory (state transitions)', () => {
  let t: TestApp;
  let alice: Client;
  let bob: Client;
  before(async () => {
    t = await startApp();
    alice = (await createAccount(t, { name: 'Alice' })).client;
    bob = (await createAccount(t, { name: 'Bob' })).client;
  });
  after(() => t.close());

  const order = (client: Client, petId: number, quantity = 1, extra: Record<string, unknown> = {}) =>
    client.post('/v1/store/orders', { petId, quantity, ...extra });

  describe('place order', () => {
    it('when the pet is available with enough stock, then the order is 201 open, stock drops and the pet stays available', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const res = await order(alice, petId, 2, { shipDate: '2026-12-01T10:00:00Z' });
      assert.equal(res.status, 201);
      assert.deepEqual(res.body, { id: res.body.id, petId, quantity: 2, shipDate: '2026-12-01T10:00:00.000Z', complete: false });
      assert.equal(res.headers.get('location'), `/v1/store/orders/${res.body.id}`);
      assert.deepEqual(await stockOf(t, petId), { quantity: 3, status: 'available' });
      const got = await alice.get(res.headers.get('location')!);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, res.body);
    });

    it('when shipDate is any RFC 3339 date-time (offset, lower-case t and z), then it is accepted and normalised to UTC', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      for (const [given, stored] of [
        ['2026-12-01T10:00:00+02:00', '2026-12-01T08:00:00.000Z'],
        ['2026-12-01t10:00:00z', '2026-12-01T10:00:00.000Z'],
        ['2026-12-01T10:00:00.5Z', '2026-12-01T10:00:00.500Z'],
      ]) {
        const res = await order(alice, petId, 1, { shipDate: given });
        assert.equal(res.status, 201, `${given}: ${res.text}`);
        assert.equal(res.body.shipDate, stored);
      }
    });

    it('when shipDate is outside the years 0001 to 9999 in UTC (on either side by its offset), then it is 400 and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 5 });
      const before = await snapshot(t);
      for (const given of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-01:00', '0001-01-01T00:00:00+01:00']) {
        const res = await order(alice, petId, 1, { shipDate: given });
        assertError(res, 400, 'VALIDATION_FAILED');
        assert.deepEqual(
          res.body.details,
          [{ path: 'shipDate', message: 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z' }],
          given,
        );
      }
      assert.deepEqual(await snapshot(t), before);
      assert.equal((await order(alice, petId, 1, { shipDate: '9999-12-31T23:59:59Z' })).status, 201, 'the last second of 9999 is one');
    });

    it('when an order takes the last stock, then the pet becomes pending', async () => {
      const { petId } = await createPet(t, { stock: 2 });
      assert.equal((await order(alice, petId, 2)).status, 201);
      assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'pending' });
      assert.equal((await alice.get(`/v1/pets?ids=${petId}`)).body[0].status, 'pending');
    });

    it('when the order asks for more than the stock, then it is 409 INSUFFICIENT_STOCK and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 2 });
      const before = await snapshot(t);
      assertError(await order(alice, petId, 3), 409, 'INSUFFICIENT_STOCK');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when the pet is pending or sold, then ordering it is 409 PET_NOT_AVAILABLE and nothing changes', async () => {
      const pending = await createPet(t, { stock: 1 });
      await order(alice, pending.petId, 1);
      assert.equal((await stockOf(t, pending.petId)).status, 'pending');
      const sold = await createPet(t, { stock: 0 });
      assert.equal((await stockOf(t, sold.petId)).status, 'sold');
      const offSale = await createPet(t, { stock: 5 });
      await t.admin.put(`/v1/pets/${offSale.petId}`, { name: 'Rex', categoryId: offSale.categoryId, status: 'pending' });

      const before = await snapshot(t);
      assertError(await order(alice, pending.petId, 1), 409, 'PET_NOT_AVAILABLE');
      assertError(await order(alice, sold.petId, 1), 409, 'PET_NOT_AVAILABLE');
      assertError(await order(alice, offSale.petId, 1), 409, 'PET_NOT_AVAILABLE');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when the pet does not exist, then it is 400 VALIDATION_FAILED (an id inside a body) and nothing changes', async () => {
      const before = await snapshot(t);
      const res = await order(alice, 987654321, 1);
      assertError(res, 400, 'VALIDATION_FAILED');
      assert.ok(
        res.body.details?.some((d: { path: string }) => d.path === 'petId'),
        res.text,
      );
      assert.deepEqual(await snapshot(t), before);
    });
  });

  describe('cancel order', () => {
    it('when the owner cancels an open order, then it is 204, stock comes back, the pet is available and the order is gone', async () => {
      const { petId } = await createPet(t, { stock: 2 });
      const placed = await order(alice, petId, 2);
      assert.equal((await stockOf(t, petId)).status, 'pending');
      const res = await alice.delete(`/v1/store/orders/${placed.body.id}`);
      assert.equal(res.status, 204);
      assert.deepEqual(await stockOf(t, petId), { quantity: 2, status: 'available' });
      assertError(await alice.get(`/v1/store/orders/${placed.body.id}`), 404, 'NOT_FOUND');
      assertError(await alice.delete(`/v1/store/orders/${placed.body.id}`), 404, 'NOT_FOUND');
      assert.deepEqual(await stockOf(t, petId), { quantity: 2, status: 'available' }, 'a second cancel restocks nothing');
    });

    it('when staff cancels a customer order, then it is 204 and restocks', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      assert.equal((await t.admin.delete(`/v1/store/orders/${placed.body.id}`)).status, 204);
      assert.deepEqual(await stockOf(t, petId), { quantity: 3, status: 'available' });
    });

    it('when the order is complete, then cancelling it is 409 ORDER_NOT_OPEN and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      await t.admin.patch(`/v1/store/orders/${placed.body.id}`, { complete: true });
      const before = await snapshot(t);
      assertError(await alice.delete(`/v1/store/orders/${placed.body.id}`), 409, 'ORDER_NOT_OPEN');
      assertError(await t.admin.delete(`/v1/store/orders/${placed.body.id}`), 409, 'ORDER_NOT_OPEN');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when another customer cancels an order, then it is 404 (never 403) and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      const before = await snapshot(t);
      assertError(await bob.delete(`/v1/store/orders/${placed.body.id}`), 404, 'NOT_FOUND');
      assert.deepEqual(await snapshot(t), before);
    });
  });

  describe('complete order', () => {
    it('when staff completes an open order with a shipDate, then it is complete with that date; stock left keeps the pet available', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      const res = await t.admin.patch(`/v1/store/orders/${placed.body.id}`, { complete: true, shipDate: '2026-12-24T08:00:00Z' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { id: placed.body.id, petId, quantity: 1, shipDate: '2026-12-24T08:00:00.000Z', complete: true });
      assert.deepEqual(await stockOf(t, petId), { quantity: 2, status: 'available' });
      assert.deepEqual((await alice.get(`/v1/store/orders/${placed.body.id}`)).body, res.body);
    });

    it('when staff completes without a shipDate, then shipDate is set (to now)', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      assert.equal(placed.body.shipDate, null);
      const before = Date.now();
      const res = await t.admin.patch(`/v1/store/orders/${placed.body.id}`, { complete: true });
      assert.equal(res.status, 200);
      assert.ok(res.body.shipDate);
      // Same clock (same machine): the stored date is not before the request was sent, give or take rounding.
      assert.ok(Date.parse(res.body.shipDate) >= before - 1000, res.body.shipDate);
    });

    it('when the last open order of a pet without stock is completed, then the pet is sold; before that it stays pending', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const first = await order(alice, petId, 2);
      const second = await order(bob, petId, 1);
      assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'pending' });
      assert.equal((await t.admin.patch(`/v1/store/orders/${first.body.id}`, { complete: true })).status, 200);
      assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'pending' }, 'an open order is left');
      assert.equal((await t.admin.patch(`/v1/store/orders/${second.body.id}`, { complete: true })).status, 200);
      assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'sold' });
      assert.equal((await alice.get(`/v1/pets?ids=${petId}`)).body[0].status, 'sold');
    });

    it('when the order is already complete, then completing it again is 409 ORDER_NOT_OPEN and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      await t.admin.patch(`/v1/store/orders/${placed.body.id}`, { complete: true, shipDate: '2026-12-24T08:00:00Z' });
      const before = await snapshot(t);
      assertError(
        await t.admin.patch(`/v1/store/orders/${placed.body.id}`, { complete: true, shipDate: '2027-01-01T00:00:00Z' }),
        409,
        'ORDER_NOT_OPEN',
      );
      assert.deepEqual(await snapshot(t), before);
    });

    it('when a customer completes an order (even its own), then it is 403 FORBIDDEN and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      const before = await snapshot(t);
      assertError(await alice.patch(`/v1/store/orders/${placed.body.id}`, { complete: true }), 403, 'FORBIDDEN');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when the order does not exist, then completing or cancelling it is 404', async () => {
      assertError(await t.admin.patch('/v1/store/orders/987654321', { complete: true }), 404, 'NOT_FOUND');
      assertError(await t.admin.delete('/v1/store/orders/987654321'), 404, 'NOT_FOUND');
      assertError(await t.admin.get('/v1/store/orders/987654321'), 404, 'NOT_FOUND');
    });
  });

  describe('set inventory', () => {
    it('when staff sets a positive stock, then the pet is available, whatever it was (pending or sold)', async () => {
      const pending = await createPet(t, { stock: 1 });
      await order(alice, pending.petId, 1);
      const sold = await createPet(t, { stock: 0 });
      for (const { petId } of [pending, sold]) {
        const res = await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 7 });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, { petId, quantity: 7, status: 'available' });
        assert.deepEqual(await stockOf(t, petId), { quantity: 7, status: 'available' });
        assert.equal((await alice.get(`/v1/pets?ids=${petId}`)).body[0].status, 'available');
      }
    });

    it('when staff sets stock 0 while orders are open, then the pet is pending; with none open, sold', async () => {
      const withOrders = await createPet(t, { stock: 4 });
      await order(alice, withOrders.petId, 1);
      const res = await t.admin.put(`/v1/store/inventory/${withOrders.petId}`, { quantity: 0 });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { petId: withOrders.petId, quantity: 0, status: 'pending' });

      const without = await createPet(t, { stock: 4 });
      const res2 = await t.admin.put(`/v1/store/inventory/${without.petId}`, { quantity: 0 });
      assert.deepEqual(res2.body, { petId: without.petId, quantity: 0, status: 'sold' });
      assert.equal((await alice.get(`/v1/pets?ids=${without.petId}`)).body[0].status, 'sold');
    });

    it('when a customer sets or lists the inventory, then it is 403 FORBIDDEN and nothing changes; reading one entry is allowed', async () => {
      const { petId } = await createPet(t, { stock: 4 });
      const before = await snapshot(t);
      assertError(await alice.put(`/v1/store/inventory/${petId}`, { quantity: 100 }), 403, 'FORBIDDEN');
      assertError(await alice.get('/v1/store/inventory'), 403, 'FORBIDDEN');
      assert.deepEqual(await snapshot(t), before);
      const one = await alice.get(`/v1/store/inventory/${petId}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body, { petId, quantity: 4, status: 'available' });
    });

    it('when staff lists the inventory, then every pet has exactly one entry with its status', async () => {
      const { items: inventory } = await walk(t.admin, '/v1/store/inventory?limit=7');
      const { items: pets } = await walk(t.admin, '/v1/pets?limit=100');
      assert.deepEqual(
        inventory.map((i: { petId: number; status: string }) => [i.petId, i.status]),
        pets.map((p: { id: number; status: string }) => [p.id, p.status]),
      );
    });
  });

  describe('ownership', () => {
    it("when a customer reads another account's order, then it is 404 (never 403); the owner and staff see it", async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const placed = await order(alice, petId, 1);
      assertError(await bob.get(`/v1/store/orders/${placed.body.id}`), 404, 'NOT_FOUND');
      assert.equal((await alice.get(`/v1/store/orders/${placed.body.id}`)).status, 200);
      assert.equal((await t.admin.get(`/v1/store/orders/${placed.body.id}`)).status, 200);
    });

    it("when a customer lists orders, then it sees only its own account's orders; staff sees all; filters apply", async () => {
      const carol = await createAccount(t, { name: 'Carol' });
      const dave = await createAccount(t, { name: 'Dave' });
      const { petId } = await createPet(t, { stock: 10 });
      const carols = [(await order(carol.client, petId, 1)).body.id, (await order(carol.client, petId, 2)).body.id];
      const daves = [(await order(dave.client, petId, 1)).body.id];
      await t.admin.patch(`/v1/store/orders/${carols[0]}`, { complete: true });

      const mine = await walk(carol.client, '/v1/store/orders?limit=1');
      assert.deepEqual(
        mine.items.map((o: { id: number }) => o.id),
        carols,
      );
      assert.equal(mine.pages, 2);
      assert.deepEqual(
        (await walk(dave.client, '/v1/store/orders')).items.map((o: { id: number }) => o.id),
        daves,
      );

      const open = await carol.client.get('/v1/store/orders?complete=false');
      assert.deepEqual(
        open.body.map((o: { id: number }) => o.id),
        [carols[1]],
      );
      const done = await carol.client.get('/v1/store/orders?complete=true');
      assert.deepEqual(
        done.body.map((o: { id: number }) => o.id),
        [carols[0]],
      );

      const all = await walk(t.admin, `/v1/store/orders?petId=${petId}&limit=2`);
      assert.deepEqual(
        all.items.map((o: { id: number }) => o.id).sort((a: number, b: number) => a - b),
        [...carols, ...daves].sort((a, b) => a - b),
      );
      const staffOpen = await t.admin.get(`/v1/store/orders?petId=${petId}&complete=false`);
      assert.deepEqual(
        staffOpen.body.map((o: { id: number }) => o.id),
        [carols[1], daves[0]],
      );
    });
  });
});
