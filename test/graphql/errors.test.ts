import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createPet, startApp, type TestApp } from '../helpers/app.js';

/** Defects an outside review found in the GraphQL facade; each test would have caught one. */
describe('GraphQL: client input never yields a 500, and no internals leak in development either', () => {
  let t: TestApp;
  before(async () => {
    // `npm start` runs in development: the default a new user sees.
    t = await startApp({ env: { NODE_ENV: 'development' } });
  });
  after(() => t.close());

  it('when a resolver fails unexpectedly in development, then the error is INTERNAL with no stack trace, SQL or path', async () => {
    await createPet(t);
    const connection = t.app.orm.em.getConnection();
    await connection.execute('alter table pets rename to pets_hidden');
    try {
      const res = await t.admin.graphql('{ pets { edges { node { id } } } }');
      assert.equal(res.body.errors[0].extensions.code, 'INTERNAL');
      assert.equal(res.body.errors[0].extensions.stacktrace, undefined);
      assert.doesNotMatch(res.text, /no such table|select |\/node_modules\/|file:\/\/|at .*\.js:\d+/);
    } finally {
      await connection.execute('alter table pets_hidden rename to pets');
    }
  });

  it('when a connection is paged, then pageInfo has the four Relay fields, consistent with the edges', async () => {
    await createPet(t, { name: 'P1' });
    await createPet(t, { name: 'P2' });
    await createPet(t, { name: 'P3' });
    const q =
      'query ($after: String) { pets(first: 2, after: $after) { edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }';
    const first = (await t.admin.graphql(q)).body.data.pets;
    assert.equal(first.pageInfo.hasPreviousPage, false);
    assert.equal(first.pageInfo.hasNextPage, true);
    assert.equal(first.pageInfo.startCursor, first.edges[0].cursor);
    assert.equal(first.pageInfo.endCursor, first.edges.at(-1).cursor);
    const second = (await t.admin.graphql(q, { after: first.pageInfo.endCursor })).body.data.pets;
    assert.equal(second.pageInfo.hasPreviousPage, true);
    assert.equal(second.pageInfo.startCursor, second.edges[0].cursor);
  });

  it('when a subscription is sent, then it is 400 VALIDATION_FAILED, not an internal error', async () => {
    const res = await t.admin.graphql('subscription { x }');
    assert.equal(res.status, 400);
    assert.equal(res.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    assert.equal(res.body.errors[0].extensions.status, 400);
  });

  it('when a document has two operations and no operationName, or names a missing one, then it is 400 VALIDATION_FAILED', async () => {
    for (const [query, operationName] of [
      ['query A { viewer { name } } query B { viewer { name } }', undefined],
      ['query A { viewer { name } }', 'Nope'],
    ] as const) {
      const res = await t.admin.request('POST', '/graphql', { body: { query, operationName } });
      assert.equal(res.status, 400, `${query} / ${operationName}`);
      assert.equal(res.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    }
  });
});
