import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rejectsWith, startDomain, type DomainFixture } from './support.js';

/** The order and inventory state machine, straight against the domain services (no HTTP). */
describe('domain: orders and inventory', () => {
  let f: DomainFixture;
  let n = 0;
  before(async () => {
    f = await startDomain();
  });
  after(() => f?.close());

  async function pet(stock: number) {
    const { categories, pets, store } = f.domain();
    const category = await categories.createCategory(f.staff, { name: `Dogs ${++n}` });
    const created = await pets.createPet(f.staff, { name: 'Rex', categoryId: category.id });
    if (stock !== 1) await store.setInventory(f.staff, created.id, stock);
    return created.id;
  }

  it('when an order takes the last unit, then stock is 0 and the pet is pending; completing it makes the pet sold', async () => {
    const petId = await pet(1);
    const { order } = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 });
    assert.deepEqual(await f.domain().store.getInventory(petId), { petId, quantity: 0, status: 'pending' });
    const done = await f.domain().store.completeOrder(f.staff, order.id);
    assert.equal(done.complete, true);
    assert.ok(done.shipDate instanceof Date);
    assert.equal((await f.domain().store.getInventory(petId)).status, 'sold');
  });

  it('when an open order is cancelled, then its units come back, the pet is available again and the order is gone', async () => {
    const petId = await pet(2);
    const { order } = await f.domain().store.placeOrder(f.customer, { petId, quantity: 2 });
    await f.domain().store.cancelOrder(f.customer, order.id);
    assert.deepEqual(await f.domain().store.getInventory(petId), { petId, quantity: 2, status: 'available' });
    await rejectsWith(f.domain().store.getOrder(f.customer, order.id), 'NOT_FOUND');
    await rejectsWith(f.domain().store.cancelOrder(f.customer, order.id), 'NOT_FOUND');
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 2);
  });

  it('when more is ordered than is in stock, then INSUFFICIENT_STOCK and nothing changes', async () => {
    const petId = await pet(3);
    await rejectsWith(f.domain().store.placeOrder(f.customer, { petId, quantity: 4 }), 'INSUFFICIENT_STOCK');
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 3);
  });

  it('when a pet is not available, then ordering it is PET_NOT_AVAILABLE', async () => {
    const petId = await pet(0);
    assert.equal((await f.domain().store.getInventory(petId)).status, 'sold');
    await rejectsWith(f.domain().store.placeOrder(f.customer, { petId, quantity: 1 }), 'PET_NOT_AVAILABLE');
  });

  it('when stock is set to 0 while an order is open, then the pet is pending, not sold', async () => {
    const petId = await pet(2);
    await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 });
    assert.equal((await f.domain().store.setInventory(f.staff, petId, 0)).status, 'pending');
  });

  it("when a customer reads another account's order, then it is NOT_FOUND (never FORBIDDEN), and staff sees it", async () => {
    const petId = await pet(1);
    const { order } = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 });
    await rejectsWith(f.domain().store.getOrder(f.stranger, order.id), 'NOT_FOUND');
    await rejectsWith(f.domain().store.cancelOrder(f.stranger, order.id), 'NOT_FOUND');
    assert.equal((await f.domain().store.getOrder(f.staff, order.id)).id, order.id);
    const mine = await f.domain().store.listOrders(f.stranger, {}, {});
    assert.ok(mine.items.every((o) => o.accountId === f.stranger.accountId));
  });

  it('when a completed order is cancelled, then ORDER_NOT_OPEN and the stock stays', async () => {
    const petId = await pet(2);
    const { order } = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 });
    await f.domain().store.completeOrder(f.staff, order.id);
    await rejectsWith(f.domain().store.cancelOrder(f.customer, order.id), 'ORDER_NOT_OPEN');
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 1);
  });

  it('when a customer completes an order or sets stock, then FORBIDDEN and nothing changes', async () => {
    const petId = await pet(2);
    const { order } = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 });
    await rejectsWith(f.domain().store.completeOrder(f.customer, order.id), 'FORBIDDEN');
    await rejectsWith(f.domain().store.setInventory(f.customer, petId, 50), 'FORBIDDEN');
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 1);
  });

  it('when the same idempotency key is replayed, then the first order comes back and no second one is placed; another payload is IDEMPOTENCY_KEY_REUSED', async () => {
    const petId = await pet(5);
    const first = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 }, 'domain-key-1');
    const again = await f.domain().store.placeOrder(f.customer, { petId, quantity: 1 }, 'domain-key-1');
    assert.equal(again.replayed, true);
    assert.equal(again.order.id, first.order.id);
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 4);
    await rejectsWith(f.domain().store.placeOrder(f.customer, { petId, quantity: 2 }, 'domain-key-1'), 'IDEMPOTENCY_KEY_REUSED');
  });

  it('when 20 orders of one unit race for 5 in stock, then exactly 5 succeed and stock ends at 0', async () => {
    const petId = await pet(5);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => f.domain().store.placeOrder(f.customer, { petId, quantity: 1 })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
    assert.equal((await f.domain().store.getInventory(petId)).quantity, 0);
  });
});
