import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createPet, type TestApp, type TestResponse } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { RawConnection } from './support.js';

const MiB = 1024 * 1024;

/** A GraphQL refusal: the status and, in every error, the documented code and status. */
function assertGraphQLRefused(res: TestResponse, code: string, status: number, message?: RegExp) {
  assert.equal(res.status, status, res.text);
  assert.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0, res.text);
  assert.equal(res.body.data ?? null, null);
  for (const e of res.body.errors) {
    assert.equal(e.extensions.code, code);
    assert.equal(e.extensions.status, status);
    assert.equal(e.extensions.requestId, res.headers.get('x-request-id'));
  }
  if (message)
    assert.ok(
      res.body.errors.some((e: { message: string }) => message.test(e.message)),
      res.text,
    );
}

describe('ops: GraphQL document limits (defaults: depth 8, aliases 15, result size 20000), refused before any resolver runs', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const categoryNames = async (): Promise<string[]> =>
    (await t.admin.get('/v1/categories?limit=100')).body.map((c: { name: string }) => c.name);
  const used = async (): Promise<number> => (await t.admin.get('/v1/rate_limit')).body.resources.minute.used;

  /** Sends the mutation and checks that it was refused without creating anything, charged 1 as a refused REST request. */
  async function refusedWithoutEffect(query: string, message: RegExp) {
    const names = await categoryNames();
    const before = await used();
    const res = await t.admin.graphql(query);
    assertGraphQLRefused(res, 'VALIDATION_FAILED', 400, message);
    assert.deepEqual(await categoryNames(), names, 'a refused mutation created something');
    // categoryNames() itself costs 1 REST request, the refused document 1 (not its estimated cost).
    assert.equal(await used(), before + 2, 'the refused document costs 1');
  }

  it('when a mutation selects 8 levels deep, then it runs; 9 levels, then 400 naming the depth limit and nothing is created', async () => {
    const ok = await t.admin.graphql(
      'mutation { createCategory(input: {name: "Depth 8"}) { pets { edges { node { category { pets { pageInfo { hasNextPage } } } } } } } }',
    );
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.data.createCategory.pets.edges.length, 0);
    await refusedWithoutEffect(
      'mutation { createCategory(input: {name: "Depth 9"}) { pets { edges { node { category { pets { edges { node { id } } } } } } } } }',
      /depth limit of 8/i,
    );
  });

  it('when a mutation has 15 aliases, then it runs; 16, then 400 naming the alias limit and nothing is created', async () => {
    const aliased = (n: number, prefix: string) =>
      `mutation { ${Array.from({ length: n }, (_, i) => `a${i}: createCategory(input: {name: "${prefix} ${i}"}) { id }`).join(' ')} }`;
    const ok = await t.admin.graphql(aliased(15, 'Alias ok'));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(Object.keys(ok.body.data).length, 15);
    await refusedWithoutEffect(aliased(16, 'Alias over'), /aliases limit of 15/i);
  });

  it('when a mutation asks one page of 100 pets with their relations, then it runs; thirteen such pages (over 20000 result fields), then 400 naming the size limit and nothing is created', async () => {
    // 2 + 100 × 16 = 1602 result fields a page: 12 pages fit under 20000, 13 do not.
    const page = (alias: string) =>
      `${alias}: pets(first: 100) { edges { cursor node { id name status category { id name description } inventory { quantity status petId pet { id name } } } } }`;
    const ok = await t.admin.graphql(`mutation { createCategory(input: {name: "Cost ok"}) { ${page('a')} } }`);
    assert.equal(ok.status, 200, ok.text);
    const pages = (n: number) => Array.from({ length: n }, (_, i) => page(`p${i}`)).join(' ');
    await refusedWithoutEffect(`mutation { createCategory(input: {name: "Cost over"}) { ${pages(13)} } }`, /size limit of 20000/i);
  });

  it('when a field name is misspelt, then the error suggests no field names', async () => {
    const res = await t.admin.graphql('{ categories { edges { node { nam } } } }');
    assertGraphQLRefused(res, 'VALIDATION_FAILED', 400);
    assert.ok(!/did you mean/i.test(res.text), res.text);
  });
});

describe('ops: GraphQL token limit (GRAPHQL_MAX_TOKENS=100 here; default 1000), refused while parsing', () => {
  let t: TestApp;
  before(async () => {
    // The repeated `id`s below are over the default repeated-field limit (30): lifted here to reach the token limit.
    t = await startApp({ env: { GRAPHQL_MAX_TOKENS: '100', GRAPHQL_MAX_REPEATED_FIELDS: '100' } });
  });
  after(() => t.close());

  it('when a document has 100 tokens, then it runs; 101, then 400 naming the token limit, nothing is created and 1 point charged', async () => {
    // 15 tokens around the selection, one per `id` (graphql-js itself refuses a selection of ~1000 identical fields).
    const doc = (ids: number, name: string) =>
      `mutation { createCategory(input: {name: "${name}"}) { ${Array(ids).fill('id').join(' ')} } }`;
    const ok = await t.admin.graphql(doc(85, 'Tokens ok'));
    assert.equal(ok.status, 200, ok.text);
    const before = (await t.admin.get('/v1/rate_limit')).body.resources.minute.used;
    const res = await t.admin.graphql(doc(86, 'Tokens over'));
    assertGraphQLRefused(res, 'VALIDATION_FAILED', 400, /more th.. 100 tokens/i);
    assert.equal((await t.admin.get('/v1/rate_limit')).body.resources.minute.used, before + 1);
    const names = (await t.admin.get('/v1/categories')).body.map((c: { name: string }) => c.name);
    assert.deepEqual(names, ['Tokens ok']);
  });
});

describe('ops: request size, page size and quantity bounds on both facades', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const categoryCount = async () => (await t.admin.get('/v1/categories?limit=100')).body.length;

  it('when a body is over 1 MiB, then REST and GraphQL answer 413 PAYLOAD_TOO_LARGE and nothing is created', async () => {
    const before = await categoryCount();
    const rest = await t.admin.post('/v1/categories', { name: 'Huge', description: 'x'.repeat(MiB) });
    assert.equal(rest.status, 413);
    assert.deepEqual([rest.body.code, rest.body.status], ['PAYLOAD_TOO_LARGE', 413]);
    const gql = await t.admin.graphql('mutation($d: String) { createCategory(input: {name: "Huge", description: $d}) { id } }', {
      d: 'x'.repeat(MiB),
    });
    assertGraphQLRefused(gql, 'PAYLOAD_TOO_LARGE', 413);
    assert.equal(await categoryCount(), before);
  });

  it('when a page larger than 100 is asked, then REST and GraphQL answer 400 VALIDATION_FAILED', async () => {
    const rest = await t.admin.get('/v1/pets?limit=101');
    assert.deepEqual([rest.status, rest.body.code], [400, 'VALIDATION_FAILED']);
    const gql = await t.admin.graphql('{ pets(first: 101) { edges { node { id } } } }');
    assert.equal(gql.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    assert.equal(gql.body.errors[0].extensions.status, 400);
    const ok = await t.admin.get('/v1/pets?limit=100');
    assert.equal(ok.status, 200);
  });

  it('when an order asks for 0 or 101 pets, then both facades answer 400 and the stock is unchanged', async () => {
    const { petId } = await createPet(t, { stock: 200 });
    for (const quantity of [0, 101]) {
      const rest = await t.admin.post('/v1/store/orders', { petId, quantity });
      assert.deepEqual([rest.status, rest.body.code], [400, 'VALIDATION_FAILED'], `REST quantity ${quantity}`);
      const gql = await t.admin.graphql(
        `mutation { placeOrder(input: {petId: "${globalId('Pet', petId)}", quantity: ${quantity}}) { id } }`,
      );
      assert.equal(gql.body.errors[0].extensions.code, 'VALIDATION_FAILED', `GraphQL quantity ${quantity}`);
    }
    const stock = await t.admin.get(`/v1/store/inventory/${petId}`);
    assert.equal(stock.body.quantity, 200);
  });
});

describe('ops: server timeouts', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600' } });
  });
  after(() => t.close());

  it('when a client never finishes its headers, then the server answers 408 and closes the connection', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send('GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const sent = await conn.untilClosed();
    assert.match(sent, /^HTTP\/1\.1 408 /);
  });

  it('when a client never finishes its body, then the connection is closed and nothing is created', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    const conn = await RawConnection.open(t.url);
    const body = JSON.stringify({ name: 'Never finished' });
    conn.send(
      `POST /v1/categories HTTP/1.1\r\nHost: x\r\nX-API-Key: ${t.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    const sent = await conn.untilClosed();
    assert.doesNotMatch(sent, /^HTTP\/1\.1 2/);
    assert.equal((await t.admin.get('/v1/categories')).body.length, before);
  });

  it('when the timeouts are inconsistent, then the configuration is refused naming the key', async () => {
    const { loadConfig } = await import('../../src/config.js');
    assert.throws(() => loadConfig({ HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '1000' }), /HEADERS_TIMEOUT_MS/);
  });
});

describe('ops: security headers', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when any API response is sent (REST, GraphQL, errors), then it forbids framing, sniffing and active content', async () => {
    const responses = [
      await t.admin.get('/v1/pets'),
      await t.anonymous.get('/v1/pets'),
      await t.admin.graphql('{ viewer { name } }'),
      await t.admin.get(`/graphql?query=${encodeURIComponent('{ viewer { name } }')}`, { skipContract: true }),
      await t.anonymous.get('/nowhere', { skipContract: true }),
    ];
    for (const res of responses) {
      assert.equal(res.headers.get('content-security-policy'), "default-src 'none';frame-ancestors 'none'");
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
    }
  });

  it('when an API answer is sent, then it carries none of the headers meant only for HTML pages; a page still does', async () => {
    const pageOnly = [
      'cross-origin-opener-policy',
      'origin-agent-cluster',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
      'x-xss-protection',
    ];
    const byGet = await t.admin.get(`/graphql?query=${encodeURIComponent('{ viewer { name } }')}`, { skipContract: true });
    assert.equal(byGet.status, 200, byGet.text);
    assert.match(byGet.headers.get('content-type') ?? '', /json/);
    for (const res of [await t.admin.get('/v1/pets'), await t.admin.graphql('{ viewer { name } }'), byGet]) {
      for (const name of pageOnly) assert.equal(res.headers.get(name), null, name);
      assert.match(res.headers.get('strict-transport-security') ?? '', /max-age=/);
    }
    const docs = await t.anonymous.get('/docs', { skipContract: true });
    for (const name of pageOnly) assert.ok(docs.headers.get(name), `${name} on /docs`);
  });

  it('when /docs is served, then it keeps its own policy that lets its local scripts run', async () => {
    const res = await t.anonymous.get('/docs', { skipContract: true });
    assert.equal(res.status, 200);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.notEqual(csp, "default-src 'none';frame-ancestors 'none'");
  });

  it('when a browser opens GET /graphql outside production, then the Sandbox page is served without a CSP that would block its embed', async () => {
    const res = await t.anonymous.get('/graphql', { headers: { accept: 'text/html' }, skipContract: true });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(res.headers.get('content-security-policy'), null);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  });
});
