/**
 * Webhooks: registration, Standard Webhooks signatures (verified with the `standardwebhooks` package),
 * retries on the schedule, disabling, visibility, plan caps, SSRF refusals, rotation and redelivery,
 * against a real receiver on 127.0.0.1.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { getEventListeners } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { assertError, walk } from '../rest/support.js';
import { createAjv, loadOpenApiDocument } from '../../src/rest/openapi.js';
import { sendWebhook } from '../../src/events/webhook-sender.js';
import { RETRY_SCHEDULE_S } from '../../src/domain/webhook-queue.service.js';
import { isPublicAddress } from '../../src/domain/webhook-addresses.js';
import { eventually, startReceiver, verified, type Receiver, type Received } from './support.js';
import { sample } from '../ops/support.js';

const SCALE = 0.01;

async function customer(t: TestApp, name: string, plan = 'pro') {
  const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan });
  assert.equal(res.status, 201, res.text);
  return new Client(t.url, res.body.apiKey.key);
}

async function petInStock(t: TestApp, quantity: number) {
  const cat = await t.admin.post('/v1/categories', { name: `Cat ${Math.random()}` });
  const pet = await t.admin.post('/v1/pets', { name: 'Hooky', categoryId: cat.body.id });
  await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity });
  return pet.body.id as number;
}

/** The x-webhooks request-body schema of an event type, compiled. */
function webhookSchema(type: string) {
  const doc = loadOpenApiDocument() as any;
  const ajv = createAjv();
  ajv.addSchema({ components: doc.components }, 'openapi');
  const ref = doc['x-webhooks'][type].post.requestBody.content['application/json'].schema.$ref as string;
  return ajv.compile<any>({ $ref: `openapi${ref}` });
}

describe('webhooks: signed deliveries with retries to a receiver on 127.0.0.1', () => {
  let t: TestApp;
  let receiver: Receiver;

  before(async () => {
    t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: String(SCALE), WEBHOOK_POLL_MS: '20' } });
    receiver = await startReceiver();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('when an order is placed, then the endpoint receives order.placed signed per Standard Webhooks, as the x-webhooks schema describes it', async () => {
    receiver.received.length = 0;
    const buyer = await customer(t, 'Signed buyer');
    const created = await buyer.post('/v1/webhooks', { url: receiver.url, events: ['order.placed'] });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^whsec_/);
    assert.equal(created.headers.get('location'), `/v1/webhooks/${created.body.id}`);
    assert.equal((await buyer.get(`/v1/webhooks/${created.body.id}`)).body.secret, undefined, 'the secret is shown once');
    const petId = await petInStock(t, 2);
    const order = (await buyer.post('/v1/store/orders', { petId, quantity: 1 })).body;
    const got = await eventually('the delivery', () => receiver.received[0]);
    const event = verified(created.body.secret, got) as any;
    assert.equal(event.type, 'order.placed');
    assert.deepEqual(event.data, order);
    assert.equal(got.headers['webhook-id'], String(event.id));
    assert.equal(got.headers['content-type'], 'application/json');
    const validate = webhookSchema('order.placed');
    assert.ok(validate(event), JSON.stringify(validate.errors));
    const [feedEvent] = (await buyer.get(`/v1/events?types=order.placed&after=${event.id - 1}`)).body;
    assert.deepEqual(event, feedEvent, 'the webhook body is the event as the feed lists it');
    const log = await eventually('the logged attempt', async () => {
      const res = await buyer.get(`/v1/webhooks/${created.body.id}/deliveries`);
      return res.body[0]?.status === 'succeeded' ? res.body : null;
    });
    assert.equal(log.length, 1);
    assert.deepEqual(
      { ...log[0], id: 0, scheduledAt: '', attemptedAt: '', durationMs: 0 },
      {
        id: 0,
        webhookId: created.body.id,
        eventId: event.id,
        eventType: 'order.placed',
        attempt: 1,
        status: 'succeeded',
        scheduledAt: '',
        attemptedAt: '',
        responseStatus: 200,
        durationMs: 0,
        error: null,
      },
    );
    const metrics = (await t.anonymous.get('/metrics', { skipContract: true })).text;
    assert.ok((sample(metrics, 'petstore_webhook_attempts_total', { outcome: 'succeeded' }) ?? 0) >= 1, 'the attempt is counted');
    assert.ok((sample(metrics, 'petstore_webhook_delivery_lag_seconds_count') ?? 0) >= 1, 'and its lag observed');
    assert.equal((await buyer.delete(`/v1/webhooks/${created.body.id}`)).status, 204);
  });

  it('when the receiver refuses the first attempts, then the same event is retried on the schedule until it is accepted, each attempt logged', async () => {
    receiver.received.length = 0;
    receiver.answer = (n, res) => {
      res.statusCode = n <= 2 ? 503 : 200;
      res.end();
    };
    const buyer = await customer(t, 'Retry buyer');
    const hook = (await buyer.post('/v1/webhooks', { url: receiver.url, events: ['order.*'] })).body;
    const petId = await petInStock(t, 2);
    await buyer.post('/v1/store/orders', { petId, quantity: 1 });
    await eventually('three attempts', () => receiver.received.length >= 3, 50, 200);
    const [a, b, c] = receiver.received as [any, any, any];
    assert.deepEqual(
      [a, b, c].map((r) => r.headers['webhook-id']),
      Array(3).fill(a.headers['webhook-id']),
    );
    for (const r of [a, b, c]) verified(hook.secret, r);
    // Backoff with ±20 % jitter: each gap is at least 80 % of its scheduled delay.
    assert.ok(b.at - a.at >= RETRY_SCHEDULE_S[0]! * 1000 * SCALE * 0.8, `first retry after ${b.at - a.at} ms`);
    assert.ok(c.at - b.at >= RETRY_SCHEDULE_S[1]! * 1000 * SCALE * 0.8, `second retry after ${c.at - b.at} ms`);
    const log = await eventually('the third attempt logged', async () => {
      const res = await buyer.get(`/v1/webhooks/${hook.id}/deliveries`);
      return res.body.length === 3 && res.body[2].status !== 'pending' ? res.body : null;
    });
    assert.deepEqual(
      log.map((d: any) => [d.attempt, d.status, d.responseStatus]),
      [
        [1, 'failed', 503],
        [2, 'failed', 503],
        [3, 'succeeded', 200],
      ],
    );
    assert.equal(log[0].error, 'the receiver answered HTTP 503');
    receiver.answer = (_n, res) => res.end();
    assert.equal((await buyer.delete(`/v1/webhooks/${hook.id}`)).status, 204);
  });

  it("when customers and staff register endpoints, then each receives only the events its account may see (never another customer's order)", async () => {
    receiver.received.length = 0;
    const alice = await customer(t, 'Alice');
    const bob = await customer(t, 'Bob');
    const hooks = new Map<string, any>();
    for (const [who, client] of [
      ['alice', alice],
      ['bob', bob],
      ['staff', t.admin],
    ] as const) {
      const res = await client.post('/v1/webhooks', { url: `${receiver.url}?for=${who}`, events: ['order.placed', 'inventory.changed'] });
      assert.equal(res.status, 201, res.text);
      hooks.set(who, res.body);
    }
    const petId = await petInStock(t, 5);
    const hers = (await alice.post('/v1/store/orders', { petId, quantity: 1 })).body;
    const his = (await bob.post('/v1/store/orders', { petId, quantity: 1 })).body;
    // stock set + 2 orders → 3 inventory events to each, plus the order events each may see: 2 + 2 + 2 + 1 + 1 … = 13
    await eventually('every delivery', () => receiver.received.length >= 13, 50, 200);
    await new Promise((r) => setTimeout(r, 200));
    const byWho = (who: string) => {
      const secret = hooks.get(who).secret;
      return receiver.received
        .filter((r) => r.headers['webhook-signature'] && r.body && tryVerify(secret, r))
        .map((r) => JSON.parse(r.body));
    };
    const orders = (who: string) =>
      byWho(who)
        .filter((e) => e.type === 'order.placed')
        .map((e) => e.data.id)
        .sort();
    assert.deepEqual(orders('alice'), [hers.id]);
    assert.deepEqual(orders('bob'), [his.id]);
    assert.deepEqual(orders('staff'), [hers.id, his.id].sort());
    for (const who of ['alice', 'bob', 'staff']) assert.equal(byWho(who).filter((e) => e.type === 'inventory.changed').length, 3, who);
    for (const [who, client] of [
      ['alice', alice],
      ['bob', bob],
      ['staff', t.admin],
    ] as const)
      await client.delete(`/v1/webhooks/${hooks.get(who).id}`);
  });

  it("when a customer addresses another account's endpoint, then it is NOT_FOUND and nothing changes", async () => {
    const alice = await customer(t, 'Owner');
    const bob = await customer(t, 'Intruder');
    const hook = (await alice.post('/v1/webhooks', { url: receiver.url, events: ['pet.*'] })).body;
    assertError(await bob.get(`/v1/webhooks/${hook.id}`), 404, 'NOT_FOUND');
    assertError(await bob.patch(`/v1/webhooks/${hook.id}`, { enabled: false }), 404, 'NOT_FOUND');
    assertError(await bob.post(`/v1/webhooks/${hook.id}/rotate-secret`), 404, 'NOT_FOUND');
    assertError(await bob.get(`/v1/webhooks/${hook.id}/deliveries`), 404, 'NOT_FOUND');
    assertError(await bob.delete(`/v1/webhooks/${hook.id}`), 404, 'NOT_FOUND');
    assertError(await t.admin.get(`/v1/webhooks/${hook.id}`), 404, 'NOT_FOUND');
    assert.deepEqual((await bob.get('/v1/webhooks')).body, []);
    assert.equal((await alice.get(`/v1/webhooks/${hook.id}`)).body.enabled, true);
    await alice.delete(`/v1/webhooks/${hook.id}`);
  });

  it("when a plan's endpoint cap is reached, then another registration is PLAN_LIMIT_REACHED (409) and nothing is created", async () => {
    const free = await customer(t, 'Free', 'free');
    assert.equal((await free.post('/v1/webhooks', { url: receiver.url, events: ['pet.created'] })).status, 201);
    assertError(await free.post('/v1/webhooks', { url: receiver.url, events: ['pet.created'] }), 409, 'PLAN_LIMIT_REACHED');
    assert.equal((await free.get('/v1/webhooks')).body.length, 1);
  });

  it('when the input is invalid, then it is VALIDATION_FAILED (400)', async () => {
    assertError(await t.admin.post('/v1/webhooks', { url: receiver.url, events: [] }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['order.shipped'] }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.post('/v1/webhooks', { url: 'not a url', events: ['order.*'] }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.post('/v1/webhooks', { url: 'ftp://127.0.0.1/x', events: ['order.*'] }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.post('/v1/webhooks', { url: 'http://user:pw@127.0.0.1/x', events: ['order.*'] }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['order.*'], extra: 1 }), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.patch('/v1/webhooks/999999', { enabled: true }), 404, 'NOT_FOUND');
    assertError(await t.admin.patch('/v1/webhooks/1', {}), 400, 'VALIDATION_FAILED');
    // Under 2,048 characters as sent, over it once its non-ASCII characters are percent-encoded (as it is stored and sent).
    const long = `${receiver.url}/${'é'.repeat(1000)}`;
    assert.ok(long.length <= 2048);
    const refused = await t.admin.post('/v1/webhooks', { url: long, events: ['order.*'] });
    assertError(refused, 400, 'VALIDATION_FAILED');
    assert.match(refused.body.message, /at most 2048 characters once percent-encoded/);
  });

  it('when the secret is rotated, then deliveries carry a signature that verifies with the new secret and one with the previous', async () => {
    receiver.received.length = 0;
    const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
    const rotated = await t.admin.post(`/v1/webhooks/${hook.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.secret, hook.secret);
    await t.admin.post('/v1/categories', { name: 'Rotated' });
    const got = await eventually('the delivery', () => receiver.received[0]);
    assert.equal(verified(rotated.body.secret, got).type, 'category.created');
    assert.equal(verified(hook.secret, got).type, 'category.created');
    await t.admin.delete(`/v1/webhooks/${hook.id}`);
  });

  it('when two rotations run at once, then each answers its own secret and the next delivery verifies with both (none is lost unseen)', async () => {
    const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
    after(() => t.admin.delete(`/v1/webhooks/${hook.id}`));
    for (let round = 0; round < 3; round++) {
      receiver.received.length = 0;
      const [a, b] = await Promise.all([
        t.admin.post(`/v1/webhooks/${hook.id}/rotate-secret`),
        t.admin.post(`/v1/webhooks/${hook.id}/rotate-secret`),
      ]);
      assert.deepEqual([a.status, b.status], [200, 200]);
      assert.notEqual(a.body.secret, b.body.secret);
      await t.admin.post('/v1/categories', { name: `Rotated twice ${round} ${Math.random()}` });
      const got = await eventually('the delivery', () => receiver.received[0]);
      for (const secret of [a.body.secret, b.body.secret]) assert.equal(verified(secret, got).type, 'category.created', `round ${round}`);
    }
  });

  it('when a delivery is redelivered, then the receiver gets the same event again with the same webhook-id', async () => {
    receiver.received.length = 0;
    const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
    await t.admin.post('/v1/categories', { name: 'Again' });
    await eventually('the first delivery', () => receiver.received[0]);
    const first = await eventually('the logged attempt', async () => (await t.admin.get(`/v1/webhooks/${hook.id}/deliveries`)).body[0]);
    const res = await t.admin.post(`/v1/webhooks/${hook.id}/deliveries/${first.id}/redeliver`);
    assert.equal(res.status, 202, res.text);
    assert.equal(res.body.status, 'pending');
    const again = await eventually('the redelivery', () => receiver.received[1]);
    assert.equal(again.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
    assert.deepEqual(verified(hook.secret, again), verified(hook.secret, receiver.received[0]!));
    assertError(await t.admin.post(`/v1/webhooks/${hook.id}/deliveries/999999/redeliver`), 404, 'NOT_FOUND');
    await t.admin.delete(`/v1/webhooks/${hook.id}`);
  });
});

function tryVerify(secret: string, r: Received) {
  try {
    verified(secret, r);
    return true;
  } catch {
    return false;
  }
}

/** Runs `test` on an app of its own (with `env`) beside a receiver that answers every attempt 500, and closes both. */
async function withFailingReceiver(env: Record<string, string>, test: (t: TestApp, receiver: Receiver) => Promise<void>) {
  const t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '10', ...env } });
  const receiver = await startReceiver();
  receiver.answer = (_n, res) => {
    res.statusCode = 500;
    res.end();
  };
  try {
    await test(t, receiver);
  } finally {
    await t.close();
    await receiver.close();
  }
}

describe('webhooks: an endpoint that keeps failing is disabled with the reason', () => {
  it('when every attempt fails, then after the whole schedule the endpoint is disabled with why, and re-enabling clears it', () =>
    withFailingReceiver({ WEBHOOK_RETRY_SCALE: '0.00001' }, async (t, receiver) => {
      const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
      await t.admin.post('/v1/categories', { name: 'Doomed' });
      const disabled = await eventually(
        'the endpoint disabled',
        async () => {
          const res = await t.admin.get(`/v1/webhooks/${hook.id}`);
          return res.body.enabled === false ? res.body : null;
        },
        100,
        300,
      );
      assert.match(disabled.disabledReason, /all 10 attempts to deliver event \d+ failed \(last: the receiver answered HTTP 500\)/);
      assert.equal(receiver.received.length, RETRY_SCHEDULE_S.length + 1);
      const log = (await walk(t.admin, `/v1/webhooks/${hook.id}/deliveries`)).items;
      assert.deepEqual(
        log.map((d) => d.attempt),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      const metrics = (await t.anonymous.get('/metrics', { skipContract: true })).text;
      assert.equal(sample(metrics, 'petstore_webhook_attempts_total', { outcome: 'failed' }), 10);
      assert.equal(sample(metrics, 'petstore_webhook_endpoints_disabled_total'), 1);
      const enabled = await t.admin.patch(`/v1/webhooks/${hook.id}`, { enabled: true });
      assert.deepEqual([enabled.body.enabled, enabled.body.disabledReason], [true, null]);
    }));
});

describe('webhooks: redelivering to a receiver still down', () => {
  it('when a pending retry is redelivered again and again while the receiver fails, then each redelivery is a first attempt again and the endpoint is never disabled by them', () =>
    // The schedule a hundred times slower: the first retry would wait 500 s, so every attempt here is a redelivery's.
    withFailingReceiver({ WEBHOOK_RETRY_SCALE: '100' }, async (t, receiver) => {
      const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
      await t.admin.post('/v1/categories', { name: 'Down for a while' });
      await eventually('the first attempt', () => receiver.received[0]);
      const redeliveries = RETRY_SCHEDULE_S.length + 2;
      let last: number | undefined;
      for (let i = 1; i <= redeliveries; i++) {
        // The failed attempt is logged and its retry (a new row) is waiting: redeliver that retry now.
        const pending = await eventually('the retry waiting', async () =>
          (await t.admin.get(`/v1/webhooks/${hook.id}/deliveries`)).body.find(
            (d: { id: number; status: string }) => d.status === 'pending' && d.id !== last,
          ),
        );
        last = pending.id;
        const res = await t.admin.post(`/v1/webhooks/${hook.id}/deliveries/${pending.id}/redeliver`);
        assert.equal(res.status, 202, `redelivery ${i}: ${res.text}`);
        assert.deepEqual([res.body.id, res.body.attempt], [pending.id, 1], 'the waiting retry, as a first attempt');
        await eventually(`attempt ${i + 1}`, () => receiver.received[i]);
      }
      const endpoint = await eventually('the last attempt logged', async () => {
        const log = (await walk(t.admin, `/v1/webhooks/${hook.id}/deliveries`)).items;
        return log.filter((d) => d.status === 'failed').length === redeliveries + 1
          ? (await t.admin.get(`/v1/webhooks/${hook.id}`)).body
          : null;
      });
      assert.deepEqual([endpoint.enabled, endpoint.disabledReason], [true, null]);
      assert.equal(receiver.received.length, redeliveries + 1, 'nothing but the first attempt and the redeliveries was sent');
    }));
});

describe('webhooks: SSRF (only https and public addresses unless WEBHOOK_ALLOW_PRIVATE=true)', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when a URL is not https or names a private address, then registration is VALIDATION_FAILED', async () => {
    for (const url of [
      'http://example.com/hook',
      'https://127.0.0.1/hook',
      'https://[::1]/hook',
      'https://10.0.0.8/hook',
      'https://169.254.169.254/latest',
      'https://localhost/hook',
      'https://intranet/hook',
    ]) {
      assertError(await t.admin.post('/v1/webhooks', { url, events: ['order.*'] }), 400, 'VALIDATION_FAILED');
    }
    assert.deepEqual((await t.admin.get('/v1/webhooks')).body, []);
  });

  it('when loopback or a private address is written another way (IPv4-compatible or -mapped IPv6, NAT64, 6to4, a trailing dot, a special-use name), then registration is VALIDATION_FAILED', async () => {
    for (const url of [
      'https://[::127.0.0.1]/h',
      'https://[::7f00:1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://[::ffff:a00:8]/h',
      'https://[::]/h',
      'https://[64:ff9b::7f00:1]/h',
      'https://[2002:7f00:1::]/h',
      'https://[2001:db8::1]/h',
      'https://[fd00::1]/h',
      'https://[fe80::1]/h',
      'https://0x7f.1/h',
      'https://2130706433/h',
      'https://100.64.0.1/h',
      'https://192.0.0.8/h',
      'https://localhost./h',
      'https://LOCALHOST../h',
      'https://api.localhost./h',
      'https://printer.local/h',
      'https://metadata.google.internal/h',
      'https://router.home.arpa/h',
    ]) {
      assertError(await t.admin.post('/v1/webhooks', { url, events: ['order.*'] }), 400, 'VALIDATION_FAILED');
    }
    assert.deepEqual((await t.admin.get('/v1/webhooks')).body, []);
    const accepted = await t.admin.post('/v1/webhooks', { url: 'https://[2606:4700:4700::1111]/h', events: ['order.*'] });
    assert.equal(accepted.status, 201, accepted.text);
    await t.admin.delete(`/v1/webhooks/${accepted.body.id}`);
  });

  it('when an address is judged, then only public unicast passes, whatever its spelling', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8'])
      assert.equal(isPublicAddress(address), true, address);
    for (const address of [
      '127.0.0.1',
      '::1',
      '::127.0.0.1',
      '::7f00:1',
      '::ffff:127.0.0.1',
      '::ffff:10.1.2.3',
      '::',
      '0.0.0.0',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '192.0.0.8',
      '192.0.2.1',
      '198.18.0.1',
      '203.0.113.9',
      '224.0.0.1',
      '255.255.255.255',
      '240.0.0.1',
      'fe80::1',
      'fc00::1',
      'ff02::1',
      '64:ff9b::a00:1',
      '2001::1',
      '2001:db8::1',
      '2002:a00:1::',
      '3fff::1',
      'not an address',
    ]) {
      assert.equal(isPublicAddress(address), false, address);
    }
  });

  it('when a name resolves to a private address at connect time, then nothing is sent', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      const result = await sendWebhook(`https://localhost:${port}/hooks`, {}, '{}', { allowPrivate: false, timeoutMs: 2000 });
      assert.equal(result.ok, false);
      assert.match(result.error ?? '', /localhost resolves to (127\.0\.0\.1|::1), which is not a public address/);
      const literal = await sendWebhook(`https://127.0.0.1:${port}/hooks`, {}, '{}', { allowPrivate: false, timeoutMs: 2000 });
      assert.match(literal.error ?? '', /not a public address/);
      for (const other of [`https://[::127.0.0.1]:${port}/hooks`, `https://[::ffff:127.0.0.1]:${port}/hooks`]) {
        const refused = await sendWebhook(other, {}, '{}', { allowPrivate: false, timeoutMs: 2000 });
        assert.match(refused.error ?? '', /not a public address/, other);
      }
      // Fully qualified: resolved by the system (to loopback, refused) or not at all, never connected to.
      const dotted = await sendWebhook(`https://localhost.:${port}/hooks`, {}, '{}', { allowPrivate: false, timeoutMs: 2000 });
      assert.match(
        dotted.error ?? '',
        /localhost\. resolves to (127\.0\.0\.1|::1), which is not a public address|the host name does not resolve/,
      );
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });

  it("when many attempts share the worker's stop signal, then each takes its listener away when it ends", async () => {
    const receiver = await startReceiver();
    const stop = new AbortController();
    try {
      for (let i = 0; i < 12; i++)
        assert.equal((await sendWebhook(receiver.url, {}, '{}', { allowPrivate: true, timeoutMs: 2000, signal: stop.signal })).ok, true);
      assert.equal(getEventListeners(stop.signal, 'abort').length, 0);
    } finally {
      await receiver.close();
    }
  });

  it('when the receiver redirects or does not answer in time, then the attempt fails without following or waiting longer', async () => {
    const receiver = await startReceiver();
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      receiver.answer = (_n, res) => {
        res.writeHead(302, { location: `${receiver.url}/elsewhere` });
        res.end();
      };
      const redirected = await sendWebhook(receiver.url, {}, '{}', { allowPrivate: true, timeoutMs: 2000 });
      assert.deepEqual([redirected.ok, redirected.status], [false, 302]);
      assert.match(redirected.error ?? '', /not followed/);
      assert.equal(receiver.received.length, 1);
      const timedOut = await sendWebhook(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/`, {}, '{}', {
        allowPrivate: true,
        timeoutMs: 200,
      });
      assert.deepEqual([timedOut.ok, timedOut.error], [false, 'no answer within 200 ms']);
      receiver.answer = (_n, res) => {
        res.writeHead(304);
        res.end();
      };
      const notModified = await sendWebhook(receiver.url, {}, '{}', { allowPrivate: true, timeoutMs: 2000 });
      assert.deepEqual([notModified.ok, notModified.status], [false, 304]);
      assert.match(notModified.error ?? '', /304 Not Modified; answer 2xx/);
    } finally {
      silent.closeAllConnections();
      silent.close();
      await receiver.close();
    }
  });

  it('when a receiver answers 2xx and then sends its body slowly (or never ends it), then the attempt succeeded when the status came', async () => {
    const trickle = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('.');
      const drip = setInterval(() => res.write('.'), 100);
      res.on('close', () => clearInterval(drip));
    });
    await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve));
    try {
      const started = Date.now();
      const result = await sendWebhook(`http://127.0.0.1:${(trickle.address() as AddressInfo).port}/`, {}, '{}', {
        allowPrivate: true,
        timeoutMs: 1000,
      });
      assert.deepEqual([result.ok, result.status, result.error], [true, 200, null]);
      assert.ok(Date.now() - started < 1000, 'answered before the timeout');
    } finally {
      trickle.closeAllConnections();
      trickle.close();
    }
  });
});
