import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { getIntrospectionQuery } from 'graphql';
import { startApp, createAccount, type Client, type TestApp, type TestResponse } from '../helpers/app.js';
import { Category, InventoryItem, Pet } from '../../src/domain/entities/index.js';
import { assertGraphQLError, dataOf, gql } from '../graphql/support.js';
import { assertKeyed } from './support.js';

/**
 * docs/RATE-LIMITS.md: a GraphQL request costs what the same data costs through REST (1 per root field, plus 1 per
 * parent of each nested connection), its sizes read with the request's variables and defaults before
 * any resolver runs; over the node ceiling (GRAPHQL_MAX_COST estimated result fields, 20000 by default)
 * it is refused with 400 however its sizes are given.
 */

/** The query of the report: 100 categories × 100 pets through one variable. */
const ISSUE_QUERY =
  'query($n:Int){categories(first:$n){edges{node{pets(first:$n){edges{node{id name category{name} inventory{quantity}}}}}}}}';
const PET_FIELDS = 'edges { node { id name category { name } inventory { quantity } } }';
const SIZE_LIMIT = /^Query size limit of 20000 exceeded/;

/** 100 categories of 100 pets each, written through the ORM in one flush (fast, unlike 10,000 API calls). */
async function seedCatalogue(t: TestApp, categories: number, petsEach: number) {
  const em = t.app.orm.em.fork();
  for (let c = 0; c < categories; c++) {
    const category = new Category(`Seeded ${c}`, null);
    em.persist(category);
    for (let p = 0; p < petsEach; p++) {
      const pet = new Pet(`Pet ${c}-${p}`, category, 'available');
      em.persist(pet);
      em.persist(new InventoryItem(pet, 1));
    }
  }
  await em.flush();
}

const minuteUsed = async (client: Client): Promise<number> => (await client.get('/v1/rate_limit')).body.resources.minute.used;

/** Refused as a whole with 400 VALIDATION_FAILED naming the size limit: no data, and 1 point charged (the client's `refusals`-th), as a refused REST request. */
async function assertRefusedForSize(client: Client, res: TestResponse, refusals = 1) {
  const error = assertGraphQLError(res, 'VALIDATION_FAILED', 400);
  assert.match(error.message, SIZE_LIMIT);
  assert.equal(res.body.data, undefined, 'nothing was executed');
  assert.ok(res.text.length < 2000, `a refusal is short, got ${res.text.length} bytes`);
  assert.equal(await minuteUsed(client), refusals, 'a refused request costs 1, not its estimated size');
}

describe('GraphQL cost and size are read with the request variables (100 categories × 100 pets, free keys)', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
    await seedCatalogue(t, 100, 100);
  });
  after(() => t.close());

  const freeClient = async () => (await createAccount(t, { plan: 'free' })).client;

  it('when the reported query asks 100 × 100 through a variable, then it is refused with 400 before running, as with a literal 100', async () => {
    const client = await freeClient();
    await assertRefusedForSize(client, await gql(client, ISSUE_QUERY, { n: 100 }));
    await assertRefusedForSize(client, await gql(client, ISSUE_QUERY.replace('query($n:Int)', '').replaceAll('$n', '100')), 2);
  });

  it('when the sizes come from a variable default value, then the same query is refused', async () => {
    const client = await freeClient();
    await assertRefusedForSize(client, await gql(client, ISSUE_QUERY.replace('$n:Int', '$n:Int = 100')));
  });

  it('when the nested page is reached through fragment spreads, then it is refused', async () => {
    const client = await freeClient();
    const query = `query($n: Int) { ...Root }
      fragment Root on Query { categories(first: $n) { edges { node { ...Pets } } } }
      fragment Pets on Category { pets(first: $n) { ${PET_FIELDS} } }`;
    await assertRefusedForSize(client, await gql(client, query, { n: 100 }));
  });

  it('when the nested page is reached through inline fragments, then it is refused', async () => {
    const client = await freeClient();
    const query = `query($n: Int) { ... on Query { categories(first: $n) { edges { node { ... on Category { pets(first: $n) { ${PET_FIELDS} } } } } } } }`;
    await assertRefusedForSize(client, await gql(client, query, { n: 100 }));
  });

  it('when aliases each under the ceiling add up over it, then the request is refused; one of them alone runs', async () => {
    const client = await freeClient();
    const one = (alias: string) => `${alias}: categories(first: $n) { edges { node { pets(first: $n) { ${PET_FIELDS} } } } }`;
    await assertRefusedForSize(client, await gql(client, `query($n: Int) { ${one('a')} ${one('b')} }`, { n: 40 }));
    const ok = await gql(client, `query($n: Int) { ${one('a')} }`, { n: 40 });
    const data = dataOf(ok);
    assert.equal(data.a.edges.length, 40);
    assert.equal(data.a.edges[0].node.pets.edges.length, 40);
    assert.deepEqual(ok.body.extensions?.cost, { requested: 41, charged: 41 });
  });

  it('when a nested query is legal, then it is charged 1 + its parents, shown in extensions.cost and in X-RateLimit-Remaining', async () => {
    const client = await freeClient();
    const res = await gql(client, ISSUE_QUERY, { n: 10 });
    const data = dataOf(res);
    assert.equal(data.categories.edges.length, 10);
    for (const { node } of data.categories.edges) assert.equal(node.pets.edges.length, 10);
    assert.deepEqual(res.body.extensions?.cost, { requested: 11, charged: 11 });
    assertKeyed(res, { resource: 'minute', limit: 60, remaining: 49 });
    assert.equal(await minuteUsed(client), 11);
  });

  it('when a nested connection takes its default page size, then its parents are the parent list default (20)', async () => {
    const client = await freeClient();
    const res = await gql(client, `{ categories { edges { node { pets(first: 1) { edges { node { id } } } } } } viewer { id } }`);
    assert.equal(dataOf(res).categories.edges.length, 20);
    assert.deepEqual(res.body.extensions?.cost, { requested: 22, charged: 22 });
    assertKeyed(res, { resource: 'minute', limit: 60, remaining: 38 });
  });
});

describe('GraphQL limits in development mode: anonymous introspection, aliases, messages', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { AUTH_FAILURES_PER_MINUTE: '3', GRAPHQL_MAX_TOKENS: '100' } });
  });
  after(() => t.close());

  it('when __typename is aliased 16 times, then the alias limit (15) refuses it; 15 times, then it runs', async () => {
    const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(' ')} }`;
    assert.equal(Object.keys(dataOf(await gql(t.admin, aliases(15)))).length, 15);
    const error = assertGraphQLError(await gql(t.admin, aliases(16)), 'VALIDATION_FAILED', 400);
    assert.equal(error.message, 'Aliases limit of 15 exceeded, found 16.');
  });

  it('when a document is too deep or too long, then the message says which limit was exceeded, without "Syntax Error"', async () => {
    const deep = await gql(
      t.admin,
      '{ categories { edges { node { pets { edges { node { category { pets { edges { node { id } } } } } } } } } } }',
    );
    assert.equal(assertGraphQLError(deep, 'VALIDATION_FAILED', 400).message, 'Query depth limit of 8 exceeded, found 11.');
    const long = await gql(t.admin, `{ ${Array(120).fill('__typename').join(' ')} }`);
    // graphql-js's own wording ("more that"), without the "Syntax Error: " it puts first.
    assert.match(
      assertGraphQLError(long, 'VALIDATION_FAILED', 400).message,
      /^Document contains more th\w+ 100 tokens\. Parsing aborted\.$/,
    );
  });

  it('when an address introspects without a key, then each request (the last test here: its address ends up refused) takes a point from its per-address limiter, and past it 429', async () => {
    assert.equal(t.config.introspection, true, 'introspection is on outside production');
    const introspect = () => gql(t.anonymous, '{ __schema { queryType { name } } }');
    for (const remaining of [2, 1, 0]) {
      const res = await introspect();
      assert.equal(dataOf(res).__schema.queryType.name, 'Query');
      assert.equal(res.headers.get('x-ratelimit-remaining'), String(remaining));
      assert.deepEqual(res.body.extensions?.cost, { requested: 0, charged: 1 });
    }
    const refused = await introspect();
    assertGraphQLError(refused, 'RATE_LIMITED', 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    // A browser's visit is still the Sandbox's landing page, a shared link's query string included.
    for (const path of ['/graphql', '/graphql?explorerURLState=N4IgJg']) {
      const page = await fetch(`${t.url}${path}`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      assert.equal(page.status, 200, path);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    }
  });
});

describe('GraphQL introspection: free, and bounded as any answer is', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const TYPE_REF = 'kind name ofType { kind name ofType { kind name ofType { kind name } } }';
  const SCHEMA_FIELDS = `fragment S on __Schema { types { kind name description
    fields(includeDeprecated: true) { name description args { name description defaultValue type { ${TYPE_REF} } } type { ${TYPE_REF} } isDeprecated deprecationReason }
    inputFields { name type { ${TYPE_REF} } } interfaces { name } enumValues(includeDeprecated: true) { name description } possibleTypes { name } } }`;
  const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __schema { ...S }`).join(' ')} } ${SCHEMA_FIELDS}`;

  it("when the explorers' introspection query is sent, then it is answered and costs nothing", async () => {
    const res = await gql(t.admin, getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true, specifiedByUrl: true }));
    assert.equal(dataOf(res).__schema.queryType.name, 'Query');
    assert.deepEqual(res.body.extensions?.cost, { requested: 0, charged: 0 });
  });

  it('when introspection is aliased until its answer would pass the size limit, then it is refused before running and costs 1, as any refused document; twice is answered', async () => {
    const { client } = await createAccount(t, { plan: 'free' });
    const twice = await gql(client, aliased(2));
    assert.equal(dataOf(twice).a1.types.length, dataOf(twice).a0.types.length);
    const before = Number(twice.headers.get('x-ratelimit-remaining'));
    const refused = await gql(client, aliased(15));
    assert.match(assertGraphQLError(refused, 'VALIDATION_FAILED', 400).message, SIZE_LIMIT);
    assert.equal(Number(refused.headers.get('x-ratelimit-remaining')), before - 1);
    const inside = `{ __schema { ${Array.from({ length: 15 }, (_, i) => `t${i}: types { name fields { name args { name } type { ${TYPE_REF} } } }`).join(' ')} } }`;
    assert.match(assertGraphQLError(await gql(client, inside), 'VALIDATION_FAILED', 400).message, SIZE_LIMIT);
  });

  it('when __type is asked for a null name through a variable with a default, then it is a 400 that names the argument, never a 500', async () => {
    const res = await gql(t.admin, 'query ($n: String = "Query") { __type(name: $n) { name } }', { n: null });
    assert.ok(res.status < 500, res.text);
    assert.match(res.body.errors?.[0]?.message ?? '', /Argument "name" of non-null type "String!" must not be null/);
  });

  it("when introspection nests types' fields three levels deep, then graphql-js's introspection depth rule refuses it; two are answered", async () => {
    const two = '{ __schema { types { fields { type { fields { name } } } } } }';
    assert.ok(dataOf(await gql(t.admin, two)).__schema.types.length > 0);
    const nested = '{ __schema { types { fields { type { fields { type { fields { name } } } } } } } }';
    const refused = await gql(t.admin, nested);
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.data, undefined);
    assert.equal(refused.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED');
    assert.match(refused.body.errors?.[0]?.message ?? '', /Maximum introspection depth exceeded/);
  });
});
