import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import Database from 'libsql';
import { startApp, createAccount, type TestApp } from '../helpers/app.js';
import { cachedOperationShape, operationShape } from '../../src/graphql/server/operation-shape.js';
import { projectPath } from '../../src/project-path.js';
import { graphqlCost } from '../../src/rate-limit/index.js';
import { assertGraphQLError, dataOf, gql } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

describe('GraphQL over HTTP: transport, landing page and refusals', () => {
  let t: TestApp;
  let prod: TestApp;
  before(async () => {
    [t, prod] = await Promise.all([startApp(), startApp({ env: { NODE_ENV: 'production' } })]);
  });
  after(() => Promise.all([t.close(), prod.close()]));

  it('when a browser opens GET /graphql outside production, then it gets the embedded Sandbox with an X-API-Key header to fill in', async () => {
    const res = await fetch(`${t.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const html = await res.text();
    assert.match(html, /src="https:\/\/embeddable-sandbox\.cdn\.apollographql\.com\/[^"]*embeddable-sandbox\.umd/);
    assert.match(html, /"sharedHeaders":\{"X-API-Key":""\}/);
    assert.match(html, /"includeCookies":false/);
  });

  it('when a query uses @include and @skip with variables (as Apollo Client does), then the fields follow them', async () => {
    const res = await t.admin.graphql(
      'query($withName: Boolean!, $noRole: Boolean!) { viewer { name @include(if: $withName) role @skip(if: $noRole) plan } }',
      {
        withName: false,
        noRole: false,
      },
    );
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, { viewer: { role: 'staff', plan: 'business' } });
  });

  it('when a browser opens GET /graphql in production, then it gets the production landing page, not Sandbox', async () => {
    const res = await fetch(`${prod.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const html = await res.text();
    assert.doesNotMatch(html, /embeddable-sandbox\.umd/);
    assert.match(html, /isProd%22%3Atrue/);
  });

  it('when the embedded Sandbox (or Apollo Client) preflights a POST from its origin, then CORS allows it with the key header', async () => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://sandbox.embed.apollographql.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type,x-api-key,apollographql-client-name,apollographql-client-version',
      },
    });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), 'https://sandbox.embed.apollographql.com');
    assert.ok(res.headers.get('x-ratelimit-limit'), 'a preflight shows the address window');
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/,\s*/);
    for (const header of ['content-type', 'x-api-key', 'apollographql-client-name', 'apollographql-client-version']) {
      assert.ok(allowed.includes(header), `${header} is allowed: ${allowed.join(', ')}`);
    }
  });

  it('when a page on an origin not allowed preflights either facade, then it gets 204 without CORS headers, and a hundred cost its address nothing', async () => {
    // A request without a key shows the address's failed-authentication window without counting in it.
    const addressRemaining = async () => Number((await fetch(`${t.url}/v1/pets`)).headers.get('x-ratelimit-remaining'));
    const before = await addressRemaining();
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${t.url}${i % 2 ? '/v1/pets' : '/graphql'}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://evil.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-api-key',
        },
      });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get('access-control-allow-origin'), null);
      assert.equal(res.headers.get('access-control-allow-headers'), null);
      assert.equal(res.headers.get('vary'), 'Origin');
      assert.equal(Number(res.headers.get('x-ratelimit-remaining')), before, 'a preflight shows the address window');
      assert.equal(await res.text(), '');
    }
    assert.equal(await addressRemaining(), before);
  });

  it('when a query is sent with GET and a preflight header, then it is answered', async () => {
    const query = encodeURIComponent('{ categories { edges { node { id } } } }');
    const res = await t.admin.get(`/graphql?query=${query}`, { headers: { 'apollo-require-preflight': 'true' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { data: { categories: { edges: [] } }, extensions: { cost: { requested: 1, charged: 1 } } });
  });

  it('when a GET query carries variables and an operation name, then they are read from the parameters (JSON-encoded variables)', async () => {
    const search = new URLSearchParams({
      query: 'query A { __typename } query B($named: Boolean!) { viewer { name @include(if: $named) role } }',
      operationName: 'B',
      variables: JSON.stringify({ named: false }),
    });
    const res = await t.admin.get(`/graphql?${search}`, { headers: { 'apollo-require-preflight': 'true' } });
    assert.deepEqual(dataOf(res), { viewer: { role: 'staff' } });
  });

  it('when GET parameters are malformed (given twice, variables not JSON or not an object, a non-JSON content type), then 400 or 415 says which and nothing runs', async () => {
    const preflight = { 'apollo-require-preflight': 'true' };
    const cases: Array<[search: string, headers: Record<string, string>, code: string, status: number, message: RegExp]> = [
      [
        'query=%7B__typename%7D&query=%7B__typename%7D',
        preflight,
        'VALIDATION_FAILED',
        400,
        /'query' search parameter may only be specified once/,
      ],
      ['query=%7B__typename%7D&variables=%7Bnope', preflight, 'VALIDATION_FAILED', 400, /variables search parameter contains invalid JSON/],
      [
        'query=%7B__typename%7D&variables=%5B1%5D',
        preflight,
        'VALIDATION_FAILED',
        400,
        /variables search parameter should contain a JSON-encoded object/,
      ],
      [
        'query=%7B__typename%7D',
        { ...preflight, 'content-type': 'text/xml' },
        'UNSUPPORTED_MEDIA_TYPE',
        415,
        /content-type header other than application\/json/,
      ],
      ['', preflight, 'VALIDATION_FAILED', 400, /non-empty `query` or a `persistedQuery` extension/],
    ];
    for (const [search, headers, code, status, message] of cases) {
      const res = await t.admin.get(`/graphql?${search}`, { headers });
      assertGraphQLError(res, code, status);
      assert.match(res.body.errors[0].message, message, search);
    }
  });

  it('when a GET carries no preflight header (a simple cross-site request: no X-API-Key either), then CSRF prevention refuses it (400 VALIDATION_FAILED)', async () => {
    const res = await t.anonymous.get(`/graphql?query=${encodeURIComponent('{ __typename }')}`);
    assertGraphQLError(res, 'VALIDATION_FAILED', 400);
    assert.match(res.body.errors[0].message, /Cross-Site Request Forgery/);
  });

  it('when a POST is sent as text/plain (a simple cross-site form), then it is refused as 415 before anything runs, as on REST', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    const res = await t.admin.request('POST', '/graphql', {
      rawBody: '{"query":"mutation { createCategory(input: {name: \\"Forged\\"}) { id } }"}',
      headers: { 'content-type': 'text/plain' },
    });
    assertGraphQLError(res, 'UNSUPPORTED_MEDIA_TYPE', 415);
    assert.equal((await t.admin.get('/v1/categories')).body.length, before, 'nothing was created');
  });

  it('when a mutation or a subscription is sent with GET, then it is 405 METHOD_NOT_ALLOWED with Allow: POST', async () => {
    for (const operation of ['mutation { deleteCategory(id: "1") }', 'subscription { inventoryChanged { petId } }']) {
      const res = await t.admin.get(`/graphql?query=${encodeURIComponent(operation)}`, { headers: { 'apollo-require-preflight': 'true' } });
      assertGraphQLError(res, 'METHOD_NOT_ALLOWED', 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.match(res.body.errors[0].message, new RegExp(`not ${operation.split(' ')[0]} operations`));
    }
  });

  it('when a persisted-query hash is sent that the server does not hold, then Apollo answers PersistedQueryNotFound (200, nothing charged) and the query text with the hash is answered', async () => {
    const { client } = await createAccount(t, { name: 'Persisted' });
    const hashOnly = await client.request('POST', '/graphql', {
      body: { extensions: { persistedQuery: { version: 1, sha256Hash: 'a'.repeat(64) } } },
      skipContract: true,
    });
    const error = assertGraphQLError(hashOnly, 'PERSISTED_QUERY_NOT_FOUND', 200);
    // The message and code Apollo Client's persisted-query link reads as "send the query text with the hash".
    assert.equal(error.message, 'PersistedQueryNotFound');
    assert.equal(hashOnly.headers.get('x-ratelimit-remaining'), hashOnly.headers.get('x-ratelimit-limit'), 'no point taken');
    const full = await client.graphql('{ viewer { name } }');
    assert.deepEqual(dataOf(full), { viewer: { name: 'Persisted' } });
  });

  it('when /graphql is called with PUT, then it is 405 METHOD_NOT_ALLOWED with Allow: GET, POST', async () => {
    const res = await t.admin.request('PUT', '/graphql', { body: { query: '{ __typename }' } });
    assertGraphQLError(res, 'METHOD_NOT_ALLOWED', 405);
    assert.equal(res.headers.get('allow'), 'GET, POST');
  });

  it('when several operations are sent as a JSON array (batching), then the request is refused with 400', async () => {
    const res = await t.admin.request('POST', '/graphql', { body: [{ query: '{ __typename }' }, { query: '{ __typename }' }] });
    assertGraphQLError(res, 'VALIDATION_FAILED', 400);
    assert.match(res.body.errors[0].message, /Operation batching disabled/);
  });

  it('when the body is larger than 1 MiB, then it is 413 PAYLOAD_TOO_LARGE in the GraphQL error shape', async () => {
    const res = await t.admin.request('POST', '/graphql', { body: { query: `{ __typename } # ${'x'.repeat(1024 * 1024)}` } });
    assertGraphQLError(res, 'PAYLOAD_TOO_LARGE', 413);
  });

  it('when the body is not valid JSON, then it is 400 VALIDATION_FAILED', async () => {
    const res = await t.admin.request('POST', '/graphql', { rawBody: '{"query": ', headers: { 'content-type': 'application/json' } });
    assertGraphQLError(res, 'VALIDATION_FAILED', 400);
  });

  it('when the query does not parse, then it is 400 VALIDATION_FAILED without data', async () => {
    const res = await gql(t.admin, '{ pets { ');
    assertGraphQLError(res, 'VALIDATION_FAILED', 400);
  });

  it('when a variable has the wrong type, then it is 400 VALIDATION_FAILED without data', async () => {
    const res = await gql(t.admin, 'query($n: Int) { pets(first: $n) { edges { cursor } } }', { n: 'ten' });
    assertGraphQLError(res, 'VALIDATION_FAILED', 400);
  });

  it('when the client accepts application/graphql-response+json, then a request error keeps its status and that media type', async () => {
    const res = await t.admin.request('POST', '/graphql', {
      body: { query: '{ nope }' },
      headers: { accept: 'application/graphql-response+json' },
    });
    assert.match(res.headers.get('content-type') ?? '', /^application\/graphql-response\+json/);
    assert.equal(res.status, 400);
    assert.equal(JSON.parse(res.text).errors[0].extensions.code, 'VALIDATION_FAILED');
  });

  it('when the client accepts application/graphql-response+json, then a request refused as it is read (CSRF, a body with no keys) answers in that media type too', async () => {
    const accept = 'application/graphql-response+json';
    const csrf = await t.anonymous.get(`/graphql?query=${encodeURIComponent('{ __typename }')}`, { headers: { accept } });
    const empty = await t.admin.request('POST', '/graphql', { body: {}, headers: { accept }, skipContract: true });
    for (const res of [csrf, empty]) {
      assert.equal(res.status, 400);
      assert.match(res.headers.get('content-type') ?? '', /^application\/graphql-response\+json/);
      assert.equal(JSON.parse(res.text).errors[0].extensions.code, 'VALIDATION_FAILED');
    }
  });

  it('when the client prefers application/graphql-response+json (as Apollo Client asks), then a body refused before Apollo (not JSON, malformed, an unknown documentId) answers in that media type; with JSON or any type asked, in JSON', async () => {
    const refusals = (accept: string) => {
      const headers: Record<string, string> = { accept };
      return Promise.all([
        t.admin.request('POST', '/graphql', {
          rawBody: '{ __typename }',
          headers: { ...headers, 'content-type': 'text/plain' },
          skipContract: true,
        }),
        t.admin.request('POST', '/graphql', {
          rawBody: '{"query": ',
          headers: { ...headers, 'content-type': 'application/json' },
          skipContract: true,
        }),
        t.admin.request('POST', '/graphql', { body: { documentId: `sha256:${'0'.repeat(64)}` }, headers, skipContract: true }),
      ]);
    };
    const expected = [
      [415, 'UNSUPPORTED_MEDIA_TYPE'],
      [400, 'VALIDATION_FAILED'],
      [404, 'PERSISTED_DOCUMENT_NOT_FOUND'],
    ] as const;
    for (const [accept, type] of [
      ['application/graphql-response+json, application/json;q=0.9', 'application/graphql-response+json'],
      ['application/graphql-response+json', 'application/graphql-response+json'],
      ['application/json', 'application/json'],
      ['*/*', 'application/json'],
      ['text/html', 'application/json'],
    ] as const) {
      const answers = await refusals(accept);
      answers.forEach((res, i) => {
        const [status, code] = expected[i]!;
        assert.equal(res.status, status, `${accept}: ${res.text}`);
        assert.equal(res.headers.get('content-type'), `${type}; charset=utf-8`, `${accept}, ${code}`);
        assert.equal(JSON.parse(res.text).errors[0].extensions.code, code);
      });
    }
  });

  it("when the client accepts application/graphql-response+json, then another method on /graphql (405, Apollo's answer, in that media type) and another path under it (404) answer with their status, Allow and rate-limit headers", async () => {
    const accept = 'application/graphql-response+json';
    const put = await t.admin.request('PUT', '/graphql', { body: { query: '{ __typename }' }, headers: { accept }, skipContract: true });
    const elsewhere = await t.admin.get('/graphql/schema', { headers: { accept } });
    assert.match(put.headers.get('content-type') ?? '', /^application\/graphql-response\+json/);
    for (const [res, status, code] of [
      [put, 405, 'METHOD_NOT_ALLOWED'],
      [elsewhere, 404, 'NOT_FOUND'],
    ] as const) {
      assert.equal(res.status, status);
      const error = JSON.parse(res.text).errors[0];
      assert.equal(error.extensions.code, code);
      assert.ok(error.extensions.requestId, 'the request id is in the error');
      assert.ok(res.headers.get('x-ratelimit-limit'), 'rate-limit headers on the refusal');
    }
    assert.equal(put.headers.get('allow'), 'GET, POST');
  });

  it('when a POST body gives variables that are not an object or an operation name that is not a string, then it is 400 naming the field, and nothing runs', async () => {
    for (const [body, field] of [
      [{ query: '{ __typename }', variables: [1] }, 'variables'],
      [{ query: '{ __typename }', operationName: 3 }, 'operationName'],
    ] as const) {
      const res = await t.admin.request('POST', '/graphql', { body, skipContract: true });
      const error = assertGraphQLError(res, 'VALIDATION_FAILED', 400);
      assert.match(error.message, new RegExp(`^\`${field}\` in a POST body must be`));
    }
  });

  it('when a request carries an empty persistedQuery extension (null or false), then the query is answered', async () => {
    for (const persistedQuery of [null, false]) {
      const res = await t.admin.request('POST', '/graphql', {
        body: { query: '{ __typename }', extensions: { persistedQuery } },
        skipContract: true,
      });
      assert.deepEqual(dataOf(res), { __typename: 'Query' });
    }
  });

  it('when a null reaches a non-null argument through a variable with a default, then it is a VALIDATION_FAILED field error, not INTERNAL', async () => {
    const res = await t.admin.graphql('query ($id: ID = "1") { category(id: $id) { id } }', { id: null });
    const error = assertGraphQLError(res, 'VALIDATION_FAILED', 400);
    assert.match(error.message, /^Argument "id" of non-null type "ID!" must not be null/);
    assert.deepEqual(res.body.data, { category: null });
  });

  it('when a field fails alongside one that succeeds, then the response is 200 with the data and the error in place', async () => {
    const res = await gql(t.admin, `{ categories { edges { cursor } } category(id: "${globalId('Category', 404)}") { id } }`);
    assertGraphQLError(res, 'NOT_FOUND', 404);
    assert.deepEqual(res.body.data, { categories: { edges: [] }, category: null });
    assert.deepEqual(res.body.errors![0]!.path, ['category']);
  });

  it('when a request has no key, then only introspection is answered and anything else is 401 UNAUTHENTICATED', async () => {
    assert.deepEqual(dataOf(await gql(t.anonymous, '{ __typename }')), { __typename: 'Query' });
    assertGraphQLError(await gql(t.anonymous, '{ rateLimit { plan } }'), 'UNAUTHENTICATED', 401);
    assertGraphQLError(await gql(t.anonymous, 'mutation { deleteCategory(id: "1") }'), 'UNAUTHENTICATED', 401);
  });

  it('when a request has an unknown key, then it is 401 INVALID_API_KEY', async () => {
    const res = await gql(t.anonymous.withKey('psk_unknownunknownunknownunknown'), '{ viewer { id } }');
    assertGraphQLError(res, 'INVALID_API_KEY', 401);
  });

  it('when staff revokes a key through GraphQL, then that key is refused on the very next request', async () => {
    const customer = await createAccount(t, { role: 'customer' });
    assert.equal(dataOf(await gql(customer.client, '{ viewer { role } }')).viewer.role, 'customer');
    const revoked = dataOf(
      await gql(t.admin, 'mutation($id: ID!) { revokeApiKey(keyId: $id) { id revokedAt } }', { id: globalId('ApiKey', customer.keyId) }),
    );
    assert.ok(revoked.revokeApiKey.revokedAt);
    assertGraphQLError(await gql(customer.client, '{ viewer { role } }'), 'INVALID_API_KEY', 401);
  });

  it('when staff creates an account and a second key through GraphQL, then both keys authenticate as that account', async () => {
    const created = dataOf(
      await gql(
        t.admin,
        'mutation { createAccount(input: {name: "Shop", role: customer, plan: pro}) { id databaseId plan limits { perMinute } apiKey { id key prefix } } }',
      ),
    ).createAccount;
    assert.equal(created.limits.perMinute, 300);
    assert.ok(created.apiKey.key.startsWith(created.apiKey.prefix));
    const second = dataOf(
      await gql(t.admin, 'mutation($id: ID!) { createApiKey(accountId: $id) { key } }', { id: created.id }),
    ).createApiKey;
    for (const key of [created.apiKey.key, second.key]) {
      assert.equal(dataOf(await gql(t.anonymous.withKey(key), '{ viewer { databaseId } }')).viewer.databaseId, created.databaseId);
    }
  });
});

describe('GraphQL: unexpected failures are masked', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when the database fails under a resolver, then the error is INTERNAL (500) with no SQL, table or stack in it', async () => {
    await t.app.orm.em.getConnection().execute('drop table inventory');
    const res = await gql(t.admin, `{ inventoryItem(petId: "${globalId('Pet', 1)}") { quantity } }`);
    const error = assertGraphQLError(res, 'INTERNAL', 500);
    assert.doesNotMatch(res.text, /inventory\b(?!Item)|no such table|stacktrace/i);
    assert.equal(error.extensions?.stacktrace, undefined);
  });
});

describe('GraphQL: a database busy under a resolver (SQLite)', { skip: process.env.TEST_DATABASE_URL ? 'SQLite only' : false }, () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { DB_BUSY_TIMEOUT_MS: '50' } });
  });
  after(() => t.close());

  it('when another connection holds the write lock, then the field is UNAVAILABLE (503) and the response carries Retry-After', async () => {
    assert.equal(t.config.database.kind, 'sqlite');
    const other = new Database(t.config.database.kind === 'sqlite' ? t.config.database.path : '');
    other.exec('BEGIN IMMEDIATE');
    try {
      const res = await gql(t.admin, 'mutation { createCategory(input: {name: "Blocked"}) { id } }');
      assertGraphQLError(res, 'UNAVAILABLE', 503);
      assert.deepEqual(res.body.data, { createCategory: null });
      assert.equal(res.headers.get('retry-after'), '1');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    dataOf(await gql(t.admin, 'mutation { createCategory(input: {name: "Unblocked"}) { id } }'));
  });
});

describe('GraphQL cost: 1 per root field of the executed operation', () => {
  const schema = buildSchema(readFileSync(projectPath('schema/schema.graphql'), 'utf8'));
  const cost = (source: string, operationName?: string) => {
    const document = parse(source);
    const operation = document.definitions.find(
      (d): d is OperationDefinitionNode => d.kind === 'OperationDefinition' && (!operationName || d.name?.value === operationName),
    )!;
    const shape = operationShape(schema, document, operation, {});
    return { cost: graphqlCost(shape), needsKey: shape.needsKey };
  };

  it('when root fields are aliased, then each alias counts', () => {
    assert.deepEqual(cost('{ a: pets { edges { cursor } } b: pets { edges { cursor } } c: categories { edges { cursor } } }'), {
      cost: 3,
      needsKey: true,
    });
  });

  it('when the same field is selected twice without alias, then it counts once (GraphQL merges it)', () => {
    assert.equal(cost('{ pets { edges { cursor } } pets { pageInfo { hasNextPage } } }').cost, 1);
  });

  it('when root fields come through fragments, then they count like direct ones', () => {
    const source =
      'query Q { ...A ... on Query { viewer { id } } } fragment A on Query { pets { edges { cursor } } x: pets { edges { cursor } } }';
    assert.equal(cost(source).cost, 3);
  });

  it('when only introspection and rateLimit are asked, then it costs nothing, but rateLimit still needs a key', () => {
    assert.deepEqual(cost('{ __typename __schema { queryType { name } } __type(name: "Pet") { name } }'), { cost: 0, needsKey: false });
    assert.deepEqual(cost('{ rateLimit { plan } __typename }'), { cost: 0, needsKey: true });
  });

  it('when a schema allows @defer, then the fields of a deferred fragment count as if they were not deferred', () => {
    const withDefer = buildSchema(
      `${readFileSync(projectPath('schema/schema.graphql'), 'utf8')}\ndirective @defer(label: String, if: Boolean! = true) on FRAGMENT_SPREAD | INLINE_FRAGMENT`,
    );
    const document = parse('{ viewer { id } ... @defer { a: pets { edges { cursor } } b: pets { edges { cursor } } } }');
    const shape = operationShape(withDefer, document, document.definitions[0] as OperationDefinitionNode, {});
    assert.deepEqual([...shape.rootFields].sort(), ['pets', 'pets', 'viewer']);
    assert.equal(graphqlCost(shape), 3);
  });

  it('when a document holds several operations, then only the executed one counts', () => {
    const source = 'query A { pets { edges { cursor } } } query B { a: viewer { id } b: viewer { id } c: viewer { id } }';
    assert.equal(cost(source, 'A').cost, 1);
    assert.equal(cost(source, 'B').cost, 3);
  });
});

describe('GraphQL rate limiting: the operation cost is charged to the account before any resolver runs', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  /** Reads the account's minute window through the free `rateLimit` field. */
  async function used(client: TestApp['admin']): Promise<number> {
    return dataOf(await gql(client, '{ rateLimit { resources { minute { used } } } }')).rateLimit.resources.minute.used;
  }

  it('when an operation has three aliased root fields, then three requests are counted, and rateLimit itself is free', async () => {
    const { client } = await createAccount(t, { role: 'customer', plan: 'pro' });
    const before = await used(client);
    dataOf(await gql(client, '{ a: categories { edges { cursor } } b: categories { edges { cursor } } viewer { id } rateLimit { plan } }'));
    assert.equal(await used(client), before + 3);
    assert.equal(await used(client), before + 3, 'reading rateLimit costs nothing');
  });

  it('when every /graphql response is sent, then it carries the rate-limit headers, errors included', async () => {
    const responses = [
      await gql(t.admin, '{ viewer { id } }'),
      await gql(t.admin, '{ nope }'),
      await gql(t.anonymous, '{ viewer { id } }'),
      await t.admin.request('POST', '/graphql', { body: [{ query: '{ __typename }' }] }),
    ];
    for (const res of responses) {
      for (const header of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
        assert.ok(res.headers.get(header), `${res.status} ${res.text.slice(0, 100)}: ${header} is missing`);
      }
    }
  });

  it('when an account is over its limit, then /graphql answers HTTP 429 RATE_LIMITED with Retry-After, and runs nothing', async () => {
    const { client } = await createAccount(t, { role: 'customer', plan: 'enterprise', limits: { perMinute: 3, perDay: 100 } });
    dataOf(await gql(client, '{ a: viewer { id } b: viewer { id } }'));
    const res = await gql(client, 'mutation { a: createCategory(input: {name: "x"}) { id } b: createCategory(input: {name: "y"}) { id } }');
    assert.equal(res.status, 429, res.text);
    // Nothing ran (no data); the cost shows what the mutation asked and that nothing was taken.
    assert.deepEqual(Object.keys(res.body), ['errors', 'extensions']);
    assert.deepEqual(res.body.extensions, { cost: { requested: 2, charged: 0 } });
    assertGraphQLError(res, 'RATE_LIMITED', 429);
    assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After in whole seconds');
    assert.equal(res.headers.get('x-ratelimit-remaining'), '1');
    dataOf(await gql(client, '{ viewer { id } }'));
  });
});

describe('GraphQL cost: the per-document cache of the operation shape', () => {
  const schema = buildSchema(readFileSync(projectPath('schema/schema.graphql'), 'utf8'));
  // One document object, as Apollo's document cache hands it to every request with the same text.
  const document = parse(`
    query Q($first: Int = 20, $inner: Int, $ids: [ID!], $withCats: Boolean!) {
      pets(first: $first, filter: { ids: $ids }) { edges { node { id } } }
      categories @include(if: $withCats) { edges { node { pets(first: $inner) { edges { cursor } } } } }
    }`);
  const operation = document.definitions[0] as OperationDefinitionNode;
  const fresh = (variables: Record<string, unknown>) => operationShape(schema, document, operation, variables, 1000);
  const cached = (variables: Record<string, unknown>) => cachedOperationShape(schema, document, operation, variables, 1000);

  it('when only the values of other variables change (ids), then the cached shape is the one computed afresh', () => {
    const a = cached({ first: 20, ids: ['1', '2'], withCats: false });
    assert.deepEqual(a, fresh({ first: 20, ids: ['1', '2'], withCats: false }));
    assert.equal(cached({ first: 20, ids: ['3', '4', '5'], withCats: false }), a);
  });

  it('when page sizes, @include conditions or nullness change, then every answer equals the uncached one', () => {
    const cases: Array<Record<string, unknown>> = [
      { first: 20, withCats: false },
      { first: 100, withCats: true, inner: 100 },
      { first: 100, withCats: true, inner: 3 },
      { first: 100, withCats: true },
      { first: 1, withCats: true, inner: null },
      { first: null, withCats: true, ids: null },
      { first: 100, withCats: true, inner: 100, ids: ['1'] },
      { first: 100, withCats: true, inner: 100 },
    ];
    for (const variables of cases) {
      const expected = fresh(variables);
      assert.deepEqual(cached(variables), expected, JSON.stringify(variables));
      assert.equal(graphqlCost(cached(variables)), graphqlCost(expected));
    }
    assert.notEqual(graphqlCost(cached(cases[1]!)), graphqlCost(cached(cases[0]!)));
    assert.equal(cached(cases[1]!).overCeiling, true);
    assert.equal(cached(cases[2]!).overCeiling, false);
  });
});
