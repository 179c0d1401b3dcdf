/**
 * Subscription caps across instances: with PostgreSQL + Redis, an account's cap counts its
 * subscriptions on every instance, and the slots of an instance killed with SIGKILL come back once
 * their lease runs out (SUBSCRIPTION_LEASE_MS).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Client as WsClient } from 'graphql-ws';
import { startApp, type TestApp } from '../helpers/app.js';
import { onOwnPostgres, redisUrl } from '../helpers/services.js';
import { freePort, sample, startService, type Service } from '../ops/support.js';
import { eventually, subscribe, wsClient } from './support.js';

// Short for the test, yet long enough that a busy machine's event-loop stalls do not let a live instance's leases lapse.
const LEASE_MS = 3000;
const query = 'subscription { events { id } }';

/** Waits until the instance at `url` has `n` subscriptions open (its gauge): they hold their slots then. */
const openOn = (url: string, n: number) =>
  eventually(
    `${n} subscriptions open on ${url}`,
    async () => sample(await (await fetch(`${url}/metrics`)).text(), 'petstore_graphql_subscriptions') === n,
  );

/** Subscribes: subscribe() resolves once the instance has refused it (an error) or counts it open. */
const attempt = (ws: WsClient) => subscribe(ws, query);

const refusedCode = (sub: { errors: unknown[] }) =>
  ((sub.errors[0] as any[] | undefined)?.[0]?.extensions?.code as string | undefined) ?? null;

describe('subscription caps: two instances on PostgreSQL + Redis', async () => {
  const redis = await redisUrl();
  let database = '';
  let env: Record<string, string> = {};
  let a: TestApp;
  let b: TestApp;
  const clients: WsClient[] = [];
  const connect = (url: string, key: string) => {
    const { client } = wsClient(url, key);
    clients.push(client);
    return client;
  };
  async function freeAccount(label: string) {
    const res = await a.admin.post('/v1/accounts', { name: label, role: 'customer', plan: 'free' });
    assert.equal(res.status, 201, res.text);
    return res.body.apiKey.key as string;
  }

  const skip = await onOwnPostgres(
    'subcaps',
    {
      setup: async (url) => {
        database = url;
        env = {
          REDIS_URL: redis!,
          RATE_LIMIT_KEY_PREFIX: `petstore-subcaps-${randomBytes(4).toString('hex')}`,
          ADMIN_API_KEY: `psk_${randomBytes(24).toString('base64url')}`,
          SUBSCRIPTION_LEASE_MS: String(LEASE_MS),
          // Patient: a slot call timed out on a loaded machine would be counted in one instance's memory, and the cap would not hold across them.
          REDIS_COMMAND_TIMEOUT_MS: '5000',
        };
        a = await startApp({ databaseUrl: database, env });
        b = await startApp({ databaseUrl: database, env });
      },
      teardown: async () => {
        for (const c of clients) await c.dispose();
        await a?.close();
        await b?.close();
      },
    },
    { Redis: redis },
  );

  it('when a free account holds its 2 subscriptions on instance A, then a third on instance B is PLAN_LIMIT_REACHED, and completing one on A frees a place on B', {
    skip,
  }, async () => {
    const key = await freeAccount('Two places');
    const onA = connect(a.url, key);
    const onB = connect(b.url, key);
    const first = await subscribe(onA, query);
    const second = await subscribe(onA, query);
    await openOn(a.url, 2);
    assert.deepEqual([...first.errors, ...second.errors], []);
    const third = await attempt(onB);
    assert.equal(refusedCode(third), 'PLAN_LIMIT_REACHED', JSON.stringify(third.errors));
    assert.equal((third.errors[0] as any[])[0].extensions.status, 409);
    // Held past several leases: the heartbeat keeps A's slots, so B stays refused.
    await new Promise((r) => setTimeout(r, LEASE_MS + 500));
    assert.equal(refusedCode(await attempt(onB)), 'PLAN_LIMIT_REACHED', 'the slots outlive their first lease while A holds them');
    first.dispose();
    const next = await eventually(
      'a place on B',
      async () => {
        const sub = await attempt(onB);
        if (refusedCode(sub) === null) return sub;
        sub.dispose();
        return null;
      },
      50,
      20,
    );
    assert.deepEqual(next.errors, []);
    next.dispose();
    second.dispose();
  });

  it("when the instance holding an account's subscriptions is killed (SIGKILL), then its slots come back after the lease", {
    skip,
  }, async () => {
    const key = await freeAccount('Killed holder');
    let victim: Service | undefined;
    try {
      victim = await startService(env, { databaseUrl: database, key: env.ADMIN_API_KEY! });
      const onVictim = connect(victim.url, key);
      const held = [await subscribe(onVictim, query), await subscribe(onVictim, query)];
      await openOn(victim.url, 2);
      assert.deepEqual(
        held.flatMap((s) => s.errors),
        [],
      );
      const onB = connect(b.url, key);
      assert.equal(refusedCode(await attempt(onB)), 'PLAN_LIMIT_REACHED', 'the victim holds both places');
      victim.child.kill('SIGKILL');
      await victim.exited;
      // Each place has its own lease (renewed at its own moments): they come back one after the other.
      const placeBack = (which: string) =>
        eventually(
          `the ${which} place back on B`,
          async () => {
            const sub = await attempt(onB);
            if (refusedCode(sub) === null) return sub;
            sub.dispose();
            return null;
          },
          100,
          80,
        );
      const back = await placeBack('first');
      const another = await placeBack('second');
      assert.deepEqual([...back.errors, ...another.errors], [], 'both places are back');
      assert.equal(refusedCode(await attempt(onB)), 'PLAN_LIMIT_REACHED', 'and the cap still holds');
    } finally {
      victim?.child.kill('SIGKILL');
      victim?.cleanup();
    }
  });
});

describe('subscription caps: Redis down', () => {
  it('when REDIS_URL points at a dead port, then subscriptions still start and the cap holds on the instance (counted in memory)', async () => {
    const t = await startApp({ env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, SUBSCRIPTION_LEASE_MS: String(LEASE_MS) } });
    try {
      const res = await t.admin.post('/v1/accounts', { name: 'No Redis', role: 'customer', plan: 'free' });
      const ws = wsClient(t.url, res.body.apiKey.key).client;
      const first = await subscribe(ws, query);
      const second = await subscribe(ws, query);
      await openOn(t.url, 2);
      assert.deepEqual([...first.errors, ...second.errors], [], 'never refused because of Redis');
      assert.equal(refusedCode(await attempt(ws)), 'PLAN_LIMIT_REACHED');
      await ws.dispose();
    } finally {
      await t.close();
    }
  });
});
