/**
 * Webhooks that no account can turn against the others: a receiver that never answers holds only its
 * own endpoint's queue (one attempt at a time), an account gets at most its share of the worker's
 * places, redelivery costs 1, queues one delivery at most and refuses a disabled endpoint. Real
 * receivers on 127.0.0.1, the real app (SQLite, or PostgreSQL under `npm run test:postgres`), and two
 * instances on one PostgreSQL database for the queue's lease.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { assertError, walk } from '../rest/support.js';
import { onOwnPostgres, redisUrl } from '../helpers/services.js';
import { eventually, startHangingReceiver, startReceiver, verified, type HangingReceiver, type Receiver } from './support.js';

async function customer(t: TestApp, name: string, plan = 'pro') {
  const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan });
  assert.equal(res.status, 201, res.text);
  return new Client(t.url, res.body.apiKey.key);
}

async function petInStock(t: TestApp, quantity = 1000) {
  const cat = await t.admin.post('/v1/categories', { name: `Cat ${randomBytes(4).toString('hex')}` });
  const pet = await t.admin.post('/v1/pets', { name: 'Isolated', categoryId: cat.body.id });
  await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity });
  return pet.body.id as number;
}

/** Places an order as `buyer` and returns how long its order.placed webhook took to reach `receiver` (ms from the event's commit). */
async function orderDeliveredTo(buyer: Client, petId: number, receiver: Receiver, secret: string) {
  const order = (await buyer.post('/v1/store/orders', { petId, quantity: 1 })).body;
  const got = await eventually('the order.placed delivery', () =>
    receiver.received.find((r) => {
      try {
        const event = verified(secret, r);
        return event.type === 'order.placed' && event.data.id === order.id;
      } catch {
        return false;
      }
    }),
  );
  const event = verified(secret, got);
  return got.at - Date.parse(event.createdAt);
}

// Attempts to the hanging receiver last a minute: far beyond these tests, so whatever arrives elsewhere arrived while they were held.
const HANGING_ENV = { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '60000' };

describe("webhooks: one account's hanging receiver delays no other account's deliveries", () => {
  let t: TestApp;
  let hanging: HangingReceiver;
  let healthy: Receiver;

  before(async () => {
    t = await startApp({ env: HANGING_ENV });
    hanging = await startHangingReceiver();
    healthy = await startReceiver();
  });
  after(async () => {
    await t.close();
    await hanging.close();
    await healthy.close();
  });

  it("when a free account's endpoint never answers, is fed everyone's inventory.changed and gets 40 redeliveries, then another account's order.placed still arrives while that attempt is held", async (ctx) => {
    const petId = await petInStock(t);
    const attacker = await customer(t, 'Hanging', 'free');
    const trap = (await attacker.post('/v1/webhooks', { url: hanging.url, events: ['inventory.changed', 'order.placed'] })).body;
    await attacker.post('/v1/store/orders', { petId, quantity: 1 });
    await eventually('the first attempt held by the hanging receiver', () => hanging.open() === 1);
    const log = (await attacker.get(`/v1/webhooks/${trap.id}/deliveries`)).body;
    assert.ok(log.length >= 1);
    for (let i = 0; i < 40; i++) {
      const res = await attacker.post(`/v1/webhooks/${trap.id}/deliveries/${log[i % log.length].id}/redeliver`);
      assert.equal(res.status, 202, res.text);
    }

    const victim = await customer(t, 'Victim', 'pro');
    const hook = (await victim.post('/v1/webhooks', { url: healthy.url, events: ['order.placed'] })).body;
    const lags = [];
    for (let i = 0; i < 5; i++) lags.push(await orderDeliveredTo(victim, petId, healthy, hook.secret));
    ctx.diagnostic(`the other account's order.placed arrived ${lags.join(', ')} ms after its commit`);
    // The victim's orders fed the trap too (inventory.changed), yet it still holds one attempt: its own queue waits behind it.
    assert.equal(hanging.open(), 1, 'one attempt at a time to the hanging endpoint');
    assert.equal(hanging.received.length, 1, 'nothing else was sent to it meanwhile');
    const pending = (await walk(attacker, `/v1/webhooks/${trap.id}/deliveries`)).items.filter((d) => d.status === 'pending');
    assert.ok(pending.length >= 6, `its queue holds the rest (${pending.length} pending)`);
  });
});

describe("webhooks: an account gets at most its share of the worker's places", () => {
  it('when a business account has 4 hanging endpoints and its share is 2 of 3 places, then 2 are attempted, and another account is served beside them', async () => {
    const t = await startApp({ env: { ...HANGING_ENV, WEBHOOK_CONCURRENCY: '3', WEBHOOK_ACCOUNT_CONCURRENCY: '2' } });
    const hanging = await startHangingReceiver();
    const healthy = await startReceiver();
    try {
      const petId = await petInStock(t);
      const big = await customer(t, 'Many endpoints', 'business');
      for (let i = 0; i < 4; i++)
        assert.equal((await big.post('/v1/webhooks', { url: `${hanging.url}?n=${i}`, events: ['order.placed'] })).status, 201);
      await big.post('/v1/store/orders', { petId, quantity: 1 });
      await eventually('two attempts held', () => hanging.open() === 2);
      const victim = await customer(t, 'Beside', 'pro');
      const hook = (await victim.post('/v1/webhooks', { url: healthy.url, events: ['order.placed'] })).body;
      await orderDeliveredTo(victim, petId, healthy, hook.secret);
      assert.equal(hanging.open(), 2, 'the business account still holds its share, no more');
      assert.equal(hanging.received.length, 2);
    } finally {
      await t.close();
      await hanging.close();
      await healthy.close();
    }
  });
});

describe("webhooks: an account's hanging receivers delay its other endpoints by one timeout at most", () => {
  it("when 8 of a business account's endpoints hang (its whole share of places) with events queued, then its healthy endpoint gets a place once the first attempt times out, not after their turns of 10", async () => {
    const t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_POLL_MS: '20' } });
    const hanging = await startHangingReceiver();
    const healthy = await startReceiver();
    try {
      const big = await customer(t, 'Mostly hanging', 'business');
      for (let i = 0; i < 8; i++)
        assert.equal((await big.post('/v1/webhooks', { url: `${hanging.url}?n=${i}`, events: ['category.created'] })).status, 201);
      const hook = (await big.post('/v1/webhooks', { url: healthy.url, events: ['category.created'] })).body;
      // Six events: each hanging endpoint has six attempts due, which took its place for six timeouts in a row.
      for (let i = 0; i < 6; i++) await t.admin.post('/v1/categories', { name: `Queued ${i} ${randomBytes(3).toString('hex')}` });
      await eventually('the healthy endpoint served', () => healthy.received.length === 6, 100, 300);
      // Counted in attempts, not time (a busy machine stretches both): by the healthy endpoint's first delivery, the
      // hanging ones had made about one attempt each, not a turn of six.
      const before = hanging.received.filter((r) => r.at <= healthy.received[0]!.at).length;
      assert.ok(before <= 16, `${before} attempts to the hanging endpoints came before the healthy one's first (one each is 8)`);
      // Later events, one at a time: the hanging endpoints' older ones are still due, yet the healthy endpoint
      // (its last attempt a success) comes first for the next place each time.
      for (let i = 0; i < 3; i++) {
        const attemptsBefore = hanging.received.length;
        await t.admin.post('/v1/categories', { name: `Later ${i} ${randomBytes(3).toString('hex')}` });
        await eventually(`later event ${i}`, () => healthy.received.length === 7 + i, 100, 300);
        const meanwhile = hanging.received.filter((r) => r.at <= healthy.received[6 + i]!.at).length - attemptsBefore;
        assert.ok(meanwhile <= 16, `${meanwhile} attempts to the hanging endpoints came before later event ${i} reached the healthy one`);
      }
      for (const r of healthy.received) assert.equal(verified(hook.secret, r).type, 'category.created');
    } finally {
      await t.close();
      await hanging.close();
      await healthy.close();
    }
  });
});

describe('webhooks: redelivery', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    // Retries a few hundred seconds apart: a failed attempt's retry stays pending through the test.
    t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '100' } });
    receiver = await startReceiver();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('when a failed delivery is redelivered twice while its retry is pending, then the retry is brought forward and sent once, and nothing more is queued', async () => {
    receiver.answer = (n, res) => {
      res.statusCode = n === 1 ? 503 : 200;
      res.end();
    };
    const buyer = await customer(t, 'Redeliverer');
    const hook = (await buyer.post('/v1/webhooks', { url: receiver.url, events: ['order.placed'] })).body;
    await buyer.post('/v1/store/orders', { petId: await petInStock(t), quantity: 1 });
    const [failed, retry] = await eventually('the failed attempt and its retry', async () => {
      const body = (await buyer.get(`/v1/webhooks/${hook.id}/deliveries`)).body;
      return body.length === 2 && body[0].status === 'failed' ? body : null;
    });
    assert.deepEqual([retry.attempt, retry.status], [2, 'pending']);
    assert.ok(Date.parse(retry.scheduledAt) > Date.now() + 60_000, 'the retry waits for its time');
    const first = await buyer.post(`/v1/webhooks/${hook.id}/deliveries/${failed.id}/redeliver`);
    const second = await buyer.post(`/v1/webhooks/${hook.id}/deliveries/${failed.id}/redeliver`);
    assert.deepEqual([first.status, second.status], [202, 202]);
    // The second may find the retry already sent: then it queues a new one (nothing is pending any more).
    assert.equal(first.body.id, retry.id, 'the pending retry is the answer, not a new delivery');
    await eventually('the retry sent', () => receiver.received.length >= 2);
    const log = await eventually('the retry recorded', async () => {
      const body = (await buyer.get(`/v1/webhooks/${hook.id}/deliveries`)).body;
      return body.every((d: any) => d.status !== 'pending') ? body : null;
    });
    assert.equal(first.body.attempt, 1, 'brought forward as a first attempt again (the retry schedule starts over)');
    assert.deepEqual(
      log.map((d: any) => d.attempt),
      log.map(() => 1),
    );
    assert.ok(log.length <= 3, `at most one delivery queued per redelivery that found none pending (${log.length} in the log)`);
    if (second.body.id === retry.id) assert.equal(log.length, 2);
  });

  it('when redeliveries are sent through REST and GraphQL, then each costs 1 point', async () => {
    receiver.answer = (_n, res) => res.end();
    const buyer = await customer(t, 'Counted');
    const hook = (await buyer.post('/v1/webhooks', { url: receiver.url, events: ['order.placed'] })).body;
    await buyer.post('/v1/store/orders', { petId: await petInStock(t), quantity: 1 });
    const [delivery] = await eventually('the delivery', async () => {
      const body = (await buyer.get(`/v1/webhooks/${hook.id}/deliveries`)).body;
      return body[0]?.status === 'succeeded' ? body : null;
    });
    const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));
    const before = await buyer.get('/v1/webhooks');
    const rest = await buyer.post(`/v1/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`);
    assert.equal(rest.status, 202, rest.text);
    assert.equal(remaining(before) - remaining(rest), 1, 'the redelivery costs 1');
    const gql = await buyer.graphql(
      'mutation($w: ID!, $d: ID!) { redeliverWebhookDelivery(webhookId: $w, deliveryId: $d) { id status } }',
      {
        w: globalId('WebhookEndpoint', hook.id),
        d: globalId('WebhookDelivery', delivery.id),
      },
    );
    assert.equal(gql.body.errors, undefined, gql.text);
    assert.deepEqual(gql.body.extensions.cost, { requested: 1, charged: 1 });
    assert.equal(remaining(rest) - remaining(gql), 1);
  });

  it('when the endpoint is disabled, then a redelivery is WEBHOOK_DISABLED (409) on both facades and nothing is queued', async () => {
    receiver.answer = (_n, res) => res.end();
    const buyer = await customer(t, 'Disabled');
    const hook = (await buyer.post('/v1/webhooks', { url: receiver.url, events: ['order.placed'] })).body;
    await buyer.post('/v1/store/orders', { petId: await petInStock(t), quantity: 1 });
    const [delivery] = await eventually('the delivery', async () => {
      const body = (await buyer.get(`/v1/webhooks/${hook.id}/deliveries`)).body;
      return body[0]?.status === 'succeeded' ? body : null;
    });
    assert.equal((await buyer.patch(`/v1/webhooks/${hook.id}`, { enabled: false })).status, 200);
    const refused = await buyer.post(`/v1/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`);
    assertError(refused, 409, 'WEBHOOK_DISABLED');
    assert.match(refused.body.message, /is disabled/);
    const gql = await buyer.graphql('mutation($w: ID!, $d: ID!) { redeliverWebhookDelivery(webhookId: $w, deliveryId: $d) { id } }', {
      w: globalId('WebhookEndpoint', hook.id),
      d: globalId('WebhookDelivery', delivery.id),
    });
    assert.deepEqual([gql.body.errors?.[0]?.extensions?.code, gql.body.errors?.[0]?.extensions?.status], ['WEBHOOK_DISABLED', 409]);
    assert.equal((await buyer.get(`/v1/webhooks/${hook.id}/deliveries`)).body.length, 1, 'nothing queued');
    assertError(await buyer.post(`/v1/webhooks/${hook.id}/deliveries/999999/redeliver`), 404, 'NOT_FOUND');
  });
});

describe('webhooks: two instances on one PostgreSQL database share each endpoint queue', async () => {
  const redis = await redisUrl();
  let a: TestApp;
  let b: TestApp;
  let hanging: HangingReceiver;
  let healthy: Receiver;

  const skip = await onOwnPostgres(
    'isolation',
    {
      setup: async (url) => {
        const env = {
          ...HANGING_ENV,
          REDIS_URL: redis!,
          RATE_LIMIT_KEY_PREFIX: `petstore-isolation-${randomBytes(4).toString('hex')}`,
          ADMIN_API_KEY: `psk_${randomBytes(24).toString('base64url')}`,
        };
        a = await startApp({ databaseUrl: url, env });
        b = await startApp({ databaseUrl: url, env });
        hanging = await startHangingReceiver();
        healthy = await startReceiver();
      },
      teardown: async () => {
        await a?.close();
        await b?.close();
        await hanging?.close();
        await healthy?.close();
      },
    },
    { Redis: redis },
  );

  it("when a hanging endpoint has attempts due on both instances, then only one is in flight across them, and another account's deliveries arrive meanwhile", {
    skip,
  }, async () => {
    const petId = await petInStock(a);
    const attacker = await customer(a, 'Hanging on two', 'pro');
    await attacker.post('/v1/webhooks', { url: hanging.url, events: ['order.placed'] });
    const attackerOnB = new Client(b.url, attacker.key);
    for (let i = 0; i < 3; i++) {
      await attacker.post('/v1/store/orders', { petId, quantity: 1 });
      await attackerOnB.post('/v1/store/orders', { petId, quantity: 1 });
    }
    await eventually('an attempt held', () => hanging.open() === 1);
    const victim = await customer(a, 'Served on two', 'pro');
    const hook = (await victim.post('/v1/webhooks', { url: healthy.url, events: ['order.placed'] })).body;
    await orderDeliveredTo(victim, petId, healthy, hook.secret);
    await orderDeliveredTo(new Client(b.url, victim.key), petId, healthy, hook.secret);
    assert.equal(hanging.open(), 1, 'one attempt in flight for the endpoint, whichever instance holds its queue');
    assert.equal(hanging.received.length, 1);
  });
});
