/**
 * Nothing answers without bound for free (docs/RATE-LIMITS.md): a GraphQL document refused before it runs costs 1
 * as a REST request does, the free requests (rate-limit status, introspection, the API documents) have a per-key
 * budget of their own on both facades, and a document that would make validation's work grow with the square of
 * its size is refused before it is validated, over HTTP and over WebSocket.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, type TestApp, type TestResponse } from '../helpers/app.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { eventually, subscribe, wsClient } from '../events/support.js';
import { startOn, statusCounts, type StoreKind } from './support.js';

const code = (res: TestResponse) => res.body?.errors?.[0]?.extensions?.code;
const remaining = (res: TestResponse) => Number(res.headers.get('x-ratelimit-remaining'));
/** The flood of the attack: one field asked 239 times, under a new operation name each time (no cache helps). */
const repeated = (i: number, times = 239) => `query q${i} { ${'rateLimit { plan } '.repeat(times)}}`;

const redis = await redisUrl();
for (const store of ['memory', 'redis'] as StoreKind[]) {
  describe(`documents that cost nothing are bounded, ${store} store`, {
    skip: store === 'redis' ? skipUnless(redis, 'Redis') : false,
  }, () => {
    let t: TestApp;
    before(async () => {
      t = await startOn(store, redis, { env: { BAN_THRESHOLD: '1000', FREE_READS_PER_MINUTE: '20' } });
    });
    after(async () => {
      await t?.close();
    });

    it('when a free key floods a field repeated 239 times, then each is refused before validation, costs 1, and the 61st is 429', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      const first = await client.graphql(repeated(0));
      assert.equal(first.status, 400, first.text);
      assert.equal(code(first), 'VALIDATION_FAILED');
      assert.match(first.body.errors[0].message, /repeats fields too often: more than 30 fields .* "rateLimit"/);
      assert.equal(remaining(first), 59, 'the refusal took a point');
      const rest = await Promise.all(Array.from({ length: 69 }, (_, i) => client.graphql(repeated(i + 1))));
      assert.deepEqual(statusCounts(rest), { 400: 59, 429: 10 });
      assert.equal(code(rest.find((r) => r.status === 429)!), 'RATE_LIMITED');
      assert.equal((await client.get('/v1/account')).status, 429, 'the account budget is spent');
    });

    it('when a key sends 70 invalid documents, then 60 are answered 400 and 10 are 429, on the account budget REST shares', async () => {
      const { client } = await createAccount(t, { plan: 'free' });
      const answers = await Promise.all(
        Array.from({ length: 70 }, (_, i) => (i % 2 ? client.graphql(`query bad${i} { nope${i} }`) : client.graphql(`{ pets(first: 5) `))),
      );
      assert.deepEqual(statusCounts(answers), { 400: 60, 429: 10 });
      for (const res of answers.filter((r) => r.status === 400)) assert.equal(code(res), 'VALIDATION_FAILED', res.text);
      const status = await client.get('/v1/rate_limit');
      assert.equal(status.body.resources.minute.used, 60);
    });

    it('when a key reads its rate limit past the free budget on either facade, then it is 429 with Retry-After, the account budget untouched', async () => {
      const { client } = await createAccount(t, { plan: 'pro' });
      const reads = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          i % 3 === 0
            ? client.get('/v1/rate_limit')
            : i % 3 === 1
              ? client.graphql(`query r${i} { rateLimit { plan } }`)
              : client.graphql(`query i${i} { __typename }`),
        ),
      );
      assert.deepEqual(statusCounts(reads), { 200: 20, 429: 10 });
      for (const res of reads.filter((r) => r.status === 429)) {
        assert.equal(res.body.code ?? code(res), 'RATE_LIMITED', res.text);
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
        assert.equal(remaining(res), 300, 'the account budget is untouched');
      }
      // A request that costs something is still served: the free budget is apart from the account's.
      const paid = await client.get('/v1/account');
      assert.equal(paid.status, 200);
      assert.equal(remaining(paid), 299);
    });

    it('when invalid documents come without a key, then they count against the address as every keyless GraphQL request does', async () => {
      const anonymous = (await createAccount(t, { plan: 'free' })).client.withKey(null);
      const answers = await Promise.all(Array.from({ length: 35 }, (_, i) => anonymous.graphql(`query a${i} { nope }`)));
      // AUTH_FAILURES_PER_MINUTE (30): every keyless GraphQL request counts against the address, refused ones too.
      assert.equal(statusCounts(answers)[429], 5);
    });
  });
}

describe('a document with too many repeated fields over WebSocket', () => {
  let t: TestApp;
  before(async () => {
    t = await startOn('memory', undefined, { env: { GRAPHQL_MAX_REPEATED_FIELDS: '5' } });
  });
  after(async () => {
    await t?.close();
  });

  it('when a subscription repeats a field past the limit, then it is refused VALIDATION_FAILED and costs 1; the limit is configurable over HTTP too', async () => {
    const { client, key } = await createAccount(t, { plan: 'pro' });
    const ws = wsClient(t.url, key);
    try {
      const sub = await subscribe(ws.client, `subscription { orderUpdated { ${'id '.repeat(7)} } }`);
      const errors = await eventually('the refusal', () => (sub.errors.length ? sub.errors : undefined));
      const [error] = errors[0] as Array<{ message: string; extensions: { code: string } }>;
      assert.equal(error!.extensions.code, 'VALIDATION_FAILED');
      assert.match(error!.message, /more than 5 fields/);
      const account = await client.get('/v1/account');
      assert.equal(remaining(account), 298, 'the refused subscription took 1, this read 1');
    } finally {
      await ws.client.dispose();
    }
    const six = await client.graphql(`{ pets(first: 1) { edges { node { ${'id '.repeat(6)} } } } }`);
    assert.equal(six.status, 200, 'five repeats are allowed');
    const seven = await client.graphql(`{ pets(first: 1) { edges { node { ${'id '.repeat(4)} ... on Pet { id id id } } } } }`);
    assert.equal(seven.status, 400, 'inline fragments count');
    const spread = await client.graphql(
      `{ pets(first: 1) { edges { node { id id id id id ...P ...Q } } } } fragment P on Pet { id } fragment Q on Pet { id }`,
    );
    assert.equal(spread.status, 400, 'fragment spreads count');
  });
});
