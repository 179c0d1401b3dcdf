/**
 * A repeated GraphQL document is answered exactly like its first run: the same path (Apollo Server, the request
 * preparation in its plugin, graphql-jit) answers both, whatever is cached. Two apps receive the same requests from the same
 * callers in the same order, each request twice in a row; before each one, the "warm" app has already been sent
 * the same request by another account (its document parsed, validated, shaped and compiled), the "cold" app has
 * not (its first run of the document, then a repeat). Each pair of answers must be identical: status, every header,
 * body, and the request's log line, once what differs by nature (request ids, dates, reset times, generated
 * secrets, durations) is blanked. The rate-limit headers being equal after every request also shows that both
 * apps charged the same points, once.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { startApp, createAccount, type Client, type TestApp, type TestResponse } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { comparableAnswer } from './support.js';

/** The request's log line, without what differs by nature. */
function logLine(lines: string[]): Record<string, unknown> | undefined {
  const line = lines.filter((l) => l.includes('"msg":"request"')).at(-1);
  if (!line) return undefined;
  const { time: _t, pid: _p, hostname: _h, requestId: _r, durationMs: _d, ...rest } = JSON.parse(line) as Record<string, unknown>;
  return rest;
}

type Who = 'admin' | 'customer' | 'limited' | 'anonymous' | 'invalid' | 'warmer';
interface Sent {
  who: Who;
  /** The JSON body, or a raw string body. */
  body: unknown;
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  /** GET: the query string. */
  search?: string;
}

describe('GraphQL repeated documents: a document already run answers like its first run (status, headers, body, charge, log line)', () => {
  let warm: TestApp;
  let cold: TestApp;
  const logs = { warm: [] as string[], cold: [] as string[] };
  let clients: Record<'warm' | 'cold', Record<Who, Client>>;
  before(async () => {
    // One admin key for both, so that both apps see the same caller; a ban after two refusals.
    const env = {
      ADMIN_API_KEY: `psk_${randomBytes(32).toString('base64url')}`,
      GRAPHQL_EXECUTOR: 'jit',
      BAN_THRESHOLD: '2',
      LOG_LEVEL: 'info',
    };
    [warm, cold] = await Promise.all([
      startApp({ env, logStream: { write: (l) => void logs.warm.push(l) } }),
      startApp({ env, logStream: { write: (l) => void logs.cold.push(l) } }),
    ]);
    const clientsOf = async (t: TestApp): Promise<Record<Who, Client>> => ({
      admin: t.admin,
      anonymous: t.anonymous,
      invalid: t.anonymous.withKey(`psk_${'x'.repeat(43)}`),
      customer: (await createAccount(t, { name: 'C' })).client,
      limited: (await createAccount(t, { name: 'L', plan: 'enterprise', limits: { perMinute: 3, perDay: 100 } })).client,
      // Sends every request to the warm app first; a customer, so that its mutations change nothing.
      warmer: (await createAccount(t, { name: 'W', plan: 'enterprise', limits: { perMinute: 10_000, perDay: 100_000 } })).client,
    });
    clients = { warm: await clientsOf(warm), cold: await clientsOf(cold) };
  });
  after(() => Promise.all([warm?.close(), cold?.close()]));

  async function send(app: 'warm' | 'cold', { who, body, method = 'POST', headers = {}, search = '' }: Sent) {
    const client = clients[app][who];
    const raw = typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body);
    return client.request(method, `/graphql${search}`, {
      rawBody: raw,
      headers: raw === undefined ? headers : { 'content-type': 'application/json', ...headers },
      skipContract: true,
    });
  }

  /** Sends one request to both apps `times` times (one app after the other) and asserts each pair of answers is the same. */
  async function same(sent: Sent, times = 2): Promise<TestResponse[]> {
    const answers: TestResponse[] = [];
    for (let i = 0; i < times; i++) {
      await send('warm', { ...sent, who: 'warmer' });
      const a = await send('warm', sent);
      const b = await send('cold', sent);
      const what = `${sent.method ?? 'POST'} ${String(JSON.stringify(sent.body ?? sent.search ?? null)).slice(0, 160)} ${JSON.stringify(sent.headers ?? {})} (#${i + 1})`;
      assert.deepEqual(comparableAnswer(a, ['retry-after']), comparableAnswer(b, ['retry-after']), `different answers to ${what}`);
      assert.ok(logLine(logs.warm), `no request log line for ${what}`);
      assert.deepEqual(logLine(logs.warm), logLine(logs.cold), `different log lines for ${what}`);
      answers.push(a);
    }
    return answers;
  }
  const query = (who: Who, text: string, variables?: unknown, operationName?: unknown, headers?: Record<string, string>) =>
    same({ who, body: { query: text, variables, operationName }, headers });

  it('when the same queries come again (variables, aliases, fragments, directives, introspection, answer types), then both answer alike', async () => {
    await query(
      'admin',
      'mutation { a: createCategory(input: {name: "Dogs"}) { id name } b: createCategory(input: {name: "Cats"}) { id } }',
    );
    for (const name of ['Rex', 'Fido', 'Tom']) {
      await query('admin', 'mutation ($input: NewPetInput!) { createPet(input: $input) { id name } }', {
        input: { name, categoryId: globalId('Category', 1) },
      });
    }
    await query('admin', `mutation { setInventory(petId: "${globalId('Pet', 1)}", quantity: 3) { petId quantity } }`);
    // The benchmark's two queries.
    const [, byIds] = await query(
      'customer',
      'query Pets($ids: [ID!]) { pets(filter: { ids: $ids }) { edges { node { id name categoryId status } } } }',
      {
        ids: [1, 2, 3].map((n) => globalId('Pet', n)),
      },
    );
    assert.equal(byIds!.status, 200);
    assert.equal(byIds!.body.data.pets.edges.length, 3);
    await query('customer', 'query Pet($id: ID!) { pet(id: $id) { id name categoryId status } }', { id: globalId('Pet', 1) }, 'Pet');
    await query('customer', 'query Pet($id: ID!) { pet(id: $id) { id name categoryId status } }', { id: globalId('Pet', 2) }, 'Pet');
    await query('customer', 'query Pet($id: ID!) { pet(id: $id) { id name categoryId status } }', { id: globalId('Pet', 999) });
    // Aliases, fragments, inline fragments, defaults, nested connections (a nested connection's cost).
    await query(
      'customer',
      `query Read($first: Int = 2, $status: PetStatus) {
        pets(first: $first, filter: { status: $status }) { edges { cursor node { ...P } } pageInfo { hasNextPage endCursor } }
        one: pet(id: "${globalId('Pet', 1)}") { ...P inventory { quantity status } }
        none: pet(id: "${globalId('Pet', 999)}") { id }
        categories { edges { node { name pets(first: 5) { edges { node { __typename id } } } } } }
      }
      fragment P on Pet { id name status ... on Pet { categoryId } category { name } }`,
      { status: 'available' },
    );
    await query('customer', 'query Read($first: Int = 2) { pets(first: $first) { edges { node { id } } } }', { first: 3 });
    await query('customer', 'query Read($first: Int = 2) { pets(first: $first) { edges { node { id } } } }', null);
    // @skip / @include (run by graphql-js, never by jit) and the free fields.
    await query(
      'customer',
      'query ($s: Boolean = true) { pets(first: 3) { edges { node { id ... @include(if: $s) { name } ...N @skip(if: $s) } } } } fragment N on Pet { status name }',
      { s: false },
    );
    await query('customer', '{ rateLimit { plan resources { minute { used remaining } } } __typename }');
    await query('customer', '{ __typename }');
    await query('customer', 'query { __schema { queryType { name } } __type(name: "Pet") { fields { name } } }');
    await query('anonymous', 'query { __schema { queryType { name } } }');
    await query('customer', '{ viewer { id name } }', undefined, null);
    await query('customer', '{ viewer { id } }', {}, undefined);
    // Answer types: Apollo negotiates over Accept; an Accept without JSON is disregarded by the facade.
    for (const accept of [
      'application/graphql-response+json',
      'application/json',
      '*/*',
      'text/html',
      'application/graphql-response+json;q=0.5, application/json',
      '',
    ]) {
      await query('customer', '{ viewer { id } }', undefined, undefined, { accept });
    }
    await query('customer', '{ viewer { id } }', undefined, undefined, { 'content-type': 'application/json; charset=utf-8' });
    await query('customer', '{ viewer { id } }', undefined, undefined, { 'content-type': 'application/vnd.petstore+json' });
    // A GET query (Apollo's only).
    await same({ who: 'customer', body: undefined, method: 'GET', search: `?query=${encodeURIComponent('{ viewer { id } }')}` });
  });

  it('when known queries fail or are refused (field errors, variables, operation names, sizes, bodies, keys), then both answer alike', async () => {
    const ONE = 'query ($id: ID!) { pet(id: $id) { id name } }';
    await query('customer', ONE, { id: globalId('Pet', 1) });
    // A field error (charged its cost), variables that do not fit (refused, 1 point).
    await query('customer', ONE, { id: 'abc' });
    await query('customer', ONE, { id: { not: 'an id' } });
    await query('customer', ONE, {});
    await query('customer', ONE, { id: null });
    await query('customer', ONE, undefined);
    await query(
      'customer',
      `query { a: pet(id: "${globalId('Pet', 1)}") { id } b: pet(id: "0") { id } c: pet(id: "${globalId('Pet', 998)}") { name } }`,
    );
    // The size ceiling, with the document already known at a small size.
    const BIG = 'query ($n: Int) { pets(first: $n) { edges { node { category { pets(first: $n) { edges { node { id } } } } } } } }';
    await query('customer', BIG, { n: 1 });
    await query('customer', BIG, { n: 100 });
    await query('customer', 'query ($n: Int) { pets(first: $n) { edges { cursor } } }', { n: 'ten' });
    await query('customer', 'query ($n: Int) { pets(first: $n) { edges { cursor } } }', { n: 1000 });
    // Operation names: several operations, one chosen, none, an unknown one, an empty one.
    const TWO = 'query A { pets { edges { cursor } } } query B { categories { edges { cursor } } }';
    for (const name of ['A', 'B', undefined, null, 'C', '']) await query('customer', TWO, undefined, name);
    await query('customer', 'query A { viewer { id } }', undefined, '');
    await query('customer', 'query A { viewer { id } }', undefined, 'A');
    await query('customer', 'query A { viewer { id } }', undefined, 'Z');
    // Bodies Apollo refuses or reads its own way, for a known document.
    const KNOWN = '{ viewer { id } }';
    const bodies: unknown[] = [
      { query: KNOWN, variables: '{}' },
      { query: KNOWN, variables: [] },
      { query: KNOWN, operationName: 3 },
      { query: KNOWN, extensions: '{}' },
      { query: KNOWN, extensions: {} },
      { query: KNOWN, extensions: { persistedQuery: { version: 1, sha256Hash: 'abc' } } },
      { query: KNOWN, unknown: true },
      { query: '' },
      { query: 3 },
      {},
      'null',
      '[]',
      '"text"',
      '{ not json',
    ];
    for (const body of bodies) await same({ who: 'customer', body });
    await same({ who: 'customer', body: { query: KNOWN }, headers: { 'content-type': 'text/plain' } });
    await same({ who: 'customer', body: undefined });
    // No key, an unknown key: the same known document.
    await query('anonymous', KNOWN);
    await query('invalid', KNOWN);
    await query('customer', 'mutation { createCategory(input: {name: "Not staff"}) { id } }');
    await query('customer', 'subscription { events { id } }');
    await query('customer', '{ pets { edges { node { nope } } } }');
    await query('customer', '{ pets { edges { node { id } }');
  });

  it('when a document is repeated, then the header lines come in the same order, spelt the same, as on its first run', async () => {
    /** The names of the header lines as sent (fetch sorts and lower-cases them). */
    const headerLines = (app: TestApp, key: string, body: string) =>
      new Promise<{ status: number; names: string[] }>((resolve, reject) => {
        const url = new URL(`${app.url}/graphql`);
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key },
          },
          (res) => {
            res.resume().on('end', () => resolve({ status: res.statusCode!, names: res.rawHeaders.filter((_, i) => i % 2 === 0) }));
          },
        );
        req.on('error', reject).end(body);
      });
    const body = JSON.stringify({ query: 'query Lines { viewer { id } }' });
    await headerLines(warm, clients.warm.warmer.key!, body);
    for (let i = 0; i < 2; i++) {
      const [a, b] = [await headerLines(warm, clients.warm.customer.key!, body), await headerLines(cold, clients.cold.customer.key!, body)];
      assert.equal(a.status, 200);
      assert.deepEqual(a, b);
    }
  });

  it('when a key runs out of points and is banned, then both answer every request alike and charge it alike', async () => {
    const VIEWER = { query: 'query V { viewer { id } }' };
    // 3 points a minute: two answered, a 2-point query refused whole, one more answered, then refusals, then the ban.
    const codes = (answers: TestResponse[]) => answers.map((a) => a.body.errors?.[0]?.extensions?.code ?? a.status);
    assert.deepEqual(codes(await same({ who: 'limited', body: VIEWER }, 2)), [200, 200]);
    assert.deepEqual(codes(await same({ who: 'limited', body: { query: 'query W { a: viewer { id } b: viewer { id } }' } }, 1)), [
      'RATE_LIMITED',
    ]);
    assert.deepEqual(codes(await same({ who: 'limited', body: VIEWER }, 4)), [200, 'RATE_LIMITED', 'API_KEY_BANNED', 'API_KEY_BANNED']);
    assert.deepEqual(codes(await same({ who: 'limited', body: { query: 'query { pet(id: "1") { id } }' } }, 2)), [
      'API_KEY_BANNED',
      'API_KEY_BANNED',
    ]);
    assert.deepEqual(codes(await same({ who: 'customer', body: VIEWER }, 1)), [200]);
  });
});
