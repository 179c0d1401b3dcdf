import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, type TestApp, type TestResponse } from '../helpers/app.js';
import { doc } from '../helpers/readme.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { assert429, assertKeyed, rateHeaders, startOn, statusCounts, type StoreKind } from './support.js';

/** One limiter guards both facades (docs/RATE-LIMITS.md): the same budget, the same headers, the same 429. */
const VIEWER = '{ viewer { id } }';

const gqlCode = (res: TestResponse) => res.body?.errors?.[0]?.extensions?.code;

const redis = await redisUrl();
for (const store of ['memory', 'redis'] as StoreKind[]) {
  const skip = store === 'redis' ? skipUnless(redis, 'Redis') : false;

  describe(`rate limits across REST and GraphQL, ${store} store`, { skip }, () => {
    let t: TestApp;
    let strict: TestApp;
    before(async () => {
      t = await startOn(store, redis, { env: { BAN_THRESHOLD: '1000' } });
      strict = await startOn(store, redis, { env: { BAN_THRESHOLD: '2' } });
    });
    after(async () => {
      await t?.close();
      await strict?.close();
    });

    it('when a free key sends 70 requests at once, half REST and half GraphQL, then exactly 60 pass', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      const responses = await Promise.all(
        Array.from({ length: 70 }, (_, i) => (i % 2 ? client.graphql(VIEWER) : client.get('/v1/account'))),
      );
      assert.deepEqual(statusCounts(responses), { 200: 60, 429: 10 });
      for (const res of responses.filter((r) => r.status === 200 && r.body.data)) assert.ok(res.body.data.viewer.id);
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.body.resources.minute.used, 60);
      assert.equal(status.body.resources.day.used, 60);
    });

    it('when a free key is over its limit, then REST and GraphQL both answer HTTP 429 RATE_LIMITED with the same headers', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      for (let i = 0; i < 60; i++) await (i % 2 ? client.graphql(VIEWER) : client.get('/v1/account'));
      const rest = await client.get('/v1/account');
      const graphql = await client.graphql(VIEWER);
      assert429(rest, 'RATE_LIMITED');
      assert.equal(graphql.status, 429, graphql.text);
      assert.equal(gqlCode(graphql), 'RATE_LIMITED');
      assert.equal(graphql.body.errors[0].extensions.status, 429);
      assert.equal(graphql.body.data, undefined, 'nothing was executed');
      for (const res of [rest, graphql])
        assertKeyed(res, { resource: 'minute', limit: 60, remaining: 0, policy: '"minute";q=60;w=60, "day";q=1000;w=86400' });
      const [r, g] = [rateHeaders(rest), rateHeaders(graphql)];
      // Milliseconds apart: a second boundary may fall between the two, nothing more.
      assert.ok(Math.abs(r.reset - g.reset) <= 1, `X-RateLimit-Reset ${r.reset} vs ${g.reset}`);
      assert.ok(Math.abs(r.retryAfter! - g.retryAfter!) <= 1, `Retry-After ${r.retryAfter} vs ${g.retryAfter}`);
      assert.ok(g.retryAfter! >= 1);
    });

    it('when a GraphQL query has 3 aliased root fields, then it costs 3; rateLimit and introspection cost nothing', async () => {
      const { client } = await createAccount(t, { plan: 'pro' });
      const aliased = await client.graphql('{ a: viewer { id } b: viewer { id } c: viewer { id } }');
      assert.equal(aliased.status, 200, aliased.text);
      assertKeyed(aliased, { resource: 'minute', limit: 300, remaining: 297 });
      const free = await client.graphql('{ rateLimit { plan resources { minute { used remaining } } } __typename }');
      assert.equal(free.status, 200, free.text);
      assert.deepEqual(free.body.data.rateLimit, { plan: 'pro', resources: { minute: { used: 3, remaining: 297 } } });
      assertKeyed(free, { resource: 'minute', limit: 300, remaining: 297 });
      const rest = await client.get('/v1/rate_limit');
      assert.equal(rest.body.resources.minute.used, 3);
    });

    it("when the remaining budget is smaller than a query's cost, then the query is refused whole and consumes nothing", async () => {
      const { client } = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 4, perDay: 100 } });
      assert.equal((await client.get('/v1/account')).status, 200);
      assert.equal((await client.get('/v1/account')).status, 200);
      const tooBig = await client.graphql('{ a: viewer { id } b: viewer { id } c: viewer { id } }');
      assert.equal(tooBig.status, 429, tooBig.text);
      assert.equal(gqlCode(tooBig), 'RATE_LIMITED');
      assertKeyed(tooBig, { resource: 'minute', limit: 4, remaining: 2 });
      // The refusal shows what the query costs and that nothing was charged: 3, within the limit of 4, so waiting helps.
      assert.deepEqual(tooBig.body.extensions?.cost, { requested: 3, charged: 0 });
      const fits = await client.graphql('{ a: viewer { id } b: viewer { id } }');
      assert.equal(fits.status, 200, fits.text);
      assertKeyed(fits, { resource: 'minute', limit: 4, remaining: 0 });
    });

    it('when a query costs more than the minute allows while the day is nearly spent too, then its 429 names the minute, the window it can never fit', async () => {
      const { client } = await createAccount(t, { plan: 'enterprise', limits: { perMinute: 4, perDay: 6 } });
      for (let i = 0; i < 4; i++) assert.equal((await client.get('/v1/account')).status, 200);
      const aliases = Array.from({ length: 5 }, (_, i) => `v${i}: viewer { id }`).join(' ');
      const hopeless = await client.graphql(`{ ${aliases} }`);
      assert.equal(hopeless.status, 429, hopeless.text);
      assert.equal(gqlCode(hopeless), 'RATE_LIMITED');
      assert.match(hopeless.body.errors[0].message, /costs 5, more than the minute limit of 4/);
      assertKeyed(hopeless, { resource: 'minute', limit: 4, remaining: 0 });
      // What a client branches on (the message may change): the cost requested is above the window's limit.
      assert.deepEqual(hopeless.body.extensions?.cost, { requested: 5, charged: 0 });
      assert.ok(hopeless.body.extensions.cost.requested > Number(hopeless.headers.get('x-ratelimit-limit')));
      // docs/RATE-LIMITS.md's back-off, as written: it gives the hopeless request up at once instead of waiting.
      const sample = /## How to back off[\s\S]*?```js\n([\s\S]*?)```/.exec(doc('RATE-LIMITS.md'))?.[1];
      assert.ok(sample, 'RATE-LIMITS.md has the back-off sample');
      const withBackoff = new Function(`${sample}; return withBackoff;`)() as (send: () => Promise<Response>) => Promise<Response>;
      let sent = 0;
      const started = Date.now();
      const given = await withBackoff(() => {
        sent++;
        return fetch(`${t.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': client.key! },
          body: JSON.stringify({ query: `{ ${aliases} }` }),
        });
      });
      assert.deepEqual([given.status, sent], [429, 1]);
      assert.ok(Date.now() - started < 5000, 'it did not wait');
      const retryAfter = Number(hopeless.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter} is the minute's reset, not the day's`);
    });

    it('when a key keeps sending a query that costs more than a whole window, then it is banned; sent once it is not', async () => {
      const aliases = Array.from({ length: 5 }, (_, i) => `v${i}: viewer { id }`).join(' ');
      const { client: once } = await createAccount(strict, { plan: 'enterprise', limits: { perMinute: 4, perDay: 100 } });
      assert.match((await once.graphql(`{ ${aliases} }`)).body.errors[0].message, /costs 5, more than the minute limit of 4/);
      assert.equal((await once.graphql(VIEWER)).status, 200, 'one refusal is not a ban');
      const { client } = await createAccount(strict, { plan: 'enterprise', limits: { perMinute: 4, perDay: 100 } });
      const codes = [];
      for (let i = 0; i < 4; i++) codes.push(gqlCode(await client.graphql(`{ ${aliases} }`)));
      assert.deepEqual(codes, ['RATE_LIMITED', 'RATE_LIMITED', 'API_KEY_BANNED', 'API_KEY_BANNED']);
      // The ban holds for the key's requests that fit too, on both facades.
      assert.equal(gqlCode(await client.graphql(VIEWER)), 'API_KEY_BANNED');
      assert429(await client.get('/v1/account'), 'API_KEY_BANNED');
    });

    it('when a banned key sends GraphQL, then it is refused before its document is read, free operations and broken bodies too', async () => {
      const { client } = await createAccount(strict, { plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } });
      assert.equal((await client.graphql(VIEWER)).status, 200);
      for (let i = 0; i < 2; i++) assert.equal(gqlCode(await client.graphql(VIEWER)), 'RATE_LIMITED');
      assert.equal(gqlCode(await client.graphql(VIEWER)), 'API_KEY_BANNED');
      // A free operation would have been answered once parsed; a ban spares the parsing, so it is refused too.
      const free = await client.graphql('{ rateLimit { plan } }');
      assert.equal(free.status, 429, free.text);
      assert.equal(gqlCode(free), 'API_KEY_BANNED');
      const broken = await fetch(`${strict.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': client.key! },
        body: '{"query": ',
      });
      assert.equal(broken.status, 429);
      // REST's rate-limit status, which reads nothing the key sent, still tells it when the ban ends.
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.status, 200);
      assert.ok(Date.parse(status.body.bannedUntil) > Date.now());
    });

    it('when a key keeps sending free requests past its free budget, then the refusals count toward a ban', async () => {
      const { client } = await createAccount(strict, { plan: 'free' });
      const answers = await Promise.all(
        Array.from({ length: 120 }, (_, i) => (i % 2 ? client.graphql('{ rateLimit { plan } }') : client.get('/v1/rate_limit'))),
      );
      assert.deepEqual(statusCounts(answers), { 200: 120 });
      const codes = [];
      for (let i = 0; i < 3; i++) codes.push((await client.get('/v1/rate_limit')).body.code);
      assert.deepEqual(codes, ['RATE_LIMITED', 'RATE_LIMITED', 'API_KEY_BANNED']);
      assert429(await client.get('/v1/account'), 'API_KEY_BANNED');
    });

    it('when a key keeps sending over both facades while limited, then it is banned on both with API_KEY_BANNED', async () => {
      const { client } = await createAccount(strict, { plan: 'enterprise', limits: { perMinute: 1, perDay: 100 } });
      assert.equal((await client.graphql(VIEWER)).status, 200);
      assert.equal(gqlCode(await client.graphql(VIEWER)), 'RATE_LIMITED');
      assert.equal((await client.get('/v1/account')).body.code, 'RATE_LIMITED');
      const banned = await client.graphql(VIEWER);
      assert.equal(banned.status, 429);
      assert.equal(gqlCode(banned), 'API_KEY_BANNED');
      const onRest = await client.get('/v1/account');
      assert429(onRest, 'API_KEY_BANNED');
      const [r, g] = [rateHeaders(onRest), rateHeaders(banned)];
      assert.ok(g.retryAfter! > 800 && Math.abs(r.retryAfter! - g.retryAfter!) <= 1, `Retry-After ${r.retryAfter} vs ${g.retryAfter}`);
    });
  });
}
