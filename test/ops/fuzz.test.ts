/**
 * Property-based fuzzing of both facades (fast-check): at least 10,000 generated requests — random
 * paths, methods, headers and bodies (wrong types, huge strings, deep nesting, unicode, nulls) and
 * random GraphQL documents built from the committed schema — against the real app in production mode.
 *
 * Properties: no 5xx; every error in the documented shape (REST `{code, message, status, requestId}`,
 * GraphQL `errors[].extensions.{code, status}`); no stack trace or driver detail in any body; and a
 * batch in which every request was refused changed nothing in the database.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { Agent, request } from 'undici';
import {
  buildSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  isUnionType,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import { projectPath } from '../../src/project-path.js';
import { STATUS_OF } from '../../src/http/error-status.js';
import { startApp, createAccount, createPet, type TestApp } from '../helpers/app.js';
import { LogCapture } from './support.js';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const BATCH = 10;
const CODES = new Set(Object.keys(STATUS_OF));
/** Internals that no input can make a body echo. */
const LEAKS = /node_modules|\n\s+at \S+ \(|SqliteError|DriverException|SQLITE_[A-Z]|Transaction query|ECONNREFUSED/;

interface FuzzRequest {
  facade: 'rest' | 'graphql';
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** A request that can change data when it succeeds. */
  mutating: boolean;
}

// ---------- REST ----------

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
const anyText = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-injection probe, literal on purpose
  fc.constantFrom('', ' ', '\u0000', '𝕏', 'é', '%', '..', '../..', "'; drop table pets; --", '<script>', '{{7*7}}', '${x}'),
  fc.nat({ max: 5000 }).map((n) => 'x'.repeat(n)),
);
const idLike = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 40 }).map(String) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '0',
      '-1',
      '1.5',
      '1e3',
      '0x10',
      '9007199254740993',
      '99999999999999999999',
      'abc',
      '',
      'null',
      '%00',
      '%2F',
      '🐶',
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }).map(encodeURIComponent) },
);
const jsonScalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true }),
  anyText,
  fc.constantFrom(-1, 0, 1, 100, 101, 1e308, -0, 2 ** 53 + 1),
);
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, jsonScalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(anyText, fc.constantFrom('name', 'id', '__proto__', 'constructor')), tie('value'), { maxKeys: 4 }),
})).value;

const FIELDS = [
  'name',
  'categoryId',
  'status',
  'description',
  'quantity',
  'petId',
  'shipDate',
  'complete',
  'role',
  'plan',
  'limits',
  'perMinute',
  'perDay',
  'id',
];
const fieldValue = fc.oneof(
  jsonScalar,
  idLike.map(Number),
  fc.constantFrom('available', 'pending', 'sold', 'staff', 'customer', 'free', 'enterprise', '2026-01-01T00:00:00Z', 'not a date', true),
  jsonValue,
);
const plausibleBody = fc.dictionary(fc.constantFrom(...FIELDS, 'extra'), fieldValue, { maxKeys: 5 });
const deepNesting = fc
  .integer({ min: 10, max: 20_000 })
  .chain((depth) =>
    fc
      .constantFrom('[', '{"a":')
      .map((open) => (open === '[' ? '['.repeat(depth) + ']'.repeat(depth) : `${'{"a":'.repeat(depth)}null${'}'.repeat(depth)}`)),
  );
const restBody = fc.oneof(
  { weight: 5, arbitrary: plausibleBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? 'null') },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: anyText },
  { weight: 1, arbitrary: fc.constantFrom('{', '{"name":', 'null', '[]', '""', '{"name":"\\ud800"}', '\uFEFF{}') },
);

const TEMPLATES = [
  '/v1/pets',
  '/v1/pets/{id}',
  '/v1/categories',
  '/v1/categories/{id}',
  '/v1/store/orders',
  '/v1/store/orders/{id}',
  '/v1/store/inventory',
  '/v1/store/inventory/{id}',
  '/v1/account',
  '/v1/rate_limit',
  '/v1/accounts',
  '/v1/accounts/{id}',
  '/v1/accounts/{id}/api-keys',
  '/v1/api-keys/{id}',
  '/v1/api-keys/{id}/ban',
  '/v1/openapi.json',
  '/v1',
  '/v1/{id}',
  '/v2/pets',
  '/{id}',
];
const restPath = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(fc.constantFrom(...TEMPLATES), idLike).map(([t, id]) => t.replace('{id}', id)) },
  {
    weight: 1,
    arbitrary: fc.array(fc.string({ maxLength: 10 }).map(encodeURIComponent), { maxLength: 5 }).map((s) => `/v1/${s.join('/')}`),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '/v1//pets',
      '/v1/pets/',
      '/v1/./pets',
      '/v1/pets/1/2',
      '/V1/pets',
      '/v1/pets%2F1',
      '/v1/%ZZ',
      '/v1/pets?',
      '/v1/pets#x',
    ),
  },
);
const QUERY_KEYS = ['limit', 'cursor', 'status', 'categoryId', 'name', 'ids', 'complete', 'petId'];
const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(fc.constantFrom(...QUERY_KEYS), printable),
      fc.oneof(idLike, anyText, fc.constantFrom('101', '0', 'true', '1,2,3', ',,,', 'available')),
    ),
    { maxLength: 4 },
  )
  .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}` : ''));

const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/problem+json',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json; charset=latin1',
  '',
  'multipart/form-data; boundary=x',
);

function headerArb(keys: { staff: string; customer: string }) {
  return fc.record(
    {
      'x-api-key': fc.oneof(
        { weight: 8, arbitrary: fc.constant(keys.staff) },
        { weight: 2, arbitrary: fc.constant(keys.customer) },
        { weight: 1, arbitrary: printable },
        { weight: 1, arbitrary: fc.constant(`psk_${'A'.repeat(32)}`) },
      ),
      'content-type': contentType,
      'idempotency-key': printable,
      'x-request-id': printable,
      accept: fc.constantFrom('*/*', 'application/json', 'text/html', 'application/graphql-response+json', 'image/png'),
      origin: fc.constantFrom('https://evil.example', 'https://studio.apollographql.com', 'null'),
      'access-control-request-method': fc.constantFrom('POST', 'DELETE', 'PURGE'),
      'apollo-require-preflight': fc.constant('true'),
      'x-forwarded-for': fc.constantFrom('1.2.3.4', 'garbage', '::1'),
    },
    { requiredKeys: [] },
  );
}

function restRequest(keys: { staff: string; customer: string }): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      method: fc.constantFrom('GET', 'GET', 'POST', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'),
      path: restPath,
      query: queryString,
      headers: headerArb(keys),
      body: fc.option(restBody, { freq: 2 }),
    })
    .map(({ method, path, query, headers, body }) => ({
      facade: 'rest' as const,
      method,
      path: path + query,
      headers: body !== null && !('content-type' in headers) ? { ...headers, 'content-type': 'application/json' } : headers,
      body: method === 'HEAD' || body === null ? undefined : body,
      mutating: !['GET', 'HEAD', 'OPTIONS'].includes(method),
    }));
}

// ---------- GraphQL documents from the schema ----------

/** A small deterministic PRNG, so a document is a pure function of its fast-check seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
type Rng = ReturnType<typeof prng>;

const WEIRD_STRINGS = ['', ' ', 'x'.repeat(300), '\\u0000', '🐶 dog', 'é', "'", '\\"', 'available', '2026-01-01T00:00:00Z', 'nope'];

function literal(type: GraphQLInputType, rng: Rng, depth = 0): string {
  // Wrong-typed or null on purpose, now and then.
  if (rng.chance(0.06))
    return rng.pick(['null', '"wrong"', '4242424', '[1, 2]', '{ nope: 1 }', 'true', '-1', '1.5', 'sold', '99999999999']);
  if (isNonNullType(type)) return literal(type.ofType, rng, depth);
  if (isListType(type)) return `[${Array.from({ length: rng.int(4) }, () => literal(type.ofType, rng, depth + 1)).join(', ')}]`;
  if (isEnumType(type)) return rng.chance(0.9) ? rng.pick(type.getValues()).name : 'NOT_A_VALUE';
  if (isInputObjectType(type)) {
    if (depth > 3) return '{}';
    const fields = Object.values(type.getFields()).filter((f) => isNonNullType(f.type) || rng.chance(0.5));
    if (rng.chance(0.05)) return `{ ${fields.map((f) => `${f.name}: ${literal(f.type, rng, depth + 1)}`).join(', ')}, unknownField: 1 }`;
    return `{ ${fields.map((f) => `${f.name}: ${literal(f.type, rng, depth + 1)}`).join(', ')} }`;
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'Int':
        return String(rng.pick([0, 1, 2, 5, 20, 100, 101, -1, 2 ** 31, rng.int(50)]));
      case 'Float':
        return String(rng.next() * 1000);
      case 'Boolean':
        return rng.chance(0.5) ? 'true' : 'false';
      case 'ID':
        return JSON.stringify(rng.chance(0.85) ? String(1 + rng.int(40)) : rng.pick(['0', '-1', 'abc', '1.5', '99999999999999999999', '']));
      default:
        return JSON.stringify(rng.pick(WEIRD_STRINGS));
    }
  }
  return 'null';
}

function args(field: GraphQLField<unknown, unknown>, rng: Rng): string {
  const chosen = field.args.filter((a: GraphQLArgument) => (isNonNullType(a.type) ? !rng.chance(0.03) : rng.chance(0.4)));
  if (rng.chance(0.03)) return '(bogus: 1)';
  return chosen.length ? `(${chosen.map((a) => `${a.name}: ${literal(a.type, rng)}`).join(', ')})` : '';
}

function selection(type: GraphQLNamedType, rng: Rng, depth: number, maxDepth: number): string {
  if (isUnionType(type)) {
    return `{ __typename ${type
      .getTypes()
      .map((t) => `... on ${t.name} ${selection(t, rng, depth + 1, maxDepth)}`)
      .join(' ')} }`;
  }
  if (!isObjectType(type) && !isInterfaceType(type)) return '';
  const fields = Object.values(type.getFields());
  const leaves = fields.filter(
    (f) => !isObjectType(getNamedType(f.type)) && !isInterfaceType(getNamedType(f.type)) && !isUnionType(getNamedType(f.type)),
  );
  const pool = depth >= maxDepth ? leaves : fields;
  const count = 1 + rng.int(4);
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    if (pool.length === 0 || rng.chance(0.05)) {
      parts.push('__typename');
      continue;
    }
    const field = rng.pick(pool);
    const name = rng.chance(0.03) ? `${field.name}x` : field.name;
    const alias = rng.chance(0.08) ? `a${rng.int(1000)}: ` : '';
    const sub = selection(getNamedType(field.type), rng, depth + 1, maxDepth);
    parts.push(`${alias}${name}${args(field, rng)} ${sub}`);
  }
  return `{ ${parts.join(' ')} }`;
}

function graphqlDocument(schema: GraphQLSchema, seed: number): { query: string; mutation: boolean } {
  const rng = prng(seed);
  const mutation = rng.chance(0.35);
  const root = mutation ? schema.getMutationType()! : schema.getQueryType()!;
  const maxDepth = rng.chance(0.1) ? 12 : 2 + rng.int(4);
  const fields = Object.values(root.getFields());
  const count = rng.chance(0.1) ? 1 + rng.int(20) : 1 + rng.int(2);
  const parts = Array.from({ length: count }, (_, i) => {
    const field = rng.pick(fields);
    const alias = count > 1 ? `r${i}: ` : '';
    return `${alias}${field.name}${args(field, rng)} ${selection(getNamedType(field.type), rng, 2, maxDepth)}`;
  });
  const name = rng.chance(0.5) ? ` Op${rng.int(100)}` : '';
  return { query: `${mutation ? 'mutation' : 'query'}${name} { ${parts.join(' ')} }`, mutation };
}

function graphqlRequest(schema: GraphQLSchema, keys: { staff: string; customer: string }): fc.Arbitrary<FuzzRequest> {
  const doc = fc.integer().map((seed) => graphqlDocument(schema, seed));
  const envelope = fc.oneof(
    {
      weight: 12,
      arbitrary: fc.tuple(doc, fc.option(jsonValue, { freq: 5 })).map(([d, variables]) => ({
        body: JSON.stringify(variables === null ? { query: d.query } : { query: d.query, variables }),
        mutation: d.mutation,
      })),
    },
    { weight: 1, arbitrary: anyText.map((q) => ({ body: JSON.stringify({ query: q }), mutation: true })) },
    { weight: 1, arbitrary: jsonValue.map((v) => ({ body: JSON.stringify(v) ?? 'null', mutation: true })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(doc, jsonValue)
        .map(([d, name]) => ({ body: JSON.stringify({ query: d.query, operationName: name }), mutation: d.mutation })),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          deepNesting,
          fc.constantFrom(
            '{"query":',
            '[{"query":"{ viewer { name } }"}]',
            '{"query":"{ viewer { name } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"x"}}}',
          ),
        )
        .map((b) => ({ body: b, mutation: true })),
    },
  );
  return fc.record({ envelope, headers: headerArb(keys), get: fc.boolean() }).map(({ envelope: e, headers, get }) => {
    if (get && !e.mutation) {
      const parsed = JSON.parse(e.body) as { query?: unknown };
      const query = typeof parsed?.query === 'string' ? parsed.query : '';
      return { facade: 'graphql' as const, method: 'GET', path: `/graphql?query=${encodeURIComponent(query)}`, headers, mutating: false };
    }
    return {
      facade: 'graphql' as const,
      method: 'POST',
      path: '/graphql',
      headers: { ...headers, 'content-type': headers['content-type'] || 'application/json' },
      body: e.body,
      mutating: e.mutation,
    };
  });
}

// ---------- the suite ----------

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

describe('ops: fuzzing both facades (fast-check)', () => {
  let t: TestApp;
  let agent: Agent;
  let keys: { staff: string; customer: string };
  const schema = buildSchema(readFileSync(projectPath('schema/schema.graphql'), 'utf8'));
  let sent = 0;
  const logs = new LogCapture();

  before(async () => {
    t = await startApp({
      env: { NODE_ENV: 'production', LOG_LEVEL: 'error', AUTH_FAILURES_PER_MINUTE: '1000000', BAN_THRESHOLD: '1000000' },
      logStream: logs,
    });
    agent = new Agent({ connections: 8, keepAliveTimeout: 30_000 });
    // Accounts the generator's small ids (1..40) can reach, so the fuzzing account (id > 40) is never revoked or demoted.
    for (let i = 0; i < 40; i++) await createAccount(t, { role: i % 2 ? 'staff' : 'customer', plan: 'pro' });
    const staff = await createAccount(t, { role: 'staff', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } });
    const customer = await createAccount(t, {
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1_000_000, perDay: 100_000_000 },
    });
    assert.ok(staff.accountId > 40 && staff.keyId > 40);
    keys = { staff: staff.key, customer: customer.key };
    for (let i = 0; i < 10; i++) await createPet(t, { stock: 50, name: `Fuzz ${i}` });
  });
  after(async () => {
    await agent?.close();
    await t?.close();
  });

  /** Every row the API can change, as one string (the limiter's counters and idempotency records aside). */
  const TABLES = ['accounts', 'api_keys', 'categories', 'pets', 'inventory', 'orders'];
  async function snapshot(): Promise<string[]> {
    const connection = t.app.orm.em.getConnection();
    const rows = await Promise.all(TABLES.map((table) => connection.execute(`select * from ${table} order by 1`)));
    return rows.map((r) => JSON.stringify(r));
  }
  /** The first changed row of each changed table, for the failure message. */
  function changes(before: string[], after: string[]): string {
    return TABLES.flatMap((table, i) => {
      if (before[i] === after[i]) return [];
      const b = JSON.parse(before[i]!) as unknown[];
      const a = JSON.parse(after[i]!) as unknown[];
      const at = a.findIndex((row, j) => JSON.stringify(row) !== JSON.stringify(b[j]));
      return [`${table}: ${JSON.stringify(b[at] ?? null)} → ${JSON.stringify(a[at] ?? null)} (${b.length} → ${a.length} rows)`];
    }).join('; ');
  }

  async function send(r: FuzzRequest): Promise<Answer> {
    const res = await request(t.url + r.path, { method: r.method as 'GET', headers: r.headers, body: r.body, dispatcher: agent });
    const text = await res.body.text();
    sent++;
    return { status: res.statusCode, headers: res.headers, text };
  }

  function check(r: FuzzRequest, a: Answer): { mutated: boolean } {
    const where = `${r.method} ${r.path.slice(0, 200)} ${r.body?.slice(0, 300) ?? ''} → ${a.status} ${a.text.slice(0, 300)}${a.status >= 500 ? ` (logged: ${logs.lines.slice(-3).join('').slice(0, 1500)})` : ''}`;
    assert.ok(a.status < 500, `5xx: ${where}`);
    assert.doesNotMatch(a.text, LEAKS, `internals leaked: ${where}`);
    const requestId = a.headers['x-request-id'];
    assert.equal(typeof requestId, 'string', `no X-Request-Id: ${where}`);
    const type = String(a.headers['content-type'] ?? '');
    if (r.method === 'HEAD' || (r.method === 'OPTIONS' && a.status === 204)) return { mutated: false };
    if (r.facade === 'rest' || !r.path.startsWith('/graphql')) {
      if (a.status >= 400) {
        assert.match(type, /json/, `error without JSON: ${where}`);
        const body = JSON.parse(a.text);
        assert.ok(CODES.has(body.code), `unknown code: ${where}`);
        assert.equal(body.status, a.status, `status mismatch: ${where}`);
        assert.equal(STATUS_OF[body.code as keyof typeof STATUS_OF], a.status, `code/status mismatch: ${where}`);
        assert.equal(typeof body.message, 'string', where);
        assert.equal(body.requestId, requestId, `requestId mismatch: ${where}`);
      }
      return { mutated: r.mutating && a.status < 400 };
    }
    if (a.status === 200 && /text\/html/.test(type)) return { mutated: false };
    assert.match(type, /json/, `GraphQL answer without JSON: ${where}`);
    const body = JSON.parse(a.text);
    if (a.status >= 400) assert.ok(Array.isArray(body.errors) && body.errors.length > 0, `error status without errors: ${where}`);
    for (const e of body.errors ?? []) {
      assert.equal(typeof e.message, 'string', where);
      assert.ok(CODES.has(e.extensions?.code), `unknown GraphQL code: ${where}`);
      assert.equal(e.extensions.status, STATUS_OF[e.extensions.code as keyof typeof STATUS_OF], `GraphQL code/status mismatch: ${where}`);
      assert.equal(e.extensions.requestId, requestId, `GraphQL requestId mismatch: ${where}`);
    }
    const data = body.data;
    // A root mutation field ran if it has a value, or if an error sits below it (a nested field of its
    // payload failed after the change, e.g. `updateCategory { pets(first: 101) }`): GraphQL semantics.
    const ranBelowRoot = (body.errors ?? []).some((e: { path?: unknown[] }) => Array.isArray(e.path) && e.path.length > 1);
    const mutated = r.mutating && ((!!data && typeof data === 'object' && Object.values(data).some((v) => v !== null)) || ranBelowRoot);
    return { mutated };
  }

  it(`when ${REQUESTS} generated requests hit both facades, then none is a 5xx, every error has the documented shape, and refused batches change nothing`, async () => {
    const anyRequest = fc.oneof(restRequest(keys), graphqlRequest(schema, keys));
    let refusedBatches = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(anyRequest, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
        const before = await snapshot();
        const answers = await Promise.all(batch.map((r) => send(r)));
        let mutated = false;
        batch.forEach((r, i) => {
          if (check(r, answers[i]!).mutated) mutated = true;
        });
        if (!mutated) {
          refusedBatches++;
          const after = await snapshot();
          if (after.join() !== before.join()) {
            const sentRequests = batch.map(
              (r, i) =>
                `${r.method} ${r.path.slice(0, 80)} ${r.body?.slice(0, 200) ?? ''} → ${answers[i]!.status} ${answers[i]!.text.slice(0, 200)}`,
            );
            assert.fail(`a batch without a successful change changed data: ${changes(before, after)}\n${sentRequests.join('\n')}`);
          }
        }
      }),
      {
        numRuns: Math.ceil(REQUESTS / BATCH),
        includeErrorInReport: true,
        seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined,
      },
    );
    assert.ok(sent >= REQUESTS, `only ${sent} requests sent`);
    // The "nothing changed" property must actually have been exercised.
    assert.ok(refusedBatches > REQUESTS / BATCH / 10, `only ${refusedBatches} batches without a successful change`);
  });

  it('when the fuzzing is over, then the service still answers normally', async () => {
    const res = await request(`${t.url}/v1/pets?limit=1`, { headers: { 'x-api-key': keys.staff }, dispatcher: agent });
    assert.equal(res.statusCode, 200);
    await res.body.text();
    const ready = await request(`${t.url}/readyz`, { dispatcher: agent });
    assert.equal(ready.statusCode, 200);
    await ready.body.text();
  });
});
