import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { Client, createAccount, startApp, type TestApp } from '../helpers/app.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { assertKeyed, freshPrefix, PATIENT_REDIS, sleep, startOn, statusCounts } from './support.js';
import { freePort, startRedis, stopRedis, waitFor } from './redis-server.js';

/** Redis as the shared store (docs/RATE-LIMITS.md, "Several instances"): one budget across instances, and outages that degrade, never fail. */
const redis = await redisUrl();
const skip = skipUnless(redis, 'Redis');

/** Two instances on one database and one Redis prefix, as behind a load balancer; both with a patient command timeout, so the counts are Redis's. */
async function startPair(env: Record<string, string>): Promise<[TestApp, TestApp]> {
  const prefix = freshPrefix();
  const a = await startOn('redis', redis, { prefix, env });
  const b = await startApp({
    databaseUrl: a.config.database.url,
    env: { REDIS_URL: redis!, RATE_LIMIT_KEY_PREFIX: prefix, ADMIN_API_KEY: a.adminKey, ...PATIENT_REDIS, ...env },
  });
  return [a, b];
}

describe('rate limits on Redis: two instances share one budget and one ban list', { skip }, () => {
  let a: TestApp;
  let b: TestApp;
  let strictA: TestApp;
  let strictB: TestApp;
  before(async () => {
    [a, b] = await startPair({ BAN_THRESHOLD: '1000' });
    [strictA, strictB] = await startPair({ BAN_THRESHOLD: '2' });
  });
  after(async () => {
    for (const t of [b, a, strictB, strictA]) await t?.close();
  });

  it('when a free key sends 70 requests at once spread over both instances, then exactly 60 pass in total', async () => {
    const { key } = await createAccount(a, { plan: 'free' });
    const clients = [new Client(a.url, key), new Client(b.url, key)];
    const responses = await Promise.all(Array.from({ length: 70 }, (_, i) => clients[i % 2]!.get('/v1/account')));
    assert.deepEqual(statusCounts(responses), { 200: 60, 429: 10 });
    const [onA, onB] = await Promise.all(clients.map((c) => c.get('/v1/rate_limit')));
    assert.equal(onA.body.resources.minute.used, 60);
    assert.equal(onA.body.resources.day.used, 60, 'refusals on either instance counted nowhere');
    // Each instance turns the store's remaining time into a Unix second by its own clock, so the two may round
    // to neighbouring seconds; everything else is one shared state.
    for (const w of ['minute', 'day'] as const) {
      const { reset: resetB, ...restB } = onB.body.resources[w];
      const { reset: resetA, ...restA } = onA.body.resources[w];
      assert.deepEqual(restB, restA, `${w}: one budget on both instances`);
      assert.ok(Math.abs(resetB - resetA) <= 1, `${w}: resets ${resetA} and ${resetB} name the same window`);
    }
  });

  it('when a key is banned through one instance, then the other refuses it too, and a lift on the other frees it everywhere', async () => {
    const acct = await createAccount(strictA, { plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } });
    const onA = new Client(strictA.url, acct.key);
    const onB = new Client(strictB.url, acct.key);
    assert.equal((await onA.get('/v1/account')).status, 200);
    assert.equal((await onA.get('/v1/account')).body.code, 'RATE_LIMITED');
    assert.equal((await onB.get('/v1/account')).body.code, 'RATE_LIMITED');
    assert.equal((await onA.get('/v1/account')).body.code, 'API_KEY_BANNED');
    assert.equal((await onB.get('/v1/account')).body.code, 'API_KEY_BANNED');
    assert.equal((await strictB.admin.delete(`/v1/api-keys/${acct.keyId}/ban`)).status, 204);
    // A remembers the ban for at most a second before asking Redis again.
    await sleep(1100);
    assert.equal((await onA.get('/v1/account')).body.code, 'RATE_LIMITED', 'no longer banned, still over the minute quota');
    assert.equal(await strictA.app.gate.bans.bannedUntil(acct.keyId), null);
  });
});

describe('rate limits on Redis: outages degrade to per-instance limits', { skip }, () => {
  it('when Redis is unreachable from the start, then requests are served under the insurance limiter, exact per instance, with no 5xx', async () => {
    const t = await startApp({ env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_KEY_PREFIX: freshPrefix(), BAN_THRESHOLD: '1000' } });
    try {
      const { client } = await createAccount(t, { plan: 'free' });
      const responses = await Promise.all(Array.from({ length: 70 }, () => client.get('/v1/account')));
      assert.deepEqual(statusCounts(responses), { 200: 60, 429: 10 });
      const ready = await t.anonymous.get('/readyz', { skipContract: true });
      assert.equal(ready.status, 200, 'a Redis outage degrades; the instance stays in the load balancer');
      assert.equal(ready.body.checks.limiterStore, 'redis');
      assert.equal(ready.body.checks.redis, 'down');
    } finally {
      await t.close();
    }
  });

  describe('when the Redis it uses stops mid-test and comes back', () => {
    let server: ChildProcess | undefined;
    let port: number;
    let t: TestApp;
    let client: Client;

    before(async () => {
      port = await freePort();
      server = await startRedis(port);
      t = await startApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_KEY_PREFIX: freshPrefix() } });
      ({ client } = await createAccount(t, { plan: 'free' }));
    });
    after(async () => {
      await t?.close();
      server?.kill('SIGKILL');
    });

    it('then every request is still answered (200, never 5xx), and the shared counts resume once it is back', async () => {
      for (let i = 0; i < 5; i++) assertKeyed(await client.get('/v1/account'), { resource: 'minute', limit: 60, remaining: 59 - i });
      assert.equal((await t.anonymous.get('/readyz', { skipContract: true })).body.checks.redis, 'up');

      await stopRedis(server!);
      server = undefined;
      const during = await Promise.all(Array.from({ length: 10 }, () => client.get('/v1/account')));
      assert.deepEqual(statusCounts(during), { 200: 10 });
      for (const res of during) assert.ok(res.headers.get('x-ratelimit-remaining'), 'headers still sent on the insurance limiter');
      const ready = await t.anonymous.get('/readyz', { skipContract: true });
      assert.equal(ready.status, 200);
      assert.equal(ready.body.checks.redis, 'down');

      server = await startRedis(port);
      await waitFor(async () => (await t.app.gate.ready()).redis === 'up');
      // A fresh Redis (no persistence) starts the window over: the shared count is Redis's again.
      assertKeyed(await client.get('/v1/account'), { resource: 'minute', limit: 60, remaining: 59 });
    });
  });
});
