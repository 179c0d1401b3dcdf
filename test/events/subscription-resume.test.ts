/**
 * Subscriptions that resume (docs/EVENTS.md, "Resuming"): `after:` back-fills what the caller may see after an
 * event, then goes live with no gap and no duplicate; through a SIGKILL and restart (SQLite) and from one
 * instance to another (PostgreSQL), every committed event arrives exactly once, in order. A subscriber that
 * falls behind the backlog bound gets SUBSCRIBER_TOO_SLOW before the end.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client as WsClient } from 'graphql-ws';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { onOwnPostgres, redisUrl } from '../helpers/services.js';
import { startService, type Service } from '../ops/support.js';
import { EventsService, recordEvent } from '../../src/domain/events.service.js';
import { eventually, subscribe, wsClient, type Subscription } from './support.js';

const EVENTS = 'subscription($after: ID) { events(after: $after) { databaseId type } }';

/** The ids of the events `key` may see, from the feed, in its order. */
async function feedIds(url: string, key: string): Promise<number[]> {
  const client = new Client(url, key);
  const ids: number[] = [];
  for (let after = 0; ; ) {
    const res = await client.get(`/v1/events?limit=100&after=${after}`);
    assert.equal(res.status, 200);
    for (const e of res.body) ids.push(e.id);
    if (res.body.length < 100) return ids;
    after = res.body.at(-1).id;
  }
}

const idsOf = (sub: Subscription): number[] =>
  sub.results.map((r) => {
    assert.equal(r.errors, undefined, JSON.stringify(r.errors));
    return r.data.events.databaseId;
  });

/** Commits `n` catalogue events (category.created), one request after another, as staff. */
async function commit(url: string, key: string, n: number) {
  const admin = new Client(url, key);
  for (let i = 0; i < n; i++)
    assert.equal((await admin.post('/v1/categories', { name: `Resume ${randomBytes(6).toString('hex')}` })).status, 201);
}

async function customerKey(url: string, adminKey: string, name: string): Promise<string> {
  const res = await new Client(url, adminKey).post('/v1/accounts', { name, role: 'customer', plan: 'pro' });
  assert.equal(res.status, 201);
  return res.body.apiKey.key;
}

describe('subscriptions resume after an event id', () => {
  describe('on SQLite, through a SIGKILL and a restart', () => {
    let s: Service | undefined;
    let restarted: Service | undefined;
    const clients: WsClient[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'petstore-resume-'));
    const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
    const env = { SUBSCRIPTION_POLL_MS: '20', SEED_DEMO: 'false' };
    after(async () => {
      for (const c of clients) await c.dispose();
      for (const x of [s, restarted]) {
        x?.child.kill('SIGKILL');
        x?.cleanup();
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('when the service is killed and restarted, then each subscriber resumes from its last id and sees every committed event exactly once, in order', async () => {
      s = await startService(env, { databaseUrl });
      const customer = await customerKey(s.url, s.key, 'Resumer');
      const keys = [s.key, customer, s.key];
      const first: Subscription[] = [];
      for (const key of keys) {
        const { client } = wsClient(s.url, key);
        clients.push(client);
        first.push(await subscribe(client, EVENTS));
      }
      await commit(s.url, s.key, 5);
      await eventually('every subscriber has the first events', () => first.every((sub) => sub.results.length >= 5));
      s.child.kill('SIGKILL');
      await s.exited;
      const lastIds = first.map((sub) => idsOf(sub).at(-1)!);

      restarted = await startService(env, { databaseUrl, key: s.key });
      // Committed while nobody listened: the back-fill brings them.
      await commit(restarted.url, s.key, 4);
      const resumed: Subscription[] = [];
      const more = commit(restarted.url, s.key, 6);
      for (const [n, key] of keys.entries()) {
        const { client } = wsClient(restarted.url, key);
        clients.push(client);
        resumed.push(await subscribe(client, EVENTS, { after: globalId('Event', lastIds[n]!) }));
      }
      await more;
      await commit(restarted.url, s.key, 2);
      for (const [n, key] of keys.entries()) {
        const expected = await feedIds(restarted.url, key);
        const seen = await eventually(`subscriber ${n} caught up`, () => {
          const ids = [...idsOf(first[n]!), ...idsOf(resumed[n]!)];
          return ids.length >= expected.length ? ids : null;
        });
        assert.deepEqual(seen, expected, `subscriber ${n}: every event once, in the feed's order`);
      }
    });
  });

  describe('in one instance', () => {
    let t: TestApp;
    const clients: WsClient[] = [];
    const connect = (key: string) => {
      const { client } = wsClient(t.url, key);
      clients.push(client);
      return client;
    };
    before(async () => {
      t = await startApp({ env: { SUBSCRIPTION_POLL_MS: '20', SUBSCRIPTION_BACKLOG_MAX: '2' } });
    });
    after(async () => {
      for (const c of clients) await c.dispose();
      await t.close();
    });

    async function order(key: string) {
      const cat = await t.admin.post('/v1/categories', { name: `Orders ${randomBytes(4).toString('hex')}` });
      const pet = await t.admin.post('/v1/pets', { name: 'Rex', categoryId: cat.body.id });
      await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity: 5 });
      const res = await new Client(t.url, key).post('/v1/store/orders', { petId: pet.body.id, quantity: 1 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }

    it("when the after is another customer's event, then the back-fill holds only what the caller may see", async () => {
      const alice = await customerKey(t.url, t.adminKey, 'Alice');
      const bob = await customerKey(t.url, t.adminKey, 'Bob');
      await order(alice);
      const staffFeed = await new Client(t.url, t.adminKey).get('/v1/events?types=order.placed&limit=100');
      const alicesOrder = staffFeed.body.at(-1).id as number;
      await order(bob);
      await order(alice);
      const sub = await subscribe(
        connect(bob),
        'subscription($after: ID) { events(after: $after) { databaseId type data { ... on Order { id } } } }',
        {
          after: globalId('Event', alicesOrder),
        },
      );
      const expected = (await feedIds(t.url, bob)).filter((id) => id > alicesOrder);
      await eventually('the back-fill', () => sub.results.length >= expected.length);
      assert.deepEqual(idsOf(sub), expected);
      const aliceSees = new Set(await feedIds(t.url, alice));
      const bobsOrders = (await feedIds(t.url, bob)).filter((id) => !aliceSees.has(id));
      assert.ok(bobsOrders.length > 0, "Bob's own order events are back-filled");
      const staffOnly = (await feedIds(t.url, t.adminKey)).filter((id) => id > alicesOrder && !expected.includes(id));
      assert.ok(staffOnly.length > 0, "Alice's later order events exist and are left out");
      for (const id of staffOnly) assert.ok(!idsOf(sub).includes(id), `Alice's event ${id} reached Bob`);
    });

    it('when after names no event, or one past the retention, then the subscription is refused with VALIDATION_FAILED or EVENT_EXPIRED', async () => {
      await commit(t.url, t.adminKey, 1);
      const unknown = await subscribe(connect(t.adminKey), EVENTS, { after: globalId('Event', 99999999) });
      await eventually('the refusal', () => unknown.results.length > 0 || unknown.errors.length > 0);
      assert.equal(unknown.results[0]?.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED', JSON.stringify(unknown.results));
      // The purge keeps the newest event only when everything is older than the retention.
      await new EventsService(t.app.orm.em.fork()).purgeExpired(new Date(Date.now() + 31 * 24 * 3600 * 1000));
      const expired = await subscribe(connect(t.adminKey), 'subscription($after: ID) { orderUpdated(after: $after) { id } }', {
        after: globalId('Event', 1),
      });
      await eventually('the refusal', () => expired.results.length > 0 || expired.errors.length > 0);
      assert.equal(expired.results[0]?.errors?.[0]?.extensions?.code, 'EVENT_EXPIRED', JSON.stringify(expired.results));
    });

    it('when the back-fill reads 150 events, then it costs what two feed pages of 100 cost, on top of the start', async () => {
      const key = await customerKey(t.url, t.adminKey, 'Payer');
      const client = new Client(t.url, key);
      const minuteUsed = async (): Promise<number> => (await client.get('/v1/rate_limit')).body.resources.minute.used;
      await commit(t.url, t.adminKey, 1);
      const from = (await feedIds(t.url, key)).at(-1)!;
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 150; i++) await recordEvent(em, 'category.created', { id: 2000 + i, name: `Backlog ${i}` });
      });
      const before = await minuteUsed();
      const sub = await subscribe(connect(key), EVENTS, { after: globalId('Event', from) });
      await eventually('the back-fill', () => sub.results.length >= 150);
      assert.equal((await minuteUsed()) - before, 1 + 2);
      assert.deepEqual(
        idsOf(sub),
        (await feedIds(t.url, key)).filter((id) => id > from),
      );
    });

    it('when a subscriber falls behind SUBSCRIPTION_BACKLOG_MAX, then it gets SUBSCRIBER_TOO_SLOW with a reason, then complete', async () => {
      // One transaction's worth of events, read in one go, puts more than the bound (2 here) in the subscription's backlog at once.
      const sub = await subscribe(connect(t.adminKey), 'subscription { events { id } }');
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 10; i++) await recordEvent(em, 'category.created', { id: 1000 + i, name: `Burst ${i}` });
      });
      await eventually('the end', () => sub.completed || sub.errors.length > 0);
      const last = sub.results.at(-1);
      assert.equal(last?.errors?.[0]?.extensions?.code, 'SUBSCRIBER_TOO_SLOW', JSON.stringify(sub.results.slice(-2)));
      assert.match(last.errors[0].message, /More than 2 events waited/);
      assert.equal(sub.completed, true);
    });
  });

  describe('on PostgreSQL, from one instance to another', async () => {
    const redis = await redisUrl();
    let a: TestApp;
    let b: TestApp;
    const clients: WsClient[] = [];
    const skip = await onOwnPostgres(
      'resume',
      {
        setup: async (url) => {
          const env = {
            REDIS_URL: redis!,
            RATE_LIMIT_KEY_PREFIX: `petstore-resume-${randomBytes(4).toString('hex')}`,
            SUBSCRIPTION_POLL_MS: '20',
          };
          const adminKey = `psk_${randomBytes(24).toString('base64url')}`;
          a = await startApp({ databaseUrl: url, env: { ...env, ADMIN_API_KEY: adminKey } });
          b = await startApp({ databaseUrl: url, env: { ...env, ADMIN_API_KEY: adminKey } });
        },
        teardown: async () => {
          for (const c of clients) await c.dispose();
          await a?.close();
          await b?.close();
        },
      },
      { Redis: redis },
    );

    it('when an instance goes away, then its subscribers resume on the other from their last id and see every committed event exactly once, in order', {
      skip,
    }, async () => {
      const customer = await customerKey(a.url, a.adminKey, 'Resumer');
      const keys = [a.adminKey, customer];
      const first: Subscription[] = [];
      for (const key of keys) {
        const { client } = wsClient(a.url, key);
        clients.push(client);
        first.push(await subscribe(client, EVENTS));
      }
      // Commits on both instances, concurrently.
      await Promise.all([commit(a.url, a.adminKey, 5), commit(b.url, b.adminKey, 5)]);
      await eventually('every subscriber has the first events', () => first.every((sub) => sub.results.length >= 10));
      const writing = commit(b.url, b.adminKey, 8);
      await a.close();
      const lastIds = first.map((sub) => idsOf(sub).at(-1)!);
      const resumed: Subscription[] = [];
      for (const [n, key] of keys.entries()) {
        const { client } = wsClient(b.url, key);
        clients.push(client);
        resumed.push(await subscribe(client, EVENTS, { after: globalId('Event', lastIds[n]!) }));
      }
      await writing;
      await commit(b.url, b.adminKey, 3);
      for (const [n, key] of keys.entries()) {
        const expected = await feedIds(b.url, key);
        const seen = await eventually(`subscriber ${n} caught up`, () => {
          const ids = [...idsOf(first[n]!), ...idsOf(resumed[n]!)];
          return ids.length >= expected.length ? ids : null;
        });
        assert.deepEqual(seen, expected, `subscriber ${n}: every event once, in the feed's order`);
      }
    });
  });
});
