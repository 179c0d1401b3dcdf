/** Regression tests for what the fuzz suite found. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';

describe('ops: fuzz findings stay fixed', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when a mutation is POSTed with an Accept that takes no JSON, then it is answered in JSON with its result (never run and then refused 406)', async () => {
    for (const accept of ['image/png', 'text/html']) {
      const res = await t.admin.graphql(`mutation { createCategory(input: {name: "Accept ${accept}"}) { name } }`, undefined, {
        headers: { accept },
      });
      assert.equal(res.status, 200, res.text);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      assert.equal(res.body.data.createCategory.name, `Accept ${accept}`);
    }
    const names = (await t.admin.get('/v1/categories')).body.map((c: { name: string }) => c.name);
    assert.deepEqual(names, ['Accept image/png', 'Accept text/html']);
  });

  it('when the GraphQL body is JSON but not an object (false, 0, "", a string), then 400 VALIDATION_FAILED, not 500', async () => {
    for (const raw of ['false', '0', '""', '"{ viewer { name } }"', 'true', '12']) {
      const res = await t.admin.request('POST', '/graphql', { rawBody: raw, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 400, `${raw}: ${res.text}`);
      assert.equal(res.body.errors[0].extensions.code, 'VALIDATION_FAILED');
    }
  });

  it('when operationName names no operation of the document (empty, unknown), then 400 VALIDATION_FAILED, not 500', async () => {
    for (const operationName of ['', 'Nope']) {
      for (const query of ['{ viewer { name } }', 'mutation M { createCategory(input: {name: "Unnamed"}) { id } }']) {
        const res = await t.admin.request('POST', '/graphql', { body: { query, operationName } });
        assert.equal(res.status, 400, `${JSON.stringify(operationName)} ${query}: ${res.text}`);
        assert.equal(res.body.errors[0].extensions.code, 'VALIDATION_FAILED');
      }
    }
    const names = (await t.admin.get('/v1/categories')).body.map((c: { name: string }) => c.name);
    assert.ok(!names.includes('Unnamed'));
  });
});
