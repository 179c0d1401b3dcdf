/**
 * The two GraphQL executors (`GRAPHQL_EXECUTOR=jit`, the default, and `graphql-js`) answer every
 * request alike: status, headers and body, errors included. Two apps, one per executor, receive the
 * same requests in the same order; each pair of answers must be identical once what differs by nature
 * (request ids, dates, rate-limit reset times, generated secrets) is blanked. A second part runs a small
 * schema made for the cases the service's resolvers cannot produce (null in a non-null position, a
 * failing list item, an unexpected error) through each executor and the service's error formatting.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  GraphQLError,
  GraphQLID,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
} from 'graphql';
import pino from 'pino';
import { startApp, createAccount, type Client, type TestApp } from '../helpers/app.js';
import { comparableAnswer } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';
import { DomainError } from '../../src/domain/errors.js';
import { HttpError } from '../../src/http/errors.js';
import { formatErrors } from '../../src/graphql/server/error.mapping.js';
import { operationExecutor, type OperationExecutor } from '../../src/graphql/server/jit.executor.js';
import { coerceVariables } from '../../src/graphql/server/operation-shape.js';
import { queryLimits } from '../../src/graphql/server/query-limits.js';

describe('GraphQL executors: graphql-jit and graphql-js answer alike over HTTP', () => {
  let jit: TestApp;
  let js: TestApp;
  let customers: { jit: Client; js: Client };
  before(async () => {
    // One admin key for both, so that both apps see the same caller.
    const ADMIN_API_KEY = `psk_${randomBytes(32).toString('base64url')}`;
    [jit, js] = await Promise.all([
      startApp({ env: { GRAPHQL_EXECUTOR: 'jit', ADMIN_API_KEY } }),
      startApp({ env: { GRAPHQL_EXECUTOR: 'graphql-js', ADMIN_API_KEY } }),
    ]);
    assert.equal(jit.config.graphqlExecutor, 'jit');
    assert.equal(js.config.graphqlExecutor, 'graphql-js');
    customers = { jit: (await createAccount(jit, { name: 'C' })).client, js: (await createAccount(js, { name: 'C' })).client };
  });
  after(() => Promise.all([jit?.close(), js?.close()]));

  /** Sends one request to both apps (one after the other) and asserts the answers are the same. */
  async function same(who: 'admin' | 'customer' | 'anonymous', query: string, variables?: Record<string, unknown>, operationName?: string) {
    const client = (t: TestApp, c: Client) => (who === 'admin' ? t.admin : who === 'anonymous' ? t.anonymous : c);
    const send = (c: Client) => c.request('POST', '/graphql', { body: { query, variables, operationName }, skipContract: true });
    const a = await send(client(jit, customers.jit));
    const b = await send(client(js, customers.js));
    assert.deepEqual(comparableAnswer(a), comparableAnswer(b), `different answers to ${query.slice(0, 120)}`);
    return a;
  }

  it('when data is written and read back (mutations, aliases, fragments, variables with defaults, nested lists), then both answer alike', async () => {
    const created = await same(
      'admin',
      'mutation { a: createCategory(input: {name: "Dogs"}) { id name } b: createCategory(input: {name: "Cats", description: "x"}) { id description } }',
    );
    assert.equal(created.status, 200);
    for (const name of ['Rex', 'Fido', 'Tom']) {
      await same('admin', 'mutation ($input: NewPetInput!) { createPet(input: $input) { id name status category { name } } }', {
        input: { name, categoryId: globalId('Category', 1) },
      });
    }
    const stocked = await same('admin', `mutation { setInventory(petId: "${globalId('Pet', 1)}", quantity: 3) { petId quantity status } }`);
    assert.deepEqual(stocked.body.data, { setInventory: { petId: globalId('Pet', 1), quantity: 3, status: 'available' } });
    const read = await same(
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
    assert.equal(read.status, 200);
    // One order, then reading the pet's stock back in the same mutation: each root field sees the previous one's change.
    await same(
      'customer',
      'mutation ($input: NewOrderInput!) { o: placeOrder(input: $input) { id petId quantity complete pet { inventory { quantity } } } p: placeOrder(input: $input) { id pet { status inventory { quantity } } } }',
      { input: { petId: globalId('Pet', 1), quantity: 1 } },
    );
    await same('customer', 'query { orders { edges { node { id petId quantity complete shipDate } } } }');
    await same('admin', 'query { orders { edges { node { id } } } }');
    await same('admin', `mutation { completeOrder(id: "${globalId('Order', 1)}") { id complete shipDate } }`);
    // Unions and __typename over the event feed; @skip/@include on fragment spreads and inline fragments.
    const feed = `query Feed($skip: Boolean!, $inc: Boolean!) {
      events(first: 50) { edges { node { id type createdAt data { __typename ... on Pet { id name } ... on Order { id complete shipDate } ...C @skip(if: $skip) ... on InventoryItem @include(if: $inc) { petId quantity } } } } }
    }
    fragment C on Category { id name }`;
    for (const [skip, inc] of [
      [false, true],
      [true, false],
      [true, true],
      [false, false],
    ])
      await same('admin', feed, { skip, inc });
    // The same without directives (jit runs these): unions, overlapping fields, fragments merged in order.
    await same(
      'admin',
      'query { events(first: 50) { edges { node { id type createdAt data { __typename ... on Pet { name id } ... on Order { id complete petId } ... on Category { ...C } ... on InventoryItem { quantity petId } } } } } } fragment C on Category { name id }',
    );
    await same(
      'customer',
      'query { pets(first: 3) { edges { node { ...A name ...B category { ...K } } } } } fragment A on Pet { status } fragment B on Pet { id status categoryId } fragment K on Category { name id }',
    );
    await same(
      'customer',
      'query ($s: Boolean = true) { pets(first: 3) { edges { node { id ... @include(if: $s) { name } ...N @skip(if: $s) } } } } fragment N on Pet { status name }',
    );
    await same(
      'customer',
      'query ($s: Boolean = true) { pets(first: 3) { edges { node { id ... @include(if: $s) { name } ...N @skip(if: $s) } } } } fragment N on Pet { status name }',
      { s: false },
    );
  });

  it("when a query is repeated (jit compiles it once, then runs the compiled function), then every answer is still byte for byte graphql-js's", async () => {
    // Names that JSON must escape, or that a serializer may get wrong: quotes, backslashes, a character outside the
    // BMP, HTML, invisible characters beside visible ones, long ones with and without escapes. Control characters
    // and lone surrogates are not valid names (the domain refuses them).
    const names = [
      'Quote " and \\ back',
      'No\u00a0break, zero\u200dwidth',
      'Émile 🐶',
      '</script><b>',
      'x'.repeat(60),
      `${'y'.repeat(40)} "quoted" \\ ${'z'.repeat(40)}`,
    ];
    for (const t of [jit, js]) {
      const category = await t.admin.post('/v1/categories', { name: 'Escapes' });
      assert.equal(category.status, 201);
      for (const name of names) {
        const pet = await t.admin.post('/v1/pets', { name, categoryId: category.body.id });
        assert.equal(pet.status, 201, pet.text);
      }
    }
    const reader = {
      jit: (await createAccount(jit, { name: 'R', plan: 'enterprise', limits: { perMinute: 100_000, perDay: 1_000_000 } })).client,
      js: (await createAccount(js, { name: 'R', plan: 'enterprise', limits: { perMinute: 100_000, perDay: 1_000_000 } })).client,
    };
    const queries: Array<[string, Record<string, unknown>?]> = [
      [
        'query ($ids: [ID!]) { pets(filter: { ids: $ids }, first: 100) { edges { node { id name categoryId status } } } }',
        { ids: [1, 2, 5, 6, 7, 8, 9, 10, 11, 999].map((n) => globalId('Pet', n)) },
      ],
      [
        'query { pets(first: 100) { edges { cursor node { name id ...F category { name description id } } } pageInfo { hasNextPage endCursor } } } fragment F on Pet { status name }',
      ],
      [
        `query { one: pet(id: "${globalId('Pet', 5)}") { id name inventory { quantity status } } none: pet(id: "${globalId('Pet', 999)}") { id } categories { edges { node { name pets(first: 5) { edges { node { __typename id name } } } } } } }`,
      ],
      ['query { orders { edges { node { id petId quantity complete shipDate } } } }'],
      ['query { events(first: 50) { edges { node { id type data { __typename ... on Pet { name id } ... on Category { id name } } } } } }'],
      ['query { __schema { queryType { name } } __type(name: "PetStatus") { enumValues { name description } } }'],
      // A response key `__proto__`: graphql-js answers it (jit's objects would take it as their prototype).
      ['query { __proto__: pets(first: 2) { edges { node { __proto__: name id } } } }'],
    ];
    for (const [query, variables] of queries) {
      const send = (c: Client) => c.request('POST', '/graphql', { body: { query, variables }, skipContract: true });
      const expected = comparableAnswer(await send(reader.js), ['x-ratelimit-remaining', 'ratelimit']);
      for (let i = 0; i < 4; i++) {
        const answer = await send(reader.jit);
        assert.deepEqual(
          comparableAnswer(answer, ['x-ratelimit-remaining', 'ratelimit']),
          expected,
          `answer ${i + 1} to ${query.slice(0, 80)}`,
        );
      }
    }
  });

  it('when requests fail (field errors, refused variables, unknown operations, limits, authentication), then both answer alike', async () => {
    const cases: Array<
      [who: 'admin' | 'customer' | 'anonymous', query: string, variables?: Record<string, unknown>, operationName?: string]
    > = [
      ['customer', 'query { pet(id: "abc") { id } }'],
      [
        'customer',
        `query { a: pet(id: "${globalId('Pet', 1)}") { id } b: pet(id: "0") { id } c: pet(id: "${globalId('Pet', 998)}") { name } }`,
      ],
      ['customer', 'mutation { createCategory(input: {name: "Not staff"}) { id } }'],
      ['customer', `mutation { placeOrder(input: {petId: "${globalId('Pet', 3)}", quantity: 0}) { id } }`],
      ['customer', `mutation { placeOrder(input: {petId: "${globalId('Pet', 999)}", quantity: 1}) { id } }`],
      ['customer', 'query ($id: ID!) { pet(id: $id) { id } }'],
      ['customer', 'query ($id: ID!) { pet(id: $id) { id } }', { id: { not: 'an id' } }],
      ['customer', 'query ($n: Int) { pets(first: $n) { edges { cursor } } }', { n: 'ten' }],
      ['customer', 'query ($n: Int) { pets(first: $n) { edges { cursor } } }', { n: 1000 }],
      ['customer', 'query ($s: PetStatus) { pets(filter: {status: $s}) { edges { cursor } } }', { s: 'lost' }],
      ['customer', 'query A { pets { edges { cursor } } } query B { categories { edges { cursor } } }'],
      ['customer', 'query A { pets { edges { cursor } } } query B { categories { edges { cursor } } }', undefined, 'B'],
      ['customer', 'query A { pets { edges { cursor } } }', undefined, 'C'],
      ['customer', 'query { pets { edges { node { nope } } } }'],
      ['customer', 'query { pets { edges { node { id } }'],
      ['customer', `query { pets(first: 100) { edges { node { category { pets(first: 100) { edges { node { id } } } } } } } }`],
      [
        'customer',
        `query { categories { edges { node { pets { edges { node { category { pets { edges { node { category { pets { edges { node { id } } } } } } } } } } } } } } }`,
      ],
      ['customer', 'subscription { events { id } }'],
      ['anonymous', 'query { pets { edges { cursor } } }'],
      ['anonymous', 'query { __typename }'],
      [
        'customer',
        'query { __schema { queryType { name } types { name kind } } __type(name: "Pet") { fields { name type { kind name ofType { name } } } } }',
      ],
      ['customer', 'query { rateLimit { limit remaining } }'],
    ];
    for (const [who, query, variables, operationName] of cases) await same(who, query, variables, operationName);
  });
});

describe('GraphQL executors: graphql-jit and graphql-js answer alike, on cases the service cannot produce', () => {
  type Source = { id: string; name?: string | null };
  const Item: GraphQLObjectType<Source> = new GraphQLObjectType<Source>({
    name: 'Item',
    fields: () => ({
      id: { type: new GraphQLNonNull(GraphQLID) },
      name: { type: new GraphQLNonNull(GraphQLString), resolve: (item) => item.name },
      label: {
        type: GraphQLString,
        resolve: (item) => (item.name === 'boom' ? Promise.reject(new Error('secret SQL detail')) : item.name),
      },
      child: { type: Item, resolve: (item) => ({ id: `${item.id}.1`, name: null }) },
    }),
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        items: {
          type: new GraphQLList(Item),
          resolve: () => [
            { id: '1', name: 'a' },
            { id: '2', name: null },
            { id: '3', name: 'boom' },
          ],
        },
        strict: {
          type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Item))),
          resolve: () => [
            { id: '1', name: 'a' },
            { id: '2', name: null },
          ],
        },
        notFound: { type: Item, resolve: () => Promise.reject(new DomainError('NOT_FOUND', 'Item 7 was not found.')) },
        refused: {
          type: GraphQLInt,
          resolve: () => {
            throw new GraphQLError('Refused here', { extensions: { code: 'CUSTOM' } });
          },
        },
        unavailable: {
          type: GraphQLInt,
          resolve: () => {
            throw new HttpError('UNAVAILABLE', 'Try later.', { 'Retry-After': '1' });
          },
        },
        echo: {
          type: GraphQLString,
          args: { n: { type: GraphQLInt, defaultValue: 3 }, s: { type: GraphQLString } },
          resolve: (_, { n, s }) => `${s ?? '-'}×${n}`,
        },
      },
    }),
  });
  const logger = pino({ level: 'silent' });
  const limits = queryLimits({ maxDepth: 5, maxAliases: 5, maxTokens: 1000, maxCost: 1000, maxRepeatedFields: 30 });
  const executors = { jit: operationExecutor(schema, 'jit'), js: operationExecutor(schema, 'graphql-js') };

  /** The preparation's steps for this schema: parse, validate, coerce, run, and the errors formatted as the service answers them. */
  const run = async (executor: OperationExecutor, query: string, variables?: Record<string, unknown>) => {
    const document = parse(query);
    const invalid = validate(schema, document, [...specifiedRules, ...limits.validationRules]);
    if (invalid.length) return { refused: formatErrors(invalid, 'r', logger) };
    const operation = getOperationAST(document)!;
    const coerced = coerceVariables(schema, operation, variables);
    if ('errors' in coerced) return { refused: formatErrors(coerced.errors, 'r', logger) };
    const result = await executor.run({ document, operation, rawVariables: variables }, { requestId: 'r' });
    const formatted = result.errors?.length ? formatErrors(result.errors, 'r', logger) : undefined;
    return JSON.parse(JSON.stringify({ errors: formatted?.errors, headers: formatted?.headers, data: result.data })) as Record<
      string,
      unknown
    >;
  };

  const cases: Array<[string, string, Record<string, unknown>?]> = [
    ['a null in a non-null field of a nullable list item, and a rejected field', '{ items { id name label child { id name } } }'],
    ['a null in a non-null item of a non-null list (propagating to data: null)', '{ strict { id name } }'],
    ['known, GraphQL and infrastructure errors thrown by resolvers', '{ notFound { id } refused unavailable items { id } }'],
    ['aliases, defaults and variables', 'query ($s: String) { a: echo b: echo(n: 5, s: $s) c: echo(s: "lit") }', { s: 'v' }],
    ['refused variables', 'query ($s: String!) { echo(s: $s) }', {}],
    ['a field suggestion (masked by GraphQL Armor)', '{ itemz { id } }'],
    ['a depth limit', '{ items { child { child { child { child { child { id } } } } } } }'],
    ['introspection', '{ __type(name: "Item") { name fields { name } } __typename }'],
    [
      '@include on an inline fragment beside a fragment spread selecting the same field',
      'query ($i: Boolean!) { items { id ... @include(if: $i) { name } ...F } } fragment F on Item { label name }',
      { i: false },
    ],
  ];
  for (const [title, query, variables] of cases) {
    it(`when the operation has ${title}, then both executors answer alike`, async () => {
      const [a, b] = [await run(executors.jit, query, variables), await run(executors.js, query, variables)];
      assert.deepEqual(a, b, JSON.stringify({ jit: a, js: b }));
    });
  }

  it('when the cases above ran, then jit answered the error-free queries and graphql-js the others', () => {
    // Aliases/defaults and introspection ran on jit; three had errors and one has @include (graphql-js answered); three never executed.
    assert.deepEqual(executors.jit.answered, { jit: 2, graphqlJs: 4 });
    assert.deepEqual(executors.js.answered, { jit: 0, graphqlJs: 6 });
  });
});
