import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createPet, type TestApp, type TestResponse } from '../helpers/app.js';
import { LogCapture } from './support.js';

/** What must never reach a client: stack frames, SQL, file paths, table names, driver names, suggestions. */
const INTERNALS = [
  /\bat\s+\S+\s+\(/,
  /\.(ts|js|mjs):\d+/,
  /\/(work|tmp|home|usr|app)\//,
  /\bselect\b.*\bfrom\b/i,
  /\bno such table\b/i,
  /\bpets_hidden\b/,
  /sqlite|libsql|knex|mikro/i,
  /did you mean/i,
  /stacktrace/i,
];

function assertNoInternals(res: TestResponse) {
  for (const pattern of INTERNALS) assert.doesNotMatch(res.text, pattern, `response leaks ${pattern}: ${res.text.slice(0, 300)}`);
}

describe('ops: nothing internal leaks in production', () => {
  let t: TestApp;
  const logs = new LogCapture();
  before(async () => {
    t = await startApp({ env: { NODE_ENV: 'production', LOG_LEVEL: 'info' }, logStream: logs });
  });
  after(() => t.close());

  it('when a request fails unexpectedly (a table vanished), then REST and GraphQL answer 500 INTERNAL with the request id, and the log has the full error', async () => {
    await createPet(t);
    const connection = t.app.orm.em.getConnection();
    await connection.execute('alter table pets rename to pets_hidden');
    try {
      const rest = await t.admin.get('/v1/pets', { headers: { 'x-request-id': 'leak-rest-1' }, skipContract: true });
      assert.equal(rest.status, 500);
      assert.deepEqual(Object.keys(rest.body).sort(), ['code', 'message', 'requestId', 'status']);
      assert.deepEqual([rest.body.code, rest.body.status, rest.body.requestId], ['INTERNAL', 500, 'leak-rest-1']);
      assertNoInternals(rest);

      const gql = await t.admin.graphql('{ pets { edges { node { id name } } } }', undefined, {
        headers: { 'x-request-id': 'leak-gql-1' },
      });
      assert.equal(gql.body.errors.length, 1);
      assert.deepEqual(gql.body.errors[0].extensions, { code: 'INTERNAL', status: 500, requestId: 'leak-gql-1' });
      assertNoInternals(gql);
    } finally {
      await connection.execute('alter table pets_hidden rename to pets');
    }
    const logged = logs.records().filter((r) => r.level === 50 && (r.requestId === 'leak-rest-1' || r.requestId === 'leak-gql-1'));
    assert.equal(logged.length, 2, 'both failures logged at error level');
    for (const r of logged) {
      assert.match(JSON.stringify(r.err), /no such table|does not exist/);
      assert.ok(typeof r.err.stack === 'string' && r.err.stack.includes('\n'), 'the log has the stack');
    }
    assert.equal((await t.admin.get('/v1/pets')).status, 200);
  });

  it('when clients send malformed input to either facade, then the errors carry no internals', async () => {
    const responses = [
      await t.admin.request('POST', '/v1/categories', { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } }),
      await t.admin.request('POST', '/v1/categories', {
        rawBody: 'name=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      await t.admin.get('/v1/pets/abc', { skipContract: true }),
      await t.admin.get('/v1/pets?limit=%FF', { skipContract: true }),
      await t.admin.request('POST', '/graphql', { rawBody: '{"query": "{ pets {', headers: { 'content-type': 'application/json' } }),
      await t.admin.graphql('{ pet { nam } }'),
      await t.admin.graphql('{ categories { edges { node { nam } } } }'),
      await t.admin.graphql('query { __schema { types { name } } }'),
      await t.admin.graphql('{ pets(first: "x") { edges { node { id } } } }'),
      await t.admin.graphql('mutation { createPet(input: {name: 5, categoryId: {}}) { id } }'),
    ];
    for (const res of responses) {
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text}`);
      assertNoInternals(res);
    }
  });

  it('when GET /graphql is opened in production, then there is no Sandbox and no introspection', async () => {
    const page = await t.anonymous.get('/graphql', { headers: { accept: 'text/html' }, skipContract: true });
    assert.doesNotMatch(page.text, /EmbeddedSandbox/);
    const introspection = await t.admin.graphql('{ __schema { queryType { name } } }');
    assert.equal(introspection.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    // The refusal names the service's setting, not Apollo Server's constructor option.
    assert.match(introspection.body.errors[0].message, /GRAPHQL_INTROSPECTION/);
    assert.doesNotMatch(introspection.body.errors[0].message, /ApolloServer|introspection: true/);
  });
});
