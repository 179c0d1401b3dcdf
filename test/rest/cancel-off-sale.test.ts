/** The state table of docs/API.md ("States and rules"): a cancelled order puts its pet back on sale, whatever took it off. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { stockOf } from './support.js';

describe('REST store: cancelling an order of a pet staff took off sale', () => {
  let t: TestApp;
  let alice: Client;
  before(async () => {
    t = await startApp();
    alice = (await createAccount(t, { name: 'Alice' })).client;
  });
  after(() => t.close());

  for (const status of ['sold', 'pending'] as const) {
    it(`when staff marks a pet ${status} while an order is open and the owner cancels it, then the units come back and the pet is available`, async () => {
      const { petId, categoryId } = await createPet(t, { stock: 3, name: `Off ${status}` });
      const order = await alice.post('/v1/store/orders', { petId, quantity: 2 });
      assert.equal(order.status, 201, order.text);
      const off = await t.admin.put(`/v1/pets/${petId}`, { name: `Off ${status}`, categoryId, status });
      assert.equal(off.status, 200, off.text);
      assert.deepEqual(await stockOf(t, petId), { quantity: 1, status });
      assert.equal((await alice.delete(`/v1/store/orders/${order.body.id}`)).status, 204);
      assert.deepEqual(await stockOf(t, petId), { quantity: 3, status: 'available' });
      assert.equal((await alice.get(`/v1/pets?ids=${petId}`)).body[0].status, 'available');
      assert.equal((await alice.post('/v1/store/orders', { petId, quantity: 1 })).status, 201, 'it can be ordered again');
    });
  }
});
