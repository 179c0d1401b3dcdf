/**
 * GraphQL subscriptions beyond the free plan's cap (docs/EVENTS.md, "Plan caps"), and orderUpdated narrowed
 * to one order.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { eventually, subscribe, wsClient } from './support.js';

const INVENTORY = 'subscription { inventoryChanged { quantity } }';

describe('subscriptions: the pro cap and one order followed', () => {
  let t: TestApp;
  const sockets: Array<{ client: { dispose(): void } }> = [];
  before(async () => {
    t = await startApp();
  });
  after(async () => {
    for (const s of sockets) s.client.dispose();
    await t.close();
  });

  it('when a pro account opens 11 subscriptions, then 10 run and the 11th is PLAN_LIMIT_REACHED (409)', async () => {
    const { key } = await createAccount(t, { name: 'Pro watcher', plan: 'pro' });
    const ws = wsClient(t.url, key);
    sockets.push(ws);
    const open = [];
    for (let i = 0; i < 10; i++) open.push(await subscribe(ws.client, INVENTORY));
    for (const [i, sub] of open.entries()) assert.deepEqual(sub.errors, [], `subscription ${i + 1}`);
    const over = await subscribe(ws.client, INVENTORY);
    assert.equal(over.errors.length, 1, 'the 11th is refused');
    const [error] = over.errors[0] as Array<{ extensions: { code: string; status: number } }>;
    assert.deepEqual({ code: error!.extensions.code, status: error!.extensions.status }, { code: 'PLAN_LIMIT_REACHED', status: 409 });
    // Completing one frees its place.
    open[0]!.dispose();
    const again = await subscribe(ws.client, INVENTORY);
    assert.deepEqual(again.errors, []);
  });

  it("when a customer follows one of its orders with orderUpdated(id:), then it gets that order's events only, and another customer following it gets none", async () => {
    const alice = await createAccount(t, { name: 'Alice', plan: 'pro' });
    const bob = await createAccount(t, { name: 'Bob', plan: 'pro' });
    const { petId } = await createPet(t, { stock: 10 });
    const followed = (await alice.client.post('/v1/store/orders', { petId, quantity: 1 })).body;
    const other = (await alice.client.post('/v1/store/orders', { petId, quantity: 1 })).body;
    const query = 'subscription($id: ID) { orderUpdated(id: $id) { type databaseId } }';
    const aliceWs = wsClient(t.url, alice.key);
    const bobWs = wsClient(t.url, bob.key);
    sockets.push(aliceWs, bobWs);
    const mine = await subscribe(aliceWs.client, query, { id: globalId('Order', followed.id) });
    const spy = await subscribe(bobWs.client, query, { id: globalId('Order', followed.id) });
    assert.equal((await t.admin.patch(`/v1/store/orders/${other.id}`, { complete: true })).status, 200);
    assert.equal((await t.admin.patch(`/v1/store/orders/${followed.id}`, { complete: true })).status, 200);
    await eventually('the followed order is pushed', async () => (mine.results.length > 0 ? true : null));
    // The other order completed first: had it been pushed, it would have arrived before.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const feed = (await alice.client.get('/v1/events?types=order.completed')).body as Array<{ id: number; data: { id: number } }>;
    const event = feed.find((e) => e.data.id === followed.id)!;
    assert.deepEqual(
      mine.results.map((r) => r.data.orderUpdated),
      [{ type: 'order.completed', databaseId: event.id }],
    );
    assert.deepEqual(spy.results, [], "another customer's subscription gets nothing of Alice's order");
  });
});
