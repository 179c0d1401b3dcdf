/**
 * GraphQL subscriptions over graphql-ws on /graphql: the key in connection_init, visibility (a
 * customer never receives another customer's order events), per-plan caps, and what they cost.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Client as WsClient } from 'graphql-ws';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { eventually, openSubscriptions, subscribe, wsClient, type Subscription } from './support.js';
import { sample, startService } from '../ops/support.js';
import { freePort, startRedis, stopRedis } from '../rate-limit/redis-server.js';
import { WebSocket } from 'ws';

describe('subscriptions: graphql-ws on /graphql', () => {
  let t: TestApp;
  const clients: WsClient[] = [];
  const connect = (key: string | null) => {
    const c = wsClient(t.url, key);
    clients.push(c.client);
    return c;
  };
  async function customer(name: string, plan = 'pro') {
    const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan });
    return { client: new Client(t.url, res.body.apiKey.key), key: res.body.apiKey.key as string };
  }
  async function petInStock(quantity: number) {
    const cat = await t.admin.post('/v1/categories', { name: `Subs ${Math.random()}` });
    const pet = await t.admin.post('/v1/pets', { name: 'Subby', categoryId: cat.body.id });
    await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity });
    return pet.body.id as number;
  }

  before(async () => {
    t = await startApp({ env: { SUBSCRIPTION_POLL_MS: '20' } });
  });
  after(async () => {
    for (const c of clients) await c.dispose();
    await t.close();
  });

  it("when customers and staff subscribe to orderUpdated, then each receives its own orders' events, never another customer's", async () => {
    const alice = await customer('Alice');
    const bob = await customer('Bob');
    const query = 'subscription { orderUpdated { id type data { ... on Order { id: databaseId petId quantity complete } } } }';
    const [subA, subB, subStaff] = await Promise.all([
      subscribe(connect(alice.key).client, query),
      subscribe(connect(bob.key).client, query),
      subscribe(connect(t.adminKey).client, query),
    ]);
    // subscribe() resolves once the instance counts each one open (its gauge): all three listen before anything commits.
    const petId = await petInStock(5);
    const hers = (await alice.client.post('/v1/store/orders', { petId, quantity: 1 })).body;
    const his = (await bob.client.post('/v1/store/orders', { petId, quantity: 2 })).body;
    await t.admin.patch(`/v1/store/orders/${hers.id}`, { complete: true });
    await eventually('staff sees three events', () => subStaff.results.length >= 3);
    await eventually('alice sees two events', () => subA.results.length >= 2);
    await new Promise((r) => setTimeout(r, 100));
    const seen = (s: { results: any[] }) => s.results.map((r) => `${r.data.orderUpdated.type} ${r.data.orderUpdated.data.id}`);
    assert.deepEqual(seen(subA), [`order.placed ${hers.id}`, `order.completed ${hers.id}`]);
    assert.deepEqual(seen(subB), [`order.placed ${his.id}`]);
    assert.deepEqual(seen(subStaff), [`order.placed ${hers.id}`, `order.placed ${his.id}`, `order.completed ${hers.id}`]);
    assert.deepEqual(subA.results[0].data.orderUpdated.data, { id: hers.id, petId: globalId('Pet', petId), quantity: 1, complete: false });
    for (const s of [subA, subB, subStaff]) s.dispose();
  });

  it('when a subscriber follows one pet with inventoryChanged(petId) and events(types), then it receives that stock after each change', async () => {
    const buyer = await customer('Stock watcher');
    const petId = await petInStock(3);
    const other = await petInStock(3);
    const ws = connect(buyer.key).client;
    const stock = await subscribe(ws, 'subscription($petId: ID) { inventoryChanged(petId: $petId) { petId quantity status } }', {
      petId: globalId('Pet', petId),
    });
    const catalogue = await subscribe(ws, 'subscription { events(types: ["pet.*"]) { type data { ... on Pet { name } } } }');
    await buyer.client.post('/v1/store/orders', { petId, quantity: 3 });
    await buyer.client.post('/v1/store/orders', { petId: other, quantity: 1 });
    await t.admin.post('/v1/pets', { name: 'Newcomer', categoryId: (await t.admin.get(`/v1/pets?ids=${petId}`)).body[0].categoryId });
    await eventually('the stock change', () => stock.results.length >= 1);
    await eventually('the new pet', () => catalogue.results.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(
      stock.results.map((r) => r.data.inventoryChanged),
      [{ petId: globalId('Pet', petId), quantity: 0, status: 'pending' }],
    );
    assert.deepEqual(
      catalogue.results.map((r) => r.data.events),
      [{ type: 'pet.created', data: { name: 'Newcomer' } }],
    );
    stock.dispose();
    catalogue.dispose();
  });

  it('when connection_init carries no key or an unknown one, then the socket is closed with 4403 and a reason naming the code', async () => {
    for (const [key, reason] of [
      [null, /^UNAUTHENTICATED: send your API key in connection_init/],
      ['psk_this-key-does-not-exist-0000000', /^INVALID_API_KEY: the API key is unknown or revoked\.$/],
    ] as const) {
      const { client, closed } = connect(key);
      const sub = client.subscribe(
        { query: 'subscription { events { id } }' },
        { next: () => undefined, error: () => undefined, complete: () => undefined },
      );
      const event = await closed;
      assert.equal(event.code, 4403, `key ${key}`);
      assert.match(event.reason, reason);
      sub();
    }
  });

  it('when connection_init names the key header in another case (X-Api-Key), then it is accepted, as the HTTP header is', async () => {
    const buyer = await customer('Any case');
    const { client } = wsClient(t.url, { 'X-Api-Key': buyer.key });
    clients.push(client);
    const sub = await subscribe(client, 'subscription { events { id } }');
    assert.deepEqual(sub.errors, []);
    sub.dispose();
  });

  it('when an account opens more WebSocket connections than its cap (16 on the free plan), then the next is closed with 4429, and closing one frees a place', async () => {
    const { key } = await customer('Socket hoarder', 'free');
    const sockets: WebSocket[] = [];
    /** A raw socket's first answer to connection_init: acknowledged, or closed with a code and reason. */
    const open = (withKey = key) =>
      new Promise<{ ws: WebSocket; ack: boolean; code?: number; reason?: string }>((resolve) => {
        const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
        sockets.push(ws);
        ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': withKey } })));
        ws.on('message', (raw) => JSON.parse(String(raw)).type === 'connection_ack' && resolve({ ws, ack: true }));
        ws.on('close', (code, reason) => resolve({ ws, ack: false, code, reason: String(reason) }));
      });
    try {
      const first = await Promise.all(Array.from({ length: 16 }, () => open()));
      assert.deepEqual(
        first.map((s) => s.ack),
        Array(16).fill(true),
      );
      const refused = await open();
      assert.deepEqual({ ack: refused.ack, code: refused.code }, { ack: false, code: 4429 });
      assert.match(refused.reason!, /^PLAN_LIMIT_REACHED: this account has 16 connections open/);
      // Another account is not affected by this one's sockets.
      assert.equal((await open(t.adminKey)).ack, true);
      const gone = new Promise((r) => first[0]!.ws.once('close', r));
      first[0]!.ws.close();
      await gone;
      await eventually('a place again', async () => (await open()).ack, 100, 20);
    } finally {
      for (const ws of sockets) ws.terminate();
    }
  });

  it("when a free account opens more subscriptions than its plan's 2, then the third is PLAN_LIMIT_REACHED, and completing one frees a place", async () => {
    const free = await customer('Free watcher', 'free');
    const ws = connect(free.key).client;
    const first = await subscribe(ws, 'subscription { events { id } }');
    const second = await subscribe(ws, 'subscription { events { id } }');
    const third = await subscribe(ws, 'subscription { events { id } }');
    assert.equal(third.errors.length, 1, JSON.stringify(third));
    assert.deepEqual(
      { ...(third.errors[0] as any[])[0].extensions, requestId: undefined },
      { code: 'PLAN_LIMIT_REACHED', status: 409, requestId: undefined },
    );
    // A refused subscribe costs 1 point, as the same refusal of a webhook endpoint through REST: a flood meets the limit.
    const left = async () => (await free.client.get('/v1/rate_limit')).body.resources.minute.remaining as number;
    const before = await left();
    const again = await subscribe(ws, 'subscription { events { id } }');
    assert.equal((again.errors[0] as any[])[0].extensions.code, 'PLAN_LIMIT_REACHED');
    assert.equal(await left(), before - 1);
    first.dispose();
    await eventually('the first place given back', async () => (await openSubscriptions(t.url)) === 1);
    const fourth = await subscribe(ws, 'subscription { events { id } }');
    assert.deepEqual(fourth.errors, []);
    second.dispose();
    fourth.dispose();
  });

  it('when an enterprise account has its own cap of 3 subscriptions, then the fourth is PLAN_LIMIT_REACHED (409)', async () => {
    const res = await t.admin.post('/v1/accounts', {
      name: 'Big watcher',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1000, perDay: 10000, subscriptions: 3 },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.limits.subscriptions, 3);
    const ws = connect(res.body.apiKey.key).client;
    const open = [];
    for (let i = 0; i < 3; i++) open.push(await subscribe(ws, 'subscription { events { id } }'));
    assert.deepEqual(
      open.flatMap((s) => s.errors),
      [],
      'three are allowed',
    );
    const fourth = await subscribe(ws, 'subscription { events { id } }');
    assert.deepEqual(
      { ...(fourth.errors[0] as any[])[0].extensions, requestId: undefined },
      { code: 'PLAN_LIMIT_REACHED', status: 409, requestId: undefined },
    );
    for (const s of open) s.dispose();
  });

  /** A document whose every pushed answer costs 1 (its cost, 2, less the free event). */
  const HEAVY = 'subscription { inventoryChanged { quantity pet { category { pets(first: 5) { edges { node { id } } } } } } }';

  it('when a client reuses a subscription id before the server has let go of it (subscribe, complete, subscribe at once), then the socket closes 4409 and nothing of it runs on, charges or holds a slot', async () => {
    const free = await customer('Reuser', 'free');
    const left = async () => (await free.client.get('/v1/rate_limit')).body.resources.minute.remaining as number;
    const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve) => ws.on('open', resolve));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': free.key } }));
    await new Promise((resolve) => ws.once('message', resolve));
    const start = JSON.stringify({ id: 'a', type: 'subscribe', payload: { query: HEAVY } });
    ws.send(start);
    ws.send(JSON.stringify({ id: 'a', type: 'complete' }));
    ws.send(start);
    const code = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve('still open after 5 s'), 5000))]);
    ws.terminate();
    assert.equal(code, 4409);
    // Nothing kept running: a stock change charges nothing, and both of the plan's places are free.
    const before = await left();
    await petInStock(7);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await left(), before - 0, 'no push was charged after the socket closed');
    const fresh = connect(free.key).client;
    const both = [await subscribe(fresh, 'subscription { events { id } }'), await subscribe(fresh, 'subscription { events { id } }')];
    assert.deepEqual(
      both.flatMap((sub) => sub.errors),
      [],
      'the plan allows two, and none is held',
    );
    for (const sub of both) sub.dispose();
  });

  it("when the account's budget runs out under its subscriptions' pushes, then those pushes are refused but never get its key banned", async () => {
    const res = await t.admin.post('/v1/accounts', {
      name: 'Pushed past its budget',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 15, perDay: 1000, subscriptions: 20 },
    });
    const key = res.body.apiKey.key as string;
    const { client: ws, closed } = connect(key);
    const subs: Subscription[] = [];
    for (let i = 0; i < 14; i++) subs.push(await subscribe(ws, HEAVY));
    assert.deepEqual(
      subs.flatMap((sub) => sub.errors),
      [],
    );
    // 14 started (14 points), 1 left: one stock change pushes 14 answers, 13 of them refused (BAN_THRESHOLD is 10).
    await petInStock(3);
    await eventually('every subscription answered the change or was refused', () =>
      subs.every((sub) => sub.completed || sub.results.length > 0),
    );
    const refused = subs.filter((sub) => sub.results.at(-1)?.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
    assert.ok(refused.length >= 11, `refused pushes: ${refused.length}`);
    const after = await new Client(t.url, key).get('/v1/account');
    assert.equal(after.status, 429);
    assert.equal(after.body.code, 'RATE_LIMITED', 'limited, not banned');
    const outcome = await Promise.race([closed, new Promise((resolve) => setTimeout(() => resolve('open'), 300))]);
    assert.equal(outcome, 'open', 'the socket stays open');
    for (const sub of subs) sub.dispose();
  });

  it('when a subscription starts it costs 1 point, and the events it pushes cost nothing', async () => {
    const buyer = await customer('Counted');
    const remaining = async () => (await buyer.client.get('/v1/rate_limit')).body.resources.day.remaining as number;
    const before = await remaining();
    const sub = await subscribe(connect(buyer.key).client, 'subscription { events(types: ["category.created"]) { id } }');
    assert.equal(await remaining(), before - 1);
    for (let i = 0; i < 3; i++) await t.admin.post('/v1/categories', { name: `Free push ${i}` });
    await eventually('three pushed events', () => sub.results.length >= 3);
    assert.equal(await remaining(), before - 1);
    sub.dispose();
  });

  it('when the account runs over its rate limit on an open connection, then starting a subscription is refused with RATE_LIMITED (429) and its retryAfter', async () => {
    const free = await customer('Spent', 'free');
    // Connected first: a key already over its limit is refused at connection_init (subscription-sockets.test.ts).
    const { client } = connect(free.key);
    await new Promise((resolve) => client.on('connected', resolve));
    for (let i = 0; i < 60; i++) assert.equal((await free.client.get('/v1/account')).status, 200);
    const refused = await subscribe(client, 'subscription { events { id } }');
    const extensions = (refused.errors[0] as any[])[0].extensions;
    assert.deepEqual([extensions.code, extensions.status], ['RATE_LIMITED', 429]);
    assert.ok(extensions.retryAfter >= 1, JSON.stringify(extensions));
  });

  it('when a subscription is POSTed over HTTP, then it is VALIDATION_FAILED (400) pointing to graphql-ws', async () => {
    const res = await t.admin.graphql('subscription { events { id } }');
    assert.equal(res.status, 400);
    assert.equal(res.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    assert.match(res.body.errors[0].message, /graphql-ws/);
  });

  it('when a query or an invalid subscription is sent over the socket, then it is VALIDATION_FAILED and nothing runs', async () => {
    const ws = connect(t.adminKey).client;
    // subscribe() resolves on the answer; each wait says which one is expected.
    const answered = (sub: Awaited<ReturnType<typeof subscribe>>) =>
      eventually('the answer', () => sub.errors.length + sub.results.length > 0);
    const query = await subscribe(ws, '{ viewer { id } }');
    await answered(query);
    assert.equal((query.errors[0] as any[])[0].extensions.code, 'VALIDATION_FAILED');
    const badType = await subscribe(ws, 'subscription { events(types: ["order.shipped"]) { id } }');
    await answered(badType);
    const errors = badType.results[0]?.errors ?? badType.errors[0];
    assert.equal(errors[0].extensions.code, 'VALIDATION_FAILED', JSON.stringify(badType));
    const badId = await subscribe(ws, 'subscription { inventoryChanged(petId: "abc") { petId } }');
    await answered(badId);
    const { requestId, ...extensions } = (badId.results[0]?.errors ?? badId.errors[0])[0].extensions;
    assert.deepEqual(extensions, {
      code: 'VALIDATION_FAILED',
      status: 400,
      details: [{ path: 'petId', message: 'must be a global id' }],
    });
    assert.match(requestId, /^[0-9a-f-]{36}$/, 'every error carries its requestId');
  });

  it('when a variable does not fit its type, then it is VALIDATION_FAILED with a requestId, never INTERNAL', async () => {
    const buyer = await customer('Variable sender');
    const ws = connect(buyer.key).client;
    const sub = await subscribe(ws, 'subscription($t: [String!]) { events(types: $t) { id } }', { t: 5 });
    await eventually('the answer', () => sub.errors.length + sub.results.length > 0);
    const errors = sub.results[0]?.errors ?? sub.errors[0];
    assert.equal(errors[0].extensions.code, 'VALIDATION_FAILED', JSON.stringify(sub));
    assert.match(errors[0].message, /String cannot represent/);
    assert.match(errors[0].extensions.requestId, /^[0-9a-f-]{36}$/);
  });

  it("when a subscriber's key is revoked, or its staff account demoted, then it stops receiving what the key may no longer see", async () => {
    const staff = await t.admin.post('/v1/accounts', { name: `Soon demoted ${Math.random()}`, role: 'staff', plan: 'pro' });
    const watcher = await customer('Soon revoked');
    const buyer = await customer('Buyer of record');
    const query = 'subscription { orderUpdated { type data { ... on Order { id } } } }';
    const ws = connect(staff.body.apiKey.key).client;
    const [asStaff, asWatcher] = await Promise.all([
      subscribe(ws, query),
      subscribe(connect(watcher.key).client, 'subscription { events { type } }'),
    ]);
    const petId = await petInStock(5);
    await buyer.client.post('/v1/store/orders', { petId, quantity: 1 });
    await eventually('the staff subscriber sees the order', () => asStaff.results.length >= 1);
    await eventually('the customer sees the stock change', () => asWatcher.results.length >= 1);
    assert.equal((await t.admin.patch(`/v1/accounts/${staff.body.id}`, { role: 'customer' })).status, 200);
    const watcherId = (await watcher.client.get('/v1/account')).body.id;
    const [watcherKey] = (await t.admin.get(`/v1/accounts/${watcherId}/api-keys`)).body;
    assert.equal((await t.admin.delete(`/v1/api-keys/${watcherKey.id}`)).status, 204);
    const before = { staff: asStaff.results.length, watcher: asWatcher.results.length };
    await buyer.client.post('/v1/store/orders', { petId, quantity: 1 });
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(
      asStaff.results.length,
      before.staff,
      `a demoted account sees no other customer's order: ${JSON.stringify(asStaff.results)}`,
    );
    assert.equal(asWatcher.results.length, before.watcher, `a revoked key receives nothing more: ${JSON.stringify(asWatcher.results)}`);
    // Ended by the server: completed, or its socket closed (4403) with the revoke.
    await eventually('the revoked subscription ends', () => asWatcher.completed || asWatcher.errors.length > 0);
    asStaff.dispose();
  });
});

describe('subscriptions: unknown keys in connection_init count against the failed-authentication limiter', () => {
  it('when an address sends unknown keys over WebSocket past AUTH_FAILURES_PER_MINUTE, then its unknown keys are refused on HTTP too, and a valid key still works', async () => {
    const t = await startApp({ env: { AUTH_FAILURES_PER_MINUTE: '3' } });
    try {
      for (let i = 0; i < 4; i++) {
        const { client, closed } = wsClient(t.url, `psk_guess-${i}-${'x'.repeat(30)}`);
        const dispose = client.subscribe(
          { query: 'subscription { events { id } }' },
          { next: () => undefined, error: () => undefined, complete: () => undefined },
        );
        assert.equal((await closed).code, 4403);
        dispose();
        await client.dispose();
      }
      const guessed = await t.anonymous.get('/v1/account', { key: `psk_guess-http-${'x'.repeat(30)}` });
      assert.equal(guessed.status, 429, guessed.text);
      assert.equal(guessed.body.code, 'RATE_LIMITED');
      assert.equal((await t.admin.get('/v1/account')).status, 200);
    } finally {
      await t.close();
    }
  });
});

describe('subscriptions: the plan cap holds against concurrent subscribes when the charge is a Redis round trip', () => {
  it('when a free account starts 12 subscriptions at once on 12 sockets, then 2 run and 10 are PLAN_LIMIT_REACHED', async () => {
    const redis = await startRedis(await freePort());
    const port = redis.spawnargs[redis.spawnargs.indexOf('--port') + 1]!;
    // A process of its own (as in production): the subscribes then arrive while earlier charges are in flight.
    const service = await startService({ REDIS_URL: `redis://127.0.0.1:${port}` });
    const t = { url: service.url, admin: new Client(service.url, service.key), anonymous: new Client(service.url, null) };
    const sockets: WebSocket[] = [];
    try {
      const res = await t.admin.post('/v1/accounts', { name: 'Eager subscriber', role: 'customer', plan: 'free' });
      const key = res.body.apiKey.key as string;
      const refused: string[] = [];
      // Raw sockets, each subscribing the moment it is acknowledged: the subscribes arrive together.
      await Promise.all(
        Array.from(
          { length: 12 },
          () =>
            new Promise<void>((resolve) => {
              const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
              sockets.push(ws);
              ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': key } })));
              ws.on('message', (raw) => {
                const message = JSON.parse(String(raw));
                if (message.type === 'connection_ack') {
                  ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { events { id } }' } }));
                  resolve();
                } else if (message.type === 'error') refused.push(message.payload[0].extensions.code);
              });
              ws.on('close', () => resolve());
            }),
        ),
      );
      // Every subscribe taken: refused, or open (graphql-ws acknowledges no subscription; the gauge counts it).
      await eventually('all 12 subscribes answered or open', async () => refused.length + (await openSubscriptions(t.url)) >= 12, 50, 400);
      const metrics = (await t.anonymous.get('/metrics', { skipContract: true })).text;
      assert.equal(sample(metrics, 'petstore_graphql_subscriptions'), 2, `refused: ${refused.join(', ')}`);
      assert.deepEqual(refused, Array(10).fill('PLAN_LIMIT_REACHED'));
    } finally {
      for (const ws of sockets) ws.terminate();
      service.child.kill('SIGKILL');
      await service.exited;
      service.cleanup();
      await stopRedis(redis);
    }
  });
});
