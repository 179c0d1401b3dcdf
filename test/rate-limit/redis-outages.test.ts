import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { Client, createAccount, startApp, type TestApp } from '../helpers/app.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { assert429, freshPrefix, sleep, statusCounts } from './support.js';
import { freePort, startRedis, stopRedis, waitFor } from './redis-server.js';

/** A hung or restarted Redis (docs/OPERATIONS.md): a circuit breaker to the insurance limiters, and bans that outlive Redis. */
const redis = await redisUrl();
const skip = skipUnless(redis, 'Redis');

/** Bans a key of a 1-per-minute account (BAN_THRESHOLD 2): one pass, two refusals, then the ban. */
async function banned(t: TestApp): Promise<{ client: Client; keyId: number; accountId: number }> {
  const acct = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } });
  assert.equal((await acct.client.get('/v1/account')).status, 200);
  for (let i = 0; i < 2; i++) assert429(await acct.client.get('/v1/account'), 'RATE_LIMITED');
  assert429(await acct.client.get('/v1/account'), 'API_KEY_BANNED');
  return acct;
}

describe('a hung Redis (SIGSTOP): the circuit breaker serves on the insurance limiters at once', { skip }, () => {
  let server: ChildProcess | undefined;
  let t: TestApp;
  before(async () => {
    const port = await freePort();
    server = await startRedis(port);
    // The short default, set here so the test keeps measuring it whatever the default becomes.
    t = await startApp({
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_KEY_PREFIX: freshPrefix(), REDIS_COMMAND_TIMEOUT_MS: '500' },
    });
  });
  after(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGCONT');
      await stopRedis(server);
    }
    await t?.close();
  });

  it('when Redis hangs, then after a few timeouts requests no longer wait for the 500 ms command timeout, readiness says degraded, and after SIGCONT the gate is back on Redis', async () => {
    const { client } = await createAccount(t, { plan: 'pro' });
    assert.equal((await client.get('/v1/account')).status, 200);
    assert.equal((await t.anonymous.get('/readyz', { skipContract: true })).body.checks.redis, 'up');

    server!.kill('SIGSTOP');
    // The first requests meet the timeout and open the circuit.
    for (let i = 0; i < 2; i++) assert.equal((await client.get('/v1/account')).status, 200);
    const slowest: number[] = [];
    for (let i = 0; i < 10; i++) {
      const started = Date.now();
      const res = await client.get('/v1/account');
      slowest.push(Date.now() - started);
      assert.equal(res.status, 200);
      assert.ok(res.headers.get('x-ratelimit-remaining'), 'headers from the insurance limiter');
    }
    assert.ok(Math.max(...slowest) < 300, `with the circuit open no request waits for the 500 ms Redis timeout: ${slowest.join(', ')} ms`);
    const ready = await t.anonymous.get('/readyz', { skipContract: true });
    assert.equal(ready.status, 200, 'degraded, still ready');
    assert.equal(ready.body.checks.redis, 'down');
    assert.equal(ready.body.checks.limiterDegraded, true);

    server!.kill('SIGCONT');
    await waitFor(async () => (await t.app.gate.ready()).redis === 'up');
    const readyAgain = await t.anonymous.get('/readyz', { skipContract: true });
    assert.equal(readyAgain.body.checks.limiterDegraded, undefined);
    // Back on Redis: its count goes on (the request before the hang, the few sent before the circuit
    // opened, which Redis runs when it resumes, and this one); the 10 served meanwhile are not in it.
    const back = await client.get('/v1/account');
    assert.equal(back.status, 200);
    const remaining = Number(back.headers.get('x-ratelimit-remaining'));
    assert.ok(remaining >= 300 - 4, `the shared count in Redis is used again (remaining ${remaining})`);
  });
});

describe('bans outlive a Redis restart and hold on the insurance limiter', { skip }, () => {
  let server: ChildProcess | undefined;
  let port: number;
  const apps: TestApp[] = [];
  before(async () => {
    port = await freePort();
    server = await startRedis(port);
  });
  after(async () => {
    for (const t of apps) await t.close();
    if (server) await stopRedis(server);
  });

  it('when a banned key meets a dead Redis and then a new empty one, then it is still 429 API_KEY_BANNED with the time left, and lifting the ban frees it', async () => {
    const env = { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_KEY_PREFIX: freshPrefix(), BAN_THRESHOLD: '2', BAN_SECONDS: '900' };
    const a = await startApp({ env });
    apps.push(a);
    const bannedAt = Date.now();
    const acct = await banned(a);

    await stopRedis(server!);
    server = undefined;
    await sleep(1100); // past this instance's own memory of the ban
    const whileDown = await acct.client.get('/v1/account');
    assert429(whileDown, 'API_KEY_BANNED');

    server = await startRedis(port);
    await waitFor(async () => (await a.app.gate.ready()).redis === 'up');
    // A second instance started after the restart: it has never seen the ban, and Redis is empty.
    const b = await startApp({ databaseUrl: a.config.database.url, env: { ...env, ADMIN_API_KEY: a.adminKey } });
    apps.push(b);
    for (const t of [a, b]) {
      const res = await new Client(t.url, acct.client.key).get('/v1/account');
      const h = assert429(res, 'API_KEY_BANNED');
      const left = 900 - (Date.now() - bannedAt) / 1000;
      assert.ok(h.retryAfter! <= 900 && h.retryAfter! >= left - 2, `Retry-After ${h.retryAfter} is the time left (~${Math.round(left)} s)`);
    }
    const listed = await b.admin.get(`/v1/accounts/${acct.accountId}/api-keys`);
    assert.ok(Date.parse(listed.body[0].bannedUntil) > Date.now() + 800_000, `bannedUntil ${listed.body[0].bannedUntil}`);

    assert.equal((await b.admin.delete(`/v1/api-keys/${acct.keyId}/ban`)).status, 204);
    assert.equal(
      (await new Client(b.url, acct.client.key).get('/v1/account')).status,
      200,
      'lifted on the instance that lifted it at once',
    );
    await sleep(1100); // the other instance's key cache
    const onA = await acct.client.get('/v1/account');
    assert.notEqual(onA.body?.code, 'API_KEY_BANNED', onA.text);
    assert.equal((await b.admin.get(`/v1/accounts/${acct.accountId}/api-keys`)).body[0].bannedUntil, null);
  });
});

describe('bans outlive a restart of the instance (memory store)', () => {
  it('when the only instance restarts, then a banned key is still 429 API_KEY_BANNED', async () => {
    const env = { REDIS_URL: '', BAN_THRESHOLD: '2' };
    const a = await startApp({ env });
    let b: TestApp | undefined;
    try {
      const acct = await banned(a);
      b = await startApp({ databaseUrl: a.config.database.url, env: { ...env, ADMIN_API_KEY: a.adminKey } });
      assert429(await new Client(b.url, acct.client.key).get('/v1/account'), 'API_KEY_BANNED');
      assert.deepEqual(statusCounts([await b.admin.get('/v1/account')]), { 200: 1 });
    } finally {
      await b?.close();
      await a.close();
    }
  });
});
