/**
 * Subscriptions that resume (docs/EVENTS.md, "Resuming a subscription"): `after:` back-fills what the caller may
 * see after an event, then goes live with no gap and no duplicate. Fifty graphql-ws subscribers follow events
 * committed continuously while the instance is SIGKILLed and restarted (SQLite, or PostgreSQL when
 * TEST_DATABASE_URL is set), and while one of two instances on one PostgreSQL database is SIGKILLed; each resumes
 * from its own last id and has every committed event it may see exactly once, in the feed's order. A subscriber
 * that falls behind the backlog bound gets SUBSCRIBER_TOO_SLOW before the end; a malformed, foreign or expired
 * `after` is refused.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client as WsClient } from 'graphql-ws';
import { Client, createAccount, startApp, type TestApp } from '../helpers/app.js';
import { decodeEventId, globalId } from '../../src/graphql/global-id.js';
import { onOwnPostgres } from '../helpers/services.js';
import { startService, type Service } from '../ops/support.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { EventsService, recordEvent } from '../../src/domain/events.service.js';
import { eventually, subscribe, wsClient, type Subscription } from './support.js';
import { visibleEvents } from '../../src/graphql/schema/events/subscription.resolver.js';
import type { GraphQLContext } from '../../src/graphql/context.js';

const EVENTS = 'subscription($after: ID) { events(after: $after) { id type } }';
const ORDER_UPDATED = 'subscription($after: ID) { orderUpdated(after: $after) { id type } }';

/** The events `key` may see, from the feed, in its order. */
async function feed(url: string, key: string): Promise<Array<{ id: number; type: string }>> {
  const client = new Client(url, key);
  const events: Array<{ id: number; type: string }> = [];
  for (let after = 0; ; ) {
    const res = await client.get(`/v1/events?limit=100&after=${after}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const e of res.body) events.push({ id: e.id, type: e.type });
    if (res.body.length < 100) return events;
    after = res.body.at(-1).id;
  }
}

const feedIds = async (url: string, key: string): Promise<number[]> => (await feed(url, key)).map((e) => e.id);

/** The ids a subscription received, in order; any error but a last SUBSCRIBER_TOO_SLOW (then it completed) fails. */
const idsOf = (sub: Subscription, field = 'events'): number[] =>
  sub.results.flatMap((r, n) => {
    if (r.errors?.[0]?.extensions?.code === 'SUBSCRIBER_TOO_SLOW' && n === sub.results.length - 1 && sub.completed) return [];
    assert.equal(r.errors, undefined, JSON.stringify(r.errors));
    return [decodeEventId(r.data[field].id)];
  });

/** Commits `n` catalogue events (category.created), one request after another, as staff. */
async function commit(url: string, key: string, n: number) {
  const admin = new Client(url, key);
  for (let i = 0; i < n; i++)
    assert.equal((await admin.post('/v1/categories', { name: `Resume ${randomBytes(6).toString('hex')}` })).status, 201);
}

async function customerKey(url: string, adminKey: string, name: string, plan = 'pro'): Promise<string> {
  const res = await new Client(url, adminKey).post('/v1/accounts', { name, role: 'customer', plan });
  assert.equal(res.status, 201);
  return res.body.apiKey.key;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const SUBSCRIBERS = 50;
const SERVICE_ENV = { SUBSCRIPTION_POLL_MS: '20', SEED_DEMO: 'false', SUBSCRIPTION_SOCKETS_PER_ADDRESS: '500' };

interface Follower {
  key: string;
  field: 'events' | 'orderUpdated';
  subs: Subscription[];
}

/**
 * Fifty subscribers on `instances` (spread over them), events committed without a pause by staff (categories) and
 * four customers (orders: theirs alone may see them), on every live instance; the first instance is SIGKILLed and
 * restarted on the same database, and each of its subscribers resumes from its own last received id (with two
 * instances, every other one on the survivor). Then every subscriber has each event it may see that committed
 * after it subscribed, exactly once, in the feed's order.
 */
async function killAndResume(databaseUrl: string, instances: 1 | 2, services: Service[], clients: WsClient[]) {
  const first = await startService(SERVICE_ENV, { databaseUrl });
  services.push(first);
  const live: Service[] = [first];
  if (instances === 2) {
    const second = await startService(SERVICE_ENV, { databaseUrl, key: first.key });
    services.push(second);
    live.push(second);
  }
  const staff = new Client(first.url, first.key);
  const category = await staff.post('/v1/categories', { name: 'Resume stock' });
  const pet = await staff.post('/v1/pets', { name: 'Rex', categoryId: category.body.id });
  assert.equal((await staff.put(`/v1/store/inventory/${pet.body.id}`, { quantity: 100_000 })).status, 200);
  const customers: string[] = [];
  for (let n = 0; n < 4; n++) customers.push(await customerKey(first.url, first.key, `Follower ${n}`, 'business'));
  const baseline = (await feedIds(first.url, first.key)).at(-1)!;

  const keys = [first.key, ...customers];
  const followers: Follower[] = [];
  const where = new Map<Follower, Service>();
  const lastId = (f: Follower) => f.subs.flatMap((sub) => idsOf(sub, f.field)).at(-1);
  /** Subscribes `f` on `s`, after the last event it received (from now on, the first time). */
  const follow = async (f: Follower, s: Service) => {
    const { client } = wsClient(s.url, f.key);
    clients.push(client);
    const last = lastId(f);
    const query = f.field === 'events' ? EVENTS : ORDER_UPDATED;
    f.subs.push(await subscribe(client, query, last === undefined ? undefined : { after: globalId('Event', last) }));
    where.set(f, s);
  };
  // As the documented client does: a subscription the service ended for its backlog resumes after its last id.
  const resumeEnded = async (f: Follower) => {
    if (f.subs.at(-1)!.completed && live.includes(where.get(f)!)) await follow(f, where.get(f)!);
  };
  for (let n = 0; n < SUBSCRIBERS; n++) {
    const f: Follower = { key: keys[n % keys.length]!, field: n % 3 === 0 ? 'orderUpdated' : 'events', subs: [] };
    followers.push(f);
    await follow(f, live[n % live.length]!);
  }

  // Writers, each one request after another, on the live instances; a request to a killed one fails and moves on.
  let writing = true;
  let committed = 0;
  const write = async (key: string, body: () => [string, unknown]) => {
    for (let n = 0; writing; n++) {
      const target = live[n % live.length]!;
      const [path, payload] = body();
      try {
        const res = await new Client(target.url, key).post(path, payload, { skipContract: true });
        if (res.status === 201) committed++;
      } catch {
        await pause(20);
      }
      await pause(20);
    }
  };
  const writers = [
    write(first.key, () => ['/v1/categories', { name: `Resume ${randomBytes(6).toString('hex')}` }]),
    ...customers.map((key) => write(key, () => ['/v1/store/orders', { petId: pet.body.id, quantity: 1 }])),
  ];
  await eventually('every subscriber has its first events', () => followers.every((f) => f.subs.some((sub) => idsOf(sub, f.field).length)));

  first.child.kill('SIGKILL');
  await first.exited;
  live.splice(live.indexOf(first), 1);
  const restarted = await startService(SERVICE_ENV, { databaseUrl, key: first.key });
  services.push(restarted);
  live.push(restarted);
  // Commits the killed instance's subscribers miss until they are back: their back-fill brings them.
  const mark = committed;
  await eventually('commits after the restart', () => committed >= mark + 25, 20, 1500);
  const committedBefore = (await feedIds(restarted.url, first.key)).at(-1)!;

  const killed = followers.filter((f) => where.get(f) === first);
  assert.ok(killed.length >= SUBSCRIBERS / (2 * instances), 'the killed instance had its share of subscribers');
  for (const [n, f] of killed.entries()) {
    const resumedFrom = f.subs.length;
    await follow(f, instances === 2 && n % 2 === 0 ? live[0]! : restarted);
    // Categories committed while it was away: a resumed `events` subscription starts with its back-fill.
    if (f.field === 'events') {
      const sub = f.subs[resumedFrom]!;
      const start = await eventually('the back-fill', () => {
        const id = idsOf(sub, f.field)[0];
        return id !== undefined || sub.completed ? { id } : null;
      });
      if (start.id !== undefined) assert.ok(start.id <= committedBefore, 'the back-fill brought what it missed');
    }
  }
  await pause(500);
  writing = false;
  await Promise.all(writers);

  const byKey = new Map<string, Array<{ id: number; type: string }>>();
  for (const key of keys) byKey.set(key, await feed(restarted.url, key));
  for (const [n, f] of followers.entries()) {
    const expected = byKey
      .get(f.key)!
      .filter((e) => e.id > baseline && (f.field === 'events' || e.type.startsWith('order.')))
      .map((e) => e.id);
    const seen = await eventually(
      `subscriber ${n} caught up`,
      async () => {
        await resumeEnded(f);
        const ids = f.subs.flatMap((sub) => idsOf(sub, f.field));
        return ids.length >= expected.length ? ids : null;
      },
      50,
      600,
    );
    assert.deepEqual(seen, expected, `subscriber ${n} (${f.field}): every event it may see once, in the feed's order`);
  }
}

describe('subscriptions resume after an event id', () => {
  describe(`through a SIGKILL and a restart, continuously written (${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'SQLite'})`, () => {
    const services: Service[] = [];
    const clients: WsClient[] = [];
    const dir = mkdtempSync(join(tmpdir(), 'petstore-resume-'));
    const pg = process.env.TEST_DATABASE_URL;
    const pgName = `petstore_resume_${process.pid}_${randomBytes(3).toString('hex')}`;
    after(async () => {
      for (const c of clients) await c.dispose();
      for (const s of services) {
        s.child.kill('SIGKILL');
        await s.exited;
        s.cleanup();
      }
      if (pg) await dropDatabase(pg, pgName);
      rmSync(dir, { recursive: true, force: true });
    });

    it('when the service is killed and restarted, then each of 50 subscribers resumes from its last id and has every committed event exactly once, in order', async () => {
      const databaseUrl = pg ? await createDatabase(pg, pgName) : `sqlite:${join(dir, 'petstore.db')}`;
      await killAndResume(databaseUrl, 1, services, clients);
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

    /** The error a subscription was refused with (its only answer). */
    async function refusal(key: string, query: string, after: unknown) {
      const sub = await subscribe(connect(key), query, { after });
      await eventually('the refusal', () => sub.results.length > 0 || sub.errors.length > 0);
      assert.equal(sub.results.length, 1, JSON.stringify(sub.results));
      assert.equal(sub.results[0].data ?? null, null);
      return sub.results[0].errors[0];
    }

    it("when after is another customer's event, then it is refused as an id that names no event; a visible one back-fills only what the caller may see", async () => {
      const alice = await customerKey(t.url, t.adminKey, 'Alice');
      const bob = await customerKey(t.url, t.adminKey, 'Bob');
      await commit(t.url, t.adminKey, 1);
      const from = (await feedIds(t.url, bob)).at(-1)!;
      await order(alice);
      const staffFeed = await new Client(t.url, t.adminKey).get('/v1/events?types=order.placed&limit=100');
      const alicesOrder = staffFeed.body.at(-1).id as number;
      await order(bob);
      await order(alice);

      const lastId = (await feedIds(t.url, t.adminKey)).at(-1)!;
      for (const query of [EVENTS, ORDER_UPDATED]) {
        const foreign = await refusal(bob, query, globalId('Event', alicesOrder));
        const none = await refusal(bob, query, globalId('Event', lastId + 1000));
        assert.equal(foreign.extensions.code, 'VALIDATION_FAILED');
        assert.equal(none.extensions.code, 'VALIDATION_FAILED');
        assert.equal(foreign.message.replace(String(alicesOrder), 'N'), none.message.replace(String(lastId + 1000), 'N'), 'told apart');
        assert.equal(foreign.message, `after: there is no event ${alicesOrder} you may see.`);
      }
      // Alice herself resumes after it.
      const own = await subscribe(connect(alice), ORDER_UPDATED, { after: globalId('Event', alicesOrder) });
      await eventually("Alice's next order", () => own.results.length >= 1);
      assert.equal(own.results[0].errors, undefined, JSON.stringify(own.results));

      const sub = await subscribe(
        connect(bob),
        'subscription($after: ID) { events(after: $after) { id type data { ... on Order { id } } } }',
        { after: globalId('Event', from) },
      );
      const expected = (await feedIds(t.url, bob)).filter((id) => id > from);
      await eventually('the back-fill', () => sub.results.length >= expected.length);
      assert.deepEqual(idsOf(sub), expected);
      const aliceSees = new Set(await feedIds(t.url, alice));
      const bobsOrders = (await feedIds(t.url, bob)).filter((id) => !aliceSees.has(id));
      assert.ok(bobsOrders.length > 0, "Bob's own order events are back-filled");
      const staffOnly = (await feedIds(t.url, t.adminKey)).filter((id) => id > from && !expected.includes(id));
      assert.ok(staffOnly.includes(alicesOrder), "Alice's order events exist and are left out");
      for (const id of staffOnly) assert.ok(!idsOf(sub).includes(id), `Alice's event ${id} reached Bob`);
    });

    it('when after is not an event id (letters, 0, negative, a fraction, padded), then the subscription is refused with VALIDATION_FAILED naming after', async () => {
      for (const after of ['abc', '0', '-3', '1.5', ' 7', '', 'RXZlbnQ6MQ==']) {
        for (const query of [EVENTS, ORDER_UPDATED]) {
          const error = await refusal(t.adminKey, query, after);
          assert.equal(error.extensions.code, 'VALIDATION_FAILED', `${JSON.stringify(after)}: ${JSON.stringify(error)}`);
          assert.equal(error.message, "after must be an Event.id or an event's databaseId, as an event you received gave it.");
        }
      }
    });

    it("when after is an event's databaseId (REST's event id), then the subscription resumes after that event, as with its Event.id", async () => {
      await commit(t.url, t.adminKey, 3);
      const ids = await feedIds(t.url, t.adminKey);
      const from = ids.at(-3)!;
      for (const after of [String(from), globalId('Event', from)]) {
        const sub = await subscribe(connect(t.adminKey), EVENTS, { after });
        await eventually('the back-fill', () => sub.results.length >= 2);
        assert.deepEqual(idsOf(sub).slice(0, 2), ids.slice(-2), `after ${after}`);
      }
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

    it('when the back-fill reads 200 events, then it costs what paging them through the feed costs (two pages of 100), on top of the start', async () => {
      const key = await customerKey(t.url, t.adminKey, 'Payer');
      const client = new Client(t.url, key);
      const minuteUsed = async (): Promise<number> => (await client.get('/v1/rate_limit')).body.resources.minute.used;
      await commit(t.url, t.adminKey, 1);
      const from = (await feedIds(t.url, key)).at(-1)!;
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 200; i++) await recordEvent(em, 'category.created', { id: 2000 + i, name: `Backlog ${i}` });
      });
      // What the feed costs for them: a request per page, following `Link: rel="next"` until there is none.
      let pages = 0;
      for (let next: string | null = `/v1/events?limit=100&after=${from}`; next; pages++)
        next = (await client.get(next)).headers.get('link')?.match(/<([^>]+)>; rel="next"/)?.[1] ?? null;
      assert.equal(pages, 2);
      const before = await minuteUsed();
      const sub = await subscribe(connect(key), EVENTS, { after: globalId('Event', from) });
      await eventually('the back-fill', () => sub.results.length >= 200);
      await pause(200);
      assert.equal((await minuteUsed()) - before, 1 + pages);
      assert.deepEqual(
        idsOf(sub),
        (await feedIds(t.url, key)).filter((id) => id > from),
      );
    });

    it('when the budget runs out between back-fill pages, then the subscription ends with RATE_LIMITED saying when to retry (retryAfter), after the page it paid for', async () => {
      // Two requests a minute: the start and the first page of 100; the second page is refused.
      const { key } = await createAccount(t, { name: 'Thrifty', plan: 'enterprise', limits: { perMinute: 2, perDay: 1000 } });
      await commit(t.url, t.adminKey, 1);
      const from = (await feedIds(t.url, t.adminKey)).at(-1)!;
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 150; i++) await recordEvent(em, 'category.created', { id: 3000 + i, name: `Thrift ${i}` });
      });
      const sub = await subscribe(connect(key), EVENTS, { after: globalId('Event', from) });
      await eventually('the end', () => sub.completed || sub.errors.length > 0);
      const last = sub.results.at(-1);
      assert.equal(sub.results.length, 101, JSON.stringify(sub.results.slice(-2)));
      assert.equal(last?.errors?.[0]?.extensions?.code, 'RATE_LIMITED', JSON.stringify(last));
      const retryAfter = last.errors[0].extensions.retryAfter;
      assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, `retryAfter ${retryAfter}`);
      assert.ok(
        sub.results.slice(0, -1).every((r) => r.data?.events?.id),
        'the first page arrived whole',
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
      assert.match(last.errors[0].message, /More than 2 events \(the backlog bound\)/);
      assert.match(last.errors[0].message, /subscribe again with after: the last Event\.id you received/);
      assert.equal(sub.completed, true);
      // The recipe: subscribe again after the last id received, and the rest comes, once.
      const received = sub.results.slice(0, -1).map((r) => decodeEventId(r.data.events.id));
      const burst = (await feedIds(t.url, t.adminKey)).slice(-10);
      const again = await subscribe(connect(t.adminKey), EVENTS, { after: globalId('Event', received.at(-1) ?? burst[0]! - 1) });
      await eventually('the rest', () => received.length + again.results.length >= 10);
      assert.deepEqual([...received, ...idsOf(again)], burst);
    });

    it('when events commit during a back-fill longer than SUBSCRIPTION_BACKLOG_MAX, then the subscription does not end: it reads on and gives every event once', async () => {
      await commit(t.url, t.adminKey, 1);
      const from = (await feedIds(t.url, t.adminKey)).at(-1)!;
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 3000; i++) await recordEvent(em, 'category.created', { id: 5000 + i, name: `Old ${i}` });
      });
      const sub = await subscribe(connect(t.adminKey), EVENTS, { after: globalId('Event', from) });
      await eventually('the back-fill under way', () => sub.results.length >= 1, 5);
      // More than the bound (2) at once while the back-fill is still being read.
      await t.app.orm.em.fork().transactional(async (em) => {
        for (let i = 0; i < 10; i++) await recordEvent(em, 'category.created', { id: 9000 + i, name: `New ${i}` });
      });
      assert.ok(sub.results.length < 3000, `the back-fill was still being read (${sub.results.length} of 3000)`);
      await commit(t.url, t.adminKey, 3);
      const expected = (await feedIds(t.url, t.adminKey)).filter((id) => id > from);
      await eventually('every event', () => sub.results.length >= expected.length || sub.completed, 50, 400);
      assert.equal(sub.completed, false, JSON.stringify(sub.results.at(-1)));
      assert.deepEqual(idsOf(sub), expected);
    });
  });

  describe('on PostgreSQL, two instances, one SIGKILLed', async () => {
    const services: Service[] = [];
    const clients: WsClient[] = [];
    let databaseUrl = '';
    const skip = await onOwnPostgres('resume', {
      setup: async (url) => {
        databaseUrl = url;
      },
      teardown: async () => {
        for (const c of clients) await c.dispose();
        for (const s of services) {
          s.child.kill('SIGKILL');
          await s.exited;
          s.cleanup();
        }
      },
    });

    it('when one instance is killed, then its subscribers resume on the other or on its restart from their last id and every subscriber has each committed event exactly once, in order', {
      skip,
    }, async () => {
      await killAndResume(databaseUrl, 2, services, clients);
    });
  });
});

describe('a resuming subscription completed while its back-fill is being read', () => {
  it('when the client completes it while a back-fill page is being charged, then the pending answer ends it (nothing waits forever, nothing more is read)', async () => {
    let release!: () => void;
    const charged = new Promise<void>((resolve) => (release = resolve));
    let pagesRead = 0;
    let listening = 0;
    const context = {
      actor: { accountId: 1, keyId: 1, role: 'staff', plan: 'enterprise' },
      events: {
        backlogMax: 1000,
        subscribe: async () => {
          listening++;
          return () => void listening--;
        },
      },
      domain: {
        events: {
          resumePosition: async () => ({ id: 1 }),
          visibleAfter: async () => {
            pagesRead++;
            return [];
          },
        },
      },
      loaders: { clearAll: () => undefined },
      charge: () => charged,
      currentActor: async () => context.actor,
    } as unknown as GraphQLContext;
    const events = await visibleEvents(context, { accept: () => true, after: 1 });
    const pending = events.next();
    await events.return!();
    release();
    const outcome = await Promise.race([pending, new Promise((resolve) => setTimeout(() => resolve('still waiting after 2 s'), 2000))]);
    assert.deepEqual(outcome, { value: undefined, done: true });
    assert.equal(pagesRead, 0, 'no page read once completed');
    assert.equal(listening, 0, 'it stopped listening');
  });
});
