/**
 * Subscriptions are no free amplifier: each pushed answer is charged its document's cost less 1 (the
 * event is free, the nested connections resolved for it are not) and shows it in `extensions.cost`;
 * when the account's budget runs out the subscription gets RATE_LIMITED and completes, the socket
 * stays open, and nobody else's budget pays for it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Client as WsClient } from 'graphql-ws';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { eventually, subscribe, wsClient } from './support.js';

/** The heavy selection: 15 aliased `pets(first: 100)` under the pet's category. */
const HEAVY_SELECTION = `category { ${Array.from(
  { length: 15 },
  (_, i) => `a${i}: pets(first: 100) { edges { node { id name status categoryId category { name } inventory { quantity status } } } }`,
).join(' ')} }`;

describe('subscriptions: every pushed answer is charged', () => {
  let t: TestApp;
  const clients: WsClient[] = [];
  before(async () => {
    t = await startApp({ env: { SUBSCRIPTION_POLL_MS: '20' } });
  });
  after(async () => {
    for (const c of clients) await c.dispose();
    await t.close();
  });
  async function freeCustomer(name: string) {
    const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan: 'free' });
    assert.equal(res.status, 201, res.text);
    return { key: res.body.apiKey.key as string, client: new Client(t.url, res.body.apiKey.key) };
  }
  const minuteUsed = async (client: Client): Promise<number> => (await client.get('/v1/rate_limit')).body.resources.minute.used;

  it('when a heavy inventoryChanged subscription is pushed orders, then each answer costs its document less 1 until RATE_LIMITED completes it; the socket and another customer stay untouched', async () => {
    const category = await t.admin.post('/v1/categories', { name: `Amplified ${Math.random()}` });
    const pet = await t.admin.post('/v1/pets', { name: 'Target', categoryId: category.body.id });
    for (let i = 0; i < 5; i++) await t.admin.post('/v1/pets', { name: `Sibling ${i}`, categoryId: category.body.id });
    await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity: 100 });
    const petId = globalId('Pet', pet.body.id);

    // The same selection over HTTP: what its data costs there is what a pushed answer is priced from.
    const twin = await t.admin.graphql(`query($id: ID!) { pet(id: $id) { ${HEAVY_SELECTION} } }`, { id: petId });
    assert.equal(twin.status, 200, twin.text);
    const documentCost = twin.body.extensions.cost.requested as number;
    assert.equal(documentCost, 16);

    const attacker = await freeCustomer('Amplifier');
    const bystander = await freeCustomer('Bystander');
    const ws = wsClient(t.url, attacker.key).client;
    const theirs = wsClient(t.url, bystander.key).client;
    clients.push(ws, theirs);
    const heavy = await subscribe(ws, `subscription($petId: ID) { inventoryChanged(petId: $petId) { pet { ${HEAVY_SELECTION} } } }`, {
      petId,
    });
    // A light subscription on the same socket: one root field, nothing nested, so its pushes are free.
    const light = await subscribe(ws, 'subscription($petId: ID) { inventoryChanged(petId: $petId) { quantity } }', { petId });
    const watching = await subscribe(theirs, 'subscription($petId: ID) { inventoryChanged(petId: $petId) { quantity } }', { petId });
    await eventually(
      'three subscriptions started',
      async () => (await minuteUsed(attacker.client)) === 2 && (await minuteUsed(bystander.client)) === 1,
    );

    // The free plan's 60 points: 2 for starting both, then 15 per heavy answer: three fit (47), the fourth (62) does not.
    const order = async (n: number) => {
      assert.equal((await t.admin.post('/v1/store/orders', { petId: pet.body.id, quantity: 1 })).status, 201);
      await eventually(
        `push ${n}`,
        () => light.results.length >= n && watching.results.length >= n && heavy.results.length >= Math.min(n, 4),
      );
    };
    for (let n = 1; n <= 3; n++) await order(n);
    assert.deepEqual(
      heavy.results.map((r) => r.extensions?.cost),
      Array(3).fill({ requested: documentCost, charged: documentCost - 1 }),
    );
    assert.equal(heavy.results[0].data.inventoryChanged.pet.category.a14.edges.length, 6);
    assert.equal(await minuteUsed(attacker.client), 2 + 3 * (documentCost - 1));

    await order(4);
    await eventually('the heavy subscription completes', () => heavy.completed);
    const last = heavy.results[3];
    assert.equal(last.data, undefined);
    assert.deepEqual([last.errors[0].extensions.code, last.errors[0].extensions.status], ['RATE_LIMITED', 429]);
    assert.ok(last.errors[0].extensions.retryAfter >= 1, JSON.stringify(last));
    assert.deepEqual(heavy.errors, []);
    // The refused answer cost nothing.
    assert.equal(await minuteUsed(attacker.client), 2 + 3 * (documentCost - 1));

    // The socket stays open: the light subscription on it goes on, for free.
    await order(5);
    assert.equal(heavy.results.length, 4);
    assert.deepEqual(
      light.results.map((r) => r.extensions?.cost),
      Array(5).fill({ requested: 1, charged: 0 }),
    );
    assert.equal(light.completed, false);
    // Another customer following the same pet paid for starting its subscription, nothing else.
    assert.equal(await minuteUsed(bystander.client), 1);
  });
});
