/**
 * Apollo Server serves GraphQL over HTTP: every request (GET, POST, refused, persisted) goes through Apollo's
 * request pipeline, and Apollo's features work as their clients expect: automatic persisted queries with Apollo
 * Client's persisted-query link (POST and GET, on one instance and across two sharing Redis, through a Redis
 * restart), and urql's default
 * client (GET queries carrying only X-API-Key), while a simple cross-site GET is still refused.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { Client as UrqlClient, fetchExchange } from '@urql/core';
import { Client, createAccount, startApp, type TestApp } from '../helpers/app.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { assertGraphQLError, dataOf } from './support.js';
import { freePort, startRedis, stopRedis, waitFor } from '../rate-limit/redis-server.js';
import { freshPrefix, sleep } from '../rate-limit/support.js';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { cloudReportingOff } from '../../src/graphql/server/graphql.facade.js';
import { PERSISTED_QUERY_MAX_CHARS, PERSISTED_QUERY_TTL_SECONDS } from '../../src/graphql/server/persisted-queries.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** What Apollo saw of each request it served: its method, and whether it was a persisted-query hit or registration. */
interface Seen {
  method: string | undefined;
  hit: boolean;
  registered: boolean;
  refused: boolean;
}

/** An Apollo plugin that records every request Apollo's pipeline starts, and every request Apollo refused before it. */
function countingPlugin(seen: Seen[]): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart({ request }) {
      const entry: Seen = { method: request.http?.method, hit: false, registered: false, refused: false };
      seen.push(entry);
      return {
        async willSendResponse({ metrics, response }) {
          entry.hit = !!metrics.persistedQueryHit;
          entry.registered = !!metrics.persistedQueryRegister;
          entry.refused = response.body.kind === 'single' && response.body.singleResult.data === undefined;
        },
      };
    },
    async invalidRequestWasReceived() {
      seen.push({ method: undefined, hit: false, registered: false, refused: true });
    },
  };
}

/** Apollo Client with the persisted-query link (the hash by node:crypto), recording each HTTP request's method. */
function persistedClient(url: string, key: string, useGETForHashedQueries: boolean, methods: string[]) {
  const recordingFetch: typeof fetch = async (input, init) => {
    methods.push(init?.method ?? 'GET');
    return fetch(input, init);
  };
  const link = ApolloLink.from([
    new PersistedQueryLink({ sha256: async (query: string) => sha256(query), useGETForHashedQueries }),
    new HttpLink({ uri: `${url}/graphql`, headers: { 'X-API-Key': key }, fetch: recordingFetch }),
  ]);
  return new ApolloClient({ link, cache: new InMemoryCache() });
}

/** A document no other test registered (the persisted-query store outlives a test). */
const freshViewerQuery = () => gql(`query Viewer${randomBytes(4).toString('hex')} { viewer { name } }`);

describe('Apollo Server executes every GraphQL request over HTTP', () => {
  let t: TestApp;
  const seen: Seen[] = [];
  before(async () => {
    t = await startApp({ graphqlPlugins: [countingPlugin(seen)] });
  });
  after(() => t?.close());

  it("when GraphQL requests are sent by POST and GET, refused by validation, by the rate limit or by CSRF prevention, or persisted, then Apollo's pipeline saw each of them", async () => {
    const { client, key } = await createAccount(t, { name: 'Counted', plan: 'free' });
    seen.length = 0;
    dataOf(await client.graphql('{ viewer { name } }'));
    dataOf(await client.get(`/graphql?query=${encodeURIComponent('{ viewer { name } }')}`));
    assertGraphQLError(await client.graphql('{ nope }'), 'VALIDATION_FAILED', 400);
    assertGraphQLError(await t.anonymous.graphql('{ viewer { name } }'), 'UNAUTHENTICATED', 401);
    assertGraphQLError(await t.anonymous.get(`/graphql?query=${encodeURIComponent('{ __typename }')}`), 'VALIDATION_FAILED', 400);
    const query = '{ viewer { id } }';
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    await client.request('POST', '/graphql', { body: { extensions }, skipContract: true });
    dataOf(await client.request('POST', '/graphql', { body: { query, extensions }, skipContract: true }));
    dataOf(await client.get(`/graphql?extensions=${encodeURIComponent(JSON.stringify(extensions))}`, { skipContract: true }));
    assert.equal(seen.length, 8, JSON.stringify(seen));
    assert.deepEqual(
      seen.map((s) => [s.method, s.refused]),
      [
        ['POST', false],
        ['GET', false],
        ['POST', true],
        ['POST', true],
        [undefined, true],
        ['POST', true],
        ['POST', false],
        ['GET', false],
      ],
    );
    assert.deepEqual(
      seen.map((s) => s.registered),
      [false, false, false, false, false, false, true, false],
    );
    assert.deepEqual(
      seen.map((s) => s.hit),
      [false, false, false, false, false, false, false, true],
    );
    assert.ok(key);
  });

  it('when Apollo Client sends queries through its persisted-query link by POST, then the first sends the hash, then the text, and the next one the hash alone, answered', async () => {
    const { key } = await createAccount(t, { name: 'Persisting' });
    const methods: string[] = [];
    const apollo = persistedClient(t.url, key, false, methods);
    const query = freshViewerQuery();
    seen.length = 0;
    const first = await apollo.query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual(first.data, { viewer: { __typename: 'Viewer', name: 'Persisting' } });
    const second = await apollo.query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual(second.data, first.data);
    assert.deepEqual(methods, ['POST', 'POST', 'POST']);
    assert.deepEqual(
      seen.map((s) => [s.registered, s.hit]),
      [
        [false, false],
        [true, false],
        [false, true],
      ],
    );
  });

  it("when Apollo Client's persisted-query link sends hashed queries by GET (useGETForHashedQueries), then they are answered without a preflight header but X-API-Key", async () => {
    const { key } = await createAccount(t, { name: 'Getting' });
    const methods: string[] = [];
    const apollo = persistedClient(t.url, key, true, methods);
    const query = freshViewerQuery();
    seen.length = 0;
    const first = await apollo.query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual(first.data, { viewer: { __typename: 'Viewer', name: 'Getting' } });
    await apollo.query({ query, fetchPolicy: 'network-only' });
    // The unknown hash by GET, the text with the hash by POST (registered), then the hash alone by GET.
    assert.deepEqual(methods, ['GET', 'POST', 'GET']);
    assert.deepEqual(
      seen.map((s) => [s.method, s.registered, s.hit]),
      [
        ['GET', false, false],
        ['POST', true, false],
        ['GET', false, true],
      ],
    );
  });

  it('when a query is sent by its persisted hash, then it is charged exactly as its text is', async () => {
    const { client } = await createAccount(t, { name: 'Charged', plan: 'free' });
    const query = '{ categories(first: 5) { edges { node { pets(first: 2) { edges { node { id } } } } } } }';
    const byText = await client.graphql(query);
    dataOf(byText);
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    const registered = await client.request('POST', '/graphql', { body: { query, extensions }, skipContract: true });
    const byHash = await client.request('POST', '/graphql', { body: { extensions }, skipContract: true });
    const byGet = await client.get(`/graphql?extensions=${encodeURIComponent(JSON.stringify(extensions))}`, { skipContract: true });
    const cost = byText.body.extensions.cost;
    assert.ok(cost.charged > 1, `the query costs more than one point: ${JSON.stringify(cost)}`);
    for (const res of [registered, byHash, byGet]) assert.deepEqual(dataOf(res) && res.body.extensions.cost, cost);
    const remaining = [byText, registered, byHash, byGet].map((r) => Number(r.headers.get('x-ratelimit-remaining')));
    assert.deepEqual(
      remaining.slice(1).map((r, i) => remaining[i]! - r),
      [cost.charged, cost.charged, cost.charged],
    );
  });

  it('when a persisted-query hash is not a SHA-256 (a nested array, an object, a number, null, a long string, upper case), by POST or GET, then it is refused 400 VALIDATION_FAILED at 1 point, and a well-formed hash still works', async () => {
    const { client } = await createAccount(t, { name: 'Hash shapes' });
    const query = `query Shapes${randomBytes(4).toString('hex')} { viewer { name } }`;
    // As JSON text: a 5,000-deep array is deeper than JSON.stringify goes.
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const hashes = [
      deep,
      '{"a":1}',
      '1',
      'null',
      '[]',
      `"${'x'.repeat(100_000)}"`,
      `"${sha256(query).toUpperCase()}"`,
      `"${sha256(query)} "`,
    ];
    let before = Number((await client.get('/v1/rate_limit')).headers.get('x-ratelimit-remaining'));
    const headers = { 'content-type': 'application/json' };
    for (const sha256Hash of hashes) {
      const extensions = `{"persistedQuery":{"version":1,"sha256Hash":${sha256Hash}}}`;
      const label = sha256Hash.slice(0, 40);
      for (const rawBody of [`{"extensions":${extensions}}`, `{"query":${JSON.stringify(query)},"extensions":${extensions}}`]) {
        const res = await client.request('POST', '/graphql', { rawBody, headers, skipContract: true });
        const error = assertGraphQLError(res, 'VALIDATION_FAILED', 400);
        assert.match(error.message, /persistedQuery\.sha256Hash` must be the SHA-256/, label);
        const remaining = Number(res.headers.get('x-ratelimit-remaining'));
        assert.equal(remaining, before - 1, `a refused hash takes 1 point (${label})`);
        before = remaining;
      }
    }
    // By GET, the deepest array that fits in a request line.
    const nested = `${'['.repeat(4000)}${']'.repeat(4000)}`;
    const get = await client.get(`/graphql?extensions={"persistedQuery":{"version":1,"sha256Hash":${nested}}}`, {
      headers: { 'apollo-require-preflight': 'true' },
      skipContract: true,
    });
    assertGraphQLError(get, 'VALIDATION_FAILED', 400);
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    assert.deepEqual(dataOf(await client.request('POST', '/graphql', { body: { query, extensions }, skipContract: true })), {
      viewer: { name: 'Hash shapes' },
    });
  });

  it('when a persisted query is registered with a text longer than the store keeps, then it is answered but not kept: its hash alone is then unknown', async () => {
    const { client } = await createAccount(t, { name: 'Long text' });
    const query = `# ${'x'.repeat(PERSISTED_QUERY_MAX_CHARS)}\nquery Long${randomBytes(4).toString('hex')} { viewer { name } }`;
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha256(query) } };
    const registered = await client.request('POST', '/graphql', { body: { query, extensions }, skipContract: true });
    assert.deepEqual(dataOf(registered), { viewer: { name: 'Long text' } });
    const byHash = await client.request('POST', '/graphql', { body: { extensions }, skipContract: true });
    assert.equal(byHash.body.errors?.[0]?.extensions?.code, 'PERSISTED_QUERY_NOT_FOUND');
    assert.equal(byHash.headers.get('cache-control'), 'no-store', "the answer is the key's own, as every GraphQL answer");
    // Just under the bound, the text is kept.
    const kept = `query Kept${randomBytes(4).toString('hex')} { viewer { name } }`;
    const keptText = `${kept} # ${'x'.repeat(PERSISTED_QUERY_MAX_CHARS - kept.length - 3)}`;
    assert.equal(keptText.length, PERSISTED_QUERY_MAX_CHARS);
    const keptExtensions = { persistedQuery: { version: 1, sha256Hash: sha256(keptText) } };
    dataOf(await client.request('POST', '/graphql', { body: { query: keptText, extensions: keptExtensions }, skipContract: true }));
    const keptByHash = await client.request('POST', '/graphql', { body: { extensions: keptExtensions }, skipContract: true });
    assert.deepEqual(dataOf(keptByHash), { viewer: { name: 'Long text' } });
  });

  it("when urql's default client (fetchExchange, GET for queries) sends a query with only X-API-Key, then it is answered", async () => {
    const { key } = await createAccount(t, { name: 'Urql' });
    const methods: string[] = [];
    const urql = new UrqlClient({
      url: `${t.url}/graphql`,
      exchanges: [fetchExchange],
      fetchOptions: { headers: { 'X-API-Key': key } },
      fetch: async (input, init) => {
        methods.push(init?.method ?? 'GET');
        return fetch(input, init);
      },
    });
    const result = await urql.query('query Viewer { viewer { name } }', {}).toPromise();
    assert.equal(result.error, undefined, String(result.error));
    assert.deepEqual(result.data, { viewer: { name: 'Urql' } });
    assert.deepEqual(methods, ['GET']);
  });

  it('when a simple cross-site GET (no custom header, no key) or a form POST is sent, then CSRF prevention (or the JSON body rule) refuses it and nothing runs', async () => {
    const mutation = `mutation { createCategory(input: {name: "Forged ${randomBytes(3).toString('hex')}"}) { id } }`;
    const get = await new Client(t.url, null).get(`/graphql?query=${encodeURIComponent('{ __typename }')}`, {
      headers: { origin: 'https://elsewhere.example' },
    });
    const error = assertGraphQLError(get, 'VALIDATION_FAILED', 400);
    assert.match(error.message, /Cross-Site Request Forgery/);
    const form = await t.admin.request('POST', '/graphql', {
      rawBody: `query=${encodeURIComponent(mutation)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      key: null,
    });
    assertGraphQLError(form, 'UNSUPPORTED_MEDIA_TYPE', 415);
    assert.ok(get.headers.get('x-ratelimit-limit') && form.headers.get('x-ratelimit-limit'), 'rate-limit headers on the refusals');
  });
});

const redis = await redisUrl();

describe('automatic persisted queries across two instances sharing Redis', { skip: skipUnless(redis, 'Redis') }, () => {
  let a: TestApp;
  let b: TestApp;
  const prefix = `petstore-apq-test-${randomBytes(6).toString('hex')}`;
  before(async () => {
    a = await startApp({ env: { REDIS_URL: redis!, RATE_LIMIT_KEY_PREFIX: prefix } });
    b = await startApp({
      databaseUrl: a.config.database.url,
      env: { REDIS_URL: redis!, RATE_LIMIT_KEY_PREFIX: prefix, ADMIN_API_KEY: a.adminKey },
    });
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  it('when Apollo Client registers a query on one instance, then its persisted-query link gets the answer from the other by the hash alone', async () => {
    const { key } = await createAccount(a, { name: 'Shared' });
    const query = freshViewerQuery();
    const onA: string[] = [];
    const onB: string[] = [];
    const first = await persistedClient(a.url, key, false, onA).query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual(onA, ['POST', 'POST'], 'A did not know the hash: the link sent the text');
    const second = await persistedClient(b.url, key, true, onB).query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual(second.data, first.data);
    assert.deepEqual(second.data, { viewer: { __typename: 'Viewer', name: 'Shared' } });
    assert.deepEqual(onB, ['GET'], 'B found the hash A registered');
  });

  it('when a query is registered, then Redis keeps its text for the persisted-query TTL, not forever', async () => {
    const { client } = await createAccount(a, { name: 'Expiring' });
    const query = `query Expiring${randomBytes(4).toString('hex')} { viewer { name } }`;
    const hash = sha256(query);
    dataOf(
      await client.request('POST', '/graphql', {
        body: { query, extensions: { persistedQuery: { version: 1, sha256Hash: hash } } },
        skipContract: true,
      }),
    );
    const { Redis } = await import('ioredis');
    const store = new Redis(redis!);
    try {
      const [keys] = await untilStored(store, `${prefix}*${hash}`);
      assert.deepEqual(keys, [`${prefix}:apq:${hash}`], 'one key holds the text, under the documented name');
      const ttl = await store.ttl(keys[0]!);
      assert.ok(ttl > 0 && ttl <= PERSISTED_QUERY_TTL_SECONDS, `the key expires within the TTL (redis TTL ${ttl})`);
    } finally {
      store.disconnect();
    }
  });
});

describe('automatic persisted queries on a Redis that starts with the instance and restarts under it', {
  skip: skipUnless(redis, 'Redis'),
}, () => {
  let server: ChildProcess | undefined;
  let port: number;
  let t: TestApp;
  before(async () => {
    port = await freePort();
    server = await startRedis(port);
    // Unknown hashes are free requests, asked again while a write lands: a budget that the retries cannot reach.
    t = await startApp({
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_KEY_PREFIX: freshPrefix(), FREE_READS_PER_MINUTE: '100000' },
    });
  });
  after(async () => {
    if (server && server.exitCode === null) await stopRedis(server);
    await t?.close();
  });

  /** Registers `count` fresh queries at once (the text with its hash); the hashes whose text the store kept. */
  async function registerAtOnce(client: Client, count: number): Promise<{ kept: number; refusals: string[] }> {
    const queries = Array.from({ length: count }, () => `query Burst${randomBytes(4).toString('hex')} { viewer { name } }`);
    const extensionsOf = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } });
    const registered = await Promise.all(
      queries.map((query) => client.request('POST', '/graphql', { body: { query, extensions: extensionsOf(query) }, skipContract: true })),
    );
    for (const res of registered) assert.deepEqual(dataOf(res), { viewer: { name: 'Burst' } }, 'a registration is answered, Redis or not');
    // Apollo does not wait for the store's write: a hash not found yet is asked again, a few times over a second.
    let missing = queries;
    let refusals: string[] = [];
    for (let round = 0; round < 5 && missing.length; round++) {
      await sleep(round === 0 ? 50 : 250);
      const answers = await Promise.all(
        missing.map((query) => client.request('POST', '/graphql', { body: { extensions: extensionsOf(query) }, skipContract: true })),
      );
      const codes = answers.map(
        (res) => (res.body as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions?.code,
      );
      refusals = codes.filter((code): code is string => !!code);
      missing = missing.filter((_, i) => codes[i]);
    }
    return { kept: count - refusals.length, refusals };
  }

  it('when queries are registered concurrently, first after the start and then once Redis is back from a restart, then every hash is found afterwards; while Redis is down, a hash alone is PERSISTED_QUERY_NOT_FOUND and the text is answered', async () => {
    const { client } = await createAccount(t, { name: 'Burst', plan: 'enterprise', limits: { perMinute: 100_000, perDay: 1_000_000 } });
    assert.deepEqual(await registerAtOnce(client, 8), { kept: 8, refusals: [] }, 'the first registrations of the instance, at once');

    await stopRedis(server!);
    const down = await registerAtOnce(client, 2);
    assert.deepEqual(down.refusals, ['PERSISTED_QUERY_NOT_FOUND', 'PERSISTED_QUERY_NOT_FOUND'], 'nothing is kept while Redis is down');

    server = await startRedis(port);
    // The store connects again on its own: registrations made at once are all kept again within seconds.
    let last: Awaited<ReturnType<typeof registerAtOnce>> | undefined;
    await waitFor(async () => {
      last = await registerAtOnce(client, 8);
      return last.kept === 8;
    }, 10_000).catch(() => assert.fail(`registrations after the restart are still lost: ${JSON.stringify(last)}`));
    assert.deepEqual(await registerAtOnce(client, 8), { kept: 8, refusals: [] }, 'and they stay kept');
  });
});

/** The Redis keys matching `pattern`, once the store's write (Apollo does not wait for it) has landed. */
async function untilStored(store: import('ioredis').Redis, pattern: string): Promise<[string[]]> {
  for (let i = 0; ; i++) {
    const keys = await store.keys(pattern);
    if (keys.length > 0 || i === 50) return [keys];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("Apollo's reporting to its cloud", () => {
  it('when neither APOLLO_KEY nor APOLLO_SCHEMA_REPORTING is set, then no marker is listed (each listed plugin costs every request), and either one lists both', () => {
    assert.deepEqual(cloudReportingOff({}), []);
    assert.equal(cloudReportingOff({ APOLLO_KEY: 'service:x:y' }).length, 2);
    assert.equal(cloudReportingOff({ APOLLO_SCHEMA_REPORTING: 'true' }).length, 2);
  });

  it('when APOLLO_KEY (without a graph ref) and APOLLO_SCHEMA_REPORTING are in the environment, then the service starts, answers, and Apollo neither reports nor warns about its key', async () => {
    const saved = { key: process.env.APOLLO_KEY, schema: process.env.APOLLO_SCHEMA_REPORTING };
    // Neither variable names a graph ref: even without the markers, Apollo would only warn (usage reporting) or
    // refuse to start (its schema-reporting plugin needs a graph ref), never send anything.
    process.env.APOLLO_KEY = 'service:petstore-test:not-a-real-key';
    process.env.APOLLO_SCHEMA_REPORTING = 'true';
    const lines: string[] = [];
    let app: TestApp | undefined;
    try {
      app = await startApp({ env: { LOG_LEVEL: 'warn' }, logStream: { write: (line) => void lines.push(line) } });
      const res = await new Client(app.url, app.adminKey).request('POST', '/graphql', { body: { query: '{ __typename }' } });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, { __typename: 'Query' });
    } finally {
      await app?.close();
      for (const [name, value] of [
        ['APOLLO_KEY', saved.key],
        ['APOLLO_SCHEMA_REPORTING', saved.schema],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    assert.deepEqual(
      lines.filter((line) => /Apollo key|graph ref|usage reporting|schema reporting/i.test(line)),
      [],
    );
  });
});
