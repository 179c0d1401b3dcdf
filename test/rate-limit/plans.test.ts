/**
 * The plan table of docs/RATE-LIMITS.md beyond the free plan, and the health endpoints, which need no key and
 * are not rate limited (docs/OPERATIONS.md, "Health and shutdown").
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, startApp, type TestApp } from '../helpers/app.js';
import { assert429, assertKeyed } from './support.js';

describe('rate limits: the pro and business plans, and the health endpoints', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { BAN_THRESHOLD: '1000' } });
  });
  after(() => t.close());

  for (const [plan, perMinute, perDay] of [
    ['pro', 300, 10_000],
    ['business', 1000, 100_000],
  ] as const) {
    it(`when a ${plan} key makes a request, then its headers and GET /rate_limit show ${perMinute} a minute and ${perDay} a day`, async () => {
      const { client } = await createAccount(t, { name: `Plan ${plan}`, plan });
      const res = await client.get('/v1/pets');
      assert.equal(res.status, 200, res.text);
      assertKeyed(res, {
        resource: 'minute',
        limit: perMinute,
        remaining: perMinute - 1,
        policy: `"minute";q=${perMinute};w=60, "day";q=${perDay};w=86400`,
      });
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.body.plan, plan);
      assert.deepEqual(
        { minute: status.body.resources.minute.limit, day: status.body.resources.day.limit },
        { minute: perMinute, day: perDay },
      );
      assert.equal(status.body.resources.day.remaining, perDay - 1);
    });
  }

  it('when a key is over its limit and its address over the failed-authentication limit, then /healthz and /readyz still answer 200, without rate-limit headers', async () => {
    const { client } = await createAccount(t, { name: 'Exhausted', plan: 'free' });
    await Promise.all(Array.from({ length: 60 }, () => client.get('/v1/account')));
    assert429(await client.get('/v1/account'), 'RATE_LIMITED');
    for (let i = 0; i < 31; i++) await t.anonymous.get('/v1/pets', { key: `psk_unknown_${i}` });
    assert.equal((await t.anonymous.get('/v1/pets', { key: 'psk_unknown_more' })).status, 429);
    for (const path of ['/healthz', '/readyz']) {
      for (const key of [client.key, 'psk_unknown_health', null]) {
        const res = await t.anonymous.get(path, { key, skipContract: true });
        assert.equal(res.status, 200, `${path} with ${key ? 'a key' : 'no key'}: ${res.text}`);
        assert.equal(res.headers.get('x-ratelimit-limit'), null, `${path} carries rate-limit headers`);
        assert.equal(res.headers.get('retry-after'), null);
      }
    }
  });

  it('when /healthz and /readyz are asked many times with a key, then its budget is untouched', async () => {
    const { client } = await createAccount(t, { name: 'Prober', plan: 'free' });
    const before = (await client.get('/v1/rate_limit')).body.resources;
    for (let i = 0; i < 30; i++) {
      assert.equal((await client.get('/healthz', { skipContract: true })).status, 200);
      assert.equal((await client.get('/readyz', { skipContract: true })).status, 200);
    }
    const after = (await client.get('/v1/rate_limit')).body.resources;
    assert.equal(after.minute.used, before.minute.used);
    assert.equal(after.day.used, before.day.used);
  });
});
