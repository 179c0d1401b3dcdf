import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'graphql-ws';
import { WebSocket } from 'ws';
import { Client, createAccount, recordSql, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { assert429 } from './support.js';

/**
 * The failed-authentication limiter per client address (docs/RATE-LIMITS.md, "Without a valid key"): it refuses unknown keys only, never
 * a valid one; the client address is the socket's unless TRUST_PROXY names the proxies; its memory is bounded.
 */
const badKey = (i: number | string) => `psk_guess${i}${'x'.repeat(24)}`;

/** The SQL statements requests send while `run` runs (ORM and prepared-statement reads). */
async function sqlDuring(t: TestApp, run: () => Promise<void>): Promise<string[]> {
  const sql = recordSql(t.app);
  sql.start();
  try {
    await run();
  } catch (error) {
    sql.stop();
    throw error;
  }
  return sql.stop();
}

const guess = (t: TestApp, key: string, xff?: string) =>
  t.anonymous.get('/v1/account', { key, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } });

describe('failed authentication per address: valid keys are never refused', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { AUTH_FAILURES_PER_MINUTE: '30' } });
  });
  after(() => t?.close());

  it('when an address sent more than 30 unknown keys, then its valid keys are served on both facades, while unknown keys get 429 RATE_LIMITED without a database lookup', async () => {
    const customer = await createAccount(t, { plan: 'pro' });
    for (let i = 0; i < 31; i++) await guess(t, badKey(i));
    assert429(await guess(t, badKey('over')), 'RATE_LIMITED');

    // Valid keys from the same address: one this instance has not authenticated yet, and the staff key.
    const rest = await customer.client.get('/v1/account');
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.body.id, customer.accountId);
    const gql = await t.admin.graphql('{ viewer { role } }');
    assert.equal(gql.status, 200, gql.text);
    assert.equal(gql.body.data.viewer.role, 'staff');

    const refused: TestResponse[] = [];
    const sql = await sqlDuring(t, async () => {
      for (let i = 0; i < 5; i++) refused.push(await guess(t, badKey(`rest${i}`)));
      for (let i = 0; i < 5; i++) refused.push(await t.anonymous.graphql('{ viewer { role } }', undefined, { key: badKey(`gql${i}`) }));
    });
    for (const res of refused.slice(0, 5)) assert429(res, 'RATE_LIMITED');
    for (const res of refused.slice(5)) {
      assert.equal(res.status, 429, res.text);
      assert.equal(res.body.errors[0].extensions.code, 'RATE_LIMITED');
      assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After');
    }
    // No unknown key is looked up: the only reads are of the keys created since the index was read.
    assert.deepEqual(
      sql.filter((statement) => !/created_at/.test(statement)),
      [],
      'unknown keys from an address over the limit are refused without looking them up',
    );

    // A key revoked here is known to be invalid at once.
    assert.equal((await t.admin.delete(`/v1/api-keys/${customer.keyId}`)).status, 204);
    assert429(await customer.client.get('/v1/account'), 'RATE_LIMITED');
  });
});

/** Whether a graphql-ws connection authenticated by `key` is accepted (true) or closed (its close code). */
function wsAccepts(url: string, key: string): Promise<true | number> {
  return new Promise((resolve) => {
    const client = createClient({
      url: `${url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { 'X-API-Key': key },
      retryAttempts: 0,
      lazy: false,
      onNonLazyError: () => undefined,
      on: {
        connected: () => {
          resolve(true);
          void client.dispose();
        },
        closed: (event: any) => resolve(event.code),
      },
    });
  });
}

describe('failed authentication per address: a key made a moment ago is never refused', () => {
  let t: TestApp;
  let other: TestApp;
  before(async () => {
    t = await startApp({ env: { AUTH_FAILURES_PER_MINUTE: '30' } });
    // A second instance over the same database, sharing the staff key.
    other = await startApp({ databaseUrl: t.config.database.url, env: { ADMIN_API_KEY: t.adminKey } });
  });
  after(async () => {
    await other?.close();
    await t?.close();
  });

  it('when an address over the failed-authentication limit uses a key created seconds ago (here, or on another instance), then REST, GraphQL and WebSocket serve it at once', async () => {
    for (let i = 0; i < 31; i++) await guess(t, badKey(`fresh${i}`));
    assert429(await guess(t, badKey('fresh-over')), 'RATE_LIMITED');

    const keys: Array<{ made: string; key: string }> = [];
    // A new account (POST /v1/accounts) and a new key on it, on this instance; the same on the other one.
    for (const [made, instance] of [
      ['here', t],
      ['on another instance', other],
    ] as const) {
      const account = await createAccount(instance, { plan: 'pro' });
      keys.push({ made: `${made}: the account's first key`, key: account.key });
      const created = await instance.admin.post(`/v1/accounts/${account.accountId}/api-keys`);
      assert.equal(created.status, 201, created.text);
      keys.push({ made: `${made}: a second key`, key: created.body.key });
    }
    for (const { made, key } of keys) {
      const client = new Client(t.url, key);
      const rest = await client.get('/v1/account');
      assert.equal(rest.status, 200, `REST, key made ${made}: ${rest.text}`);
      const gql = await client.graphql('{ viewer { role } }');
      assert.equal(gql.status, 200, `GraphQL, key made ${made}: ${gql.text}`);
      assert.equal(gql.body.data.viewer.role, 'customer');
      assert.equal(await wsAccepts(t.url, key), true, `WebSocket, key made ${made}`);
    }
    // Unknown keys are still refused.
    assert429(await guess(t, badKey('fresh-after')), 'RATE_LIMITED');
  });
});

describe('failed authentication per address: the client address', () => {
  const apps: TestApp[] = [];
  const start = async (env: Record<string, string>) => {
    const t = await startApp({ env: { AUTH_FAILURES_PER_MINUTE: '3', ...env } });
    apps.push(t);
    return t;
  };
  after(async () => {
    for (const t of apps) await t.close();
  });

  it('when TRUST_PROXY is not set, then a forged X-Forwarded-For is ignored: rotating it does not escape the limiter', async () => {
    const t = await start({});
    for (let i = 0; i < 3; i++) assert.equal((await guess(t, badKey(i), `198.51.100.${i}`)).status, 401);
    assert429(await guess(t, badKey(3), '198.51.100.77'), 'RATE_LIMITED');
  });

  it('when TRUST_PROXY=1, then the right-most entry is the client: rotating the left-most entries does not escape, another client is not locked out', async () => {
    const t = await start({ TRUST_PROXY: '1' });
    for (let i = 0; i < 3; i++) assert.equal((await guess(t, badKey(i), `10.9.9.${i}, 203.0.113.7`)).status, 401);
    assert429(await guess(t, badKey(3), '10.9.9.200, 203.0.113.7'), 'RATE_LIMITED');
    assert429(await guess(t, badKey(4), '203.0.113.7'), 'RATE_LIMITED');
    assert.equal((await guess(t, badKey(5), '203.0.113.7, 203.0.113.8')).status, 401, 'the victim named on the left is not locked out');
    assert.equal((await guess(t, badKey(6))).status, 401, 'the proxy itself (no header) is another client');
  });

  it('when TRUST_PROXY is a CIDR list, then the right-most entry not from a trusted proxy is the client', async () => {
    const t = await start({ TRUST_PROXY: '10.0.0.0/8,127.0.0.1' });
    for (let i = 0; i < 3; i++) assert.equal((await guess(t, badKey(i), `192.0.2.${i}, 198.51.100.4, 10.1.2.${i}`)).status, 401);
    assert429(await guess(t, badKey(3), '198.51.100.4, 10.200.0.1'), 'RATE_LIMITED');
    assert.equal((await guess(t, badKey(4), '198.51.100.5, 10.1.2.3')).status, 401);
  });

  it('when X-Forwarded-For is oversized or malformed, then it is ignored and the socket address counts', async () => {
    const t = await start({ TRUST_PROXY: '1' });
    const headers = ['garbage', `${'1.2.3.4, '.repeat(300)}203.0.113.9`, '203.0.113.9,,', '203.0.113.9, 999.1.1.1'];
    for (let i = 0; i < 3; i++) assert.equal((await guess(t, badKey(i), headers[i])).status, 401);
    assert429(await guess(t, badKey(3), headers[3]), 'RATE_LIMITED');
    assert429(await guess(t, badKey(4)), 'RATE_LIMITED');
    assert.equal((await guess(t, badKey(5), '203.0.113.9')).status, 401, 'a well-formed header names another client');
  });

  it('when failures come from many distinct addresses, then the tracked addresses stay at the cap', async () => {
    const t = await start({ TRUST_PROXY: '1', AUTH_FAILURES_MAX_ADDRESSES: '100' });
    for (let batch = 0; batch < 15; batch++) {
      const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => guess(t, badKey(i), `198.18.${batch}.${i + 1}`)));
      assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([401]));
    }
    assert.equal(t.app.gate.trackedAddresses(), 100);
    // IPv6: one /64 is one address.
    for (let i = 0; i < 4; i++) await guess(t, badKey(i), `2001:db8:1:2::${i + 1}`);
    assert429(await guess(t, badKey(9), '2001:db8:1:2:ffff::9'), 'RATE_LIMITED');
  });
});
