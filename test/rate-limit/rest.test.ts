import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, createAccount, type TestApp, type TestResponse } from '../helpers/app.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { assert429, assertKeyed, rateHeaders, sleep, startOn, statusCounts, type StoreKind } from './support.js';

const FREE_POLICY = '"minute";q=60;w=60, "day";q=1000;w=86400';

/** One suite, run on the memory store and on real Redis (docs/RATE-LIMITS.md). */
const redis = await redisUrl();
for (const store of ['memory', 'redis'] as StoreKind[]) {
  const skip = store === 'redis' ? skipUnless(redis, 'Redis') : false;

  describe(`rate limits on REST, ${store} store, real windows`, { skip }, () => {
    let t: TestApp;
    before(async () => {
      // A high ban threshold: these tests count refusals without being banned.
      t = await startOn(store, redis, { env: { BAN_THRESHOLD: '1000' } });
    });
    after(() => t?.close());

    it('when a free key sends 70 requests at once, then exactly 60 pass and the other 10 are 429 RATE_LIMITED with Retry-After', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      const responses = await Promise.all(Array.from({ length: 70 }, () => client.get('/v1/account')));
      assert.deepEqual(statusCounts(responses), { 200: 60, 429: 10 });
      for (const res of responses.filter((r) => r.status === 429)) {
        const h = assert429(res, 'RATE_LIMITED');
        assertKeyed(res, { resource: 'minute', limit: 60, remaining: 0, policy: FREE_POLICY });
        assert.ok(h.retryAfter! <= 60, `Retry-After ${h.retryAfter} is longer than the window`);
        assert.ok(h.reset <= Math.ceil(Date.now() / 1000) + 60);
      }
      // The successes saw every count from 59 down to 0 exactly once.
      const remaining = responses.filter((r) => r.status === 200).map((r) => rateHeaders(r).remaining);
      assert.deepEqual(
        remaining.sort((a, b) => a - b),
        Array.from({ length: 60 }, (_, i) => i),
      );
    });

    it('when requests are refused, then they leave both windows unchanged, and GET /rate_limit costs nothing', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      for (let i = 0; i < 60; i++) assert.equal((await client.get('/v1/account')).status, 200);
      for (let i = 0; i < 5; i++) assert429(await client.get('/v1/account'), 'RATE_LIMITED');
      const first = await client.get('/v1/rate_limit');
      const second = await client.get('/v1/rate_limit');
      assert.equal(first.status, 200);
      // Reset is a whole second computed from the store's time-to-live: two reads may straddle a second.
      const withoutReset = (body: typeof first.body) => JSON.parse(JSON.stringify(body, (k, v) => (k === 'reset' ? undefined : v)));
      assert.deepEqual(withoutReset(second.body), withoutReset(first.body));
      for (const w of ['minute', 'day'] as const) {
        assert.ok(Math.abs(second.body.resources[w].reset - first.body.resources[w].reset) <= 1, `${w} reset moved`);
      }
      assert.equal(first.body.plan, 'free');
      assert.equal(first.body.resources.minute.limit, 60);
      assert.equal(first.body.resources.minute.used, 60);
      assert.equal(first.body.resources.minute.remaining, 0);
      assert.equal(first.body.resources.day.limit, 1000);
      assert.equal(first.body.resources.day.used, 60);
      assert.equal(first.body.resources.day.remaining, 940);
      assert.equal(first.body.resources.day.windowSeconds, 86400);
      assertKeyed(first, { resource: 'minute', limit: 60, remaining: 0, policy: FREE_POLICY });
    });

    it('when a keyed request succeeds or fails (200, 400, 404, 405), then every response carries the headers and costs 1', async () => {
      const { client } = await createAccount(t, { plan: 'pro' });
      const policy = '"minute";q=300;w=60, "day";q=10000;w=86400';
      assertKeyed(await client.get('/v1/account'), { resource: 'minute', limit: 300, remaining: 299, policy });
      const bad = await client.get('/v1/pets?limit=0');
      assert.equal(bad.status, 400);
      assertKeyed(bad, { resource: 'minute', limit: 300, remaining: 298, policy });
      const missing = await client.get('/v1/no-such-thing');
      assert.equal(missing.status, 404);
      assertKeyed(missing, { resource: 'minute', limit: 300, remaining: 297, policy });
      const notAllowed = await client.request('PATCH', '/v1/rate_limit', { body: {} });
      assert.equal(notAllowed.status, 405);
      assertKeyed(notAllowed, { resource: 'minute', limit: 300, remaining: 296, policy });
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.body.resources.minute.used, 4);
      assertKeyed(status, { resource: 'minute', limit: 300, remaining: 296, policy });
    });

    it('when the day window has fewer requests left than the minute, then the headers describe the day and its 429 waits for the day', async () => {
      const { client } = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 100, perDay: 3 } });
      const policy = '"minute";q=100;w=60, "day";q=3;w=86400';
      assertKeyed(await client.get('/v1/account'), { resource: 'day', limit: 3, remaining: 2, policy });
      await client.get('/v1/account');
      await client.get('/v1/account');
      const refused = await client.get('/v1/account');
      const h = assert429(refused, 'RATE_LIMITED');
      assertKeyed(refused, { resource: 'day', limit: 3, remaining: 0, policy });
      assert.ok(h.retryAfter! > 60, `Retry-After ${h.retryAfter} should wait for the day window`);
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.body.resources.minute.used, 3, 'the refused request did not count in the minute either');
    });

    it('when two keys of one account share its quota, then together they get exactly the budget', async () => {
      const acct = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 4, perDay: 100 } });
      const second = await t.admin.post(`/v1/accounts/${acct.accountId}/api-keys`);
      assert.equal(second.status, 201, second.text);
      const other = new Client(t.url, second.body.key);
      const responses = await Promise.all([acct.client, other, acct.client, other, acct.client, other].map((c) => c.get('/v1/account')));
      assert.deepEqual(statusCounts(responses), { 200: 4, 429: 2 });
    });

    it("when staff changes an enterprise account's limits, then its very next request is judged by them", async () => {
      const acct = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 10, perDay: 100 } });
      for (let i = 0; i < 3; i++) assert.equal((await acct.client.get('/v1/account')).status, 200);
      const lowered = await t.admin.patch(`/v1/accounts/${acct.accountId}`, { limits: { perMinute: 3, perDay: 100 } });
      assert.equal(lowered.status, 200, lowered.text);
      const refused = await acct.client.get('/v1/account');
      assert429(refused, 'RATE_LIMITED');
      assertKeyed(refused, { resource: 'minute', limit: 3, remaining: 0, policy: '"minute";q=3;w=60, "day";q=100;w=86400' });
      const raised = await t.admin.patch(`/v1/accounts/${acct.accountId}`, { limits: { perMinute: 20, perDay: 100 } });
      assert.equal(raised.status, 200, raised.text);
      assertKeyed(await acct.client.get('/v1/account'), { resource: 'minute', limit: 20, remaining: 16 });
    });

    it('when a browser calls from an allowed origin, then it may read the rate-limit headers and Retry-After', async () => {
      const res = await t.admin.get('/v1/account', { headers: { Origin: 'https://studio.apollographql.com' } });
      const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
      for (const name of [
        'x-ratelimit-limit',
        'x-ratelimit-remaining',
        'x-ratelimit-reset',
        'x-ratelimit-resource',
        'ratelimit-policy',
        'ratelimit',
        'retry-after',
        'x-request-id',
      ]) {
        assert.ok(exposed.includes(name), `${name} is not exposed: ${exposed.join(', ')}`);
      }
    });

    it("when a request has no valid key, then it carries the per-address limiter's headers", async () => {
      const res = await t.anonymous.get('/v1/account');
      assert.equal(res.status, 401);
      const h = rateHeaders(res);
      assert.equal(h.limit, 30);
      assert.equal(h.resource, null);
    });
  });

  describe(`rate limits on REST, ${store} store, short windows`, { skip }, () => {
    let t: TestApp;
    before(async () => {
      t = await startOn(store, redis, { env: { BAN_THRESHOLD: '3', BAN_SECONDS: '60' }, windows: { minute: 2, day: 86_400 } });
    });
    after(() => t?.close());

    it('when a client waits Retry-After each time it is refused, then it is never banned and gets the full budget each window', async () => {
      const { client } = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 3, perDay: 1000 } });
      for (let round = 0; round < 3; round++) {
        // Refused up to the ban threshold in each window, then waiting as told.
        const statuses: number[] = [];
        let last: TestResponse | undefined;
        for (let i = 0; i < 6; i++) {
          last = await client.get('/v1/account');
          statuses.push(last.status);
        }
        assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429], `round ${round}`);
        const h = assert429(last!, 'RATE_LIMITED');
        assert.ok(h.retryAfter! <= 2, `Retry-After ${h.retryAfter} is longer than the 2 s window`);
        await sleep(h.retryAfter! * 1000);
      }
    });

    it('when a key keeps sending while limited, then it is banned for BAN_SECONDS, even after its window resets, until staff lifts the ban', async () => {
      const acct = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 2, perDay: 1000 } });
      const { client } = acct;
      assert.equal((await client.get('/v1/account')).status, 200);
      assert.equal((await client.get('/v1/account')).status, 200);
      for (let i = 0; i < 3; i++) assert429(await client.get('/v1/account'), 'RATE_LIMITED');
      const banned = await client.get('/v1/account');
      const h = assert429(banned, 'API_KEY_BANNED');
      assert.ok(h.retryAfter! > 55 && h.retryAfter! <= 60, `Retry-After ${h.retryAfter} should be the ban's 60 s`);

      await sleep(2100); // the 2 s minute window has reset; the ban has not
      const still = await client.get('/v1/account');
      const h2 = assert429(still, 'API_KEY_BANNED');
      assert.ok(h2.retryAfter! <= h.retryAfter! && h2.retryAfter! > 50);
      assert.equal(h2.resource, 'minute');

      // The ban is the key's: another key of the same account works, and GET /rate_limit stays free. It tells the
      // banned key when its ban ends, in the body and in the headers (nothing left until then), on both facades.
      const other = await t.admin.post(`/v1/accounts/${acct.accountId}/api-keys`);
      const otherClient = new Client(t.url, other.body.key);
      assert.equal((await otherClient.get('/v1/account')).status, 200);
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.status, 200);
      const until = Date.parse(status.body.bannedUntil);
      assert.ok(Math.abs(until / 1000 - (Date.now() / 1000 + h2.retryAfter!)) <= 2, `bannedUntil ${status.body.bannedUntil}`);
      const sh = rateHeaders(status);
      assert.deepEqual([sh.remaining, sh.retryAfter], [0, null]);
      assert.ok(Math.abs(sh.reset - Math.ceil(until / 1000)) <= 1, `X-RateLimit-Reset ${sh.reset} vs ${until}`);
      assert.equal((await otherClient.get('/v1/rate_limit')).body.bannedUntil, null);
      assert.deepEqual((await otherClient.graphql('{ rateLimit { bannedUntil } }')).body.data, { rateLimit: { bannedUntil: null } });

      assert.equal((await t.admin.delete(`/v1/api-keys/${acct.keyId}/ban`)).status, 204);
      const lifted = await client.get('/v1/account');
      assert.equal(lifted.status, 200, lifted.text);
      assert.equal(lifted.body.apiKey.bannedUntil, null);
      assert.equal((await client.get('/v1/rate_limit')).body.bannedUntil, null);
    });

    it('when a key is banned, then the ban registry reports when the ban ends, and lifting it clears it', async () => {
      const acct = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 1, perDay: 1000 } });
      const ban = await t.app.gate.bans.bannedUntil(acct.keyId);
      assert.equal(ban, null);
      await acct.client.get('/v1/account');
      for (let i = 0; i < 4; i++) await acct.client.get('/v1/account');
      const until = await t.app.gate.bans.bannedUntil(acct.keyId);
      assert.ok(until && until.getTime() > Date.now() + 50_000, `bannedUntil ${until?.toISOString()}`);
      await t.app.gate.bans.lift(acct.keyId);
      assert.equal(await t.app.gate.bans.bannedUntil(acct.keyId), null);
    });
  });

  describe(`failed authentication, ${store} store`, { skip }, () => {
    let t: TestApp;
    before(async () => {
      t = await startOn(store, redis, { env: { AUTH_FAILURES_PER_MINUTE: '3' } });
    });
    after(() => t?.close());

    it('when an address sends too many invalid keys, then it gets 429 RATE_LIMITED for unknown keys, its valid key is still served, and public documents stay open', async () => {
      const guesses = [];
      for (let i = 0; i < 3; i++) guesses.push(await t.anonymous.get('/v1/account', { key: `psk_guess${i}xxxxxxxxxxxxxxxxxxxxxxx` }));
      assert.deepEqual(
        guesses.map((r) => r.status),
        [401, 401, 401],
      );
      assert.deepEqual(
        guesses.map((r) => rateHeaders(r).remaining),
        [2, 1, 0],
      );
      for (const r of guesses) assert.equal(rateHeaders(r).limit, 3);
      const refused = await t.anonymous.get('/v1/account', { key: 'psk_guess3xxxxxxxxxxxxxxxxxxxxxxx' });
      assert429(refused, 'RATE_LIMITED');
      // The limiter refuses unknown keys only: a valid key from the same address is served.
      assert.equal((await t.admin.get('/v1/account')).status, 200);
      assert429(await t.anonymous.get('/v1/account', { key: 'psk_guess4xxxxxxxxxxxxxxxxxxxxxxx' }), 'RATE_LIMITED');
      assert.equal((await t.anonymous.get('/v1/openapi.json')).status, 200);
      assert.equal((await t.anonymous.get('/v1/account')).status, 401, 'no key at all is still plainly 401');
    });
  });
}
