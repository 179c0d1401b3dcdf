import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';

/**
 * Conditional GETs: every REST GET answer has a strong ETag; If-None-Match that names it is 304
 * without a body, costs nothing, still carries the rate-limit headers; the store's data is tagged from
 * its version, so the 304 reads no row, and every instance gives the same tag.
 */
describe('REST conditional requests (ETag, If-None-Match, 304)', () => {
  let t: TestApp;
  let petId: number;
  before(async () => {
    t = await startApp();
    ({ petId } = await createPet(t, { stock: 3 }));
  });
  after(() => t?.close());

  it('when a pet list is fetched again with its ETag, then it is 304 without a body, the rate-limit headers are there and it costs nothing', async () => {
    const first = await t.admin.get(`/v1/pets?ids=${petId}`);
    assert.equal(first.status, 200);
    const etag = first.headers.get('etag')!;
    assert.match(etag, /^"[A-Za-z0-9_-]{20,}"$/, 'a strong, quoted tag');
    assert.equal(first.headers.get('cache-control'), 'private, no-cache');
    const remaining = Number(first.headers.get('x-ratelimit-remaining'));
    for (let i = 0; i < 3; i++) {
      const again = await t.admin.get(`/v1/pets?ids=${petId}`, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
      assert.equal(again.text, '');
      assert.equal(again.headers.get('etag'), etag);
      assert.equal(Number(again.headers.get('x-ratelimit-remaining')), remaining, '304s cost nothing');
      assert.ok(again.headers.get('x-ratelimit-limit'));
    }
    // A weak form of the same tag, and a list that contains it, match too (RFC 9110 weak comparison).
    assert.equal((await t.admin.get(`/v1/pets?ids=${petId}`, { headers: { 'if-none-match': `"nope", W/${etag}` } })).status, 304);
    // A 200 costs its point.
    const paid = await t.admin.get(`/v1/pets?ids=${petId}`, { headers: { 'if-none-match': '"something-else"' } });
    assert.equal(paid.status, 200);
    assert.equal(Number(paid.headers.get('x-ratelimit-remaining')), remaining - 1);
  });

  it('when the data changes, then the old ETag no longer matches and the answer is 200 with the new state and a new tag', async () => {
    const before = await t.admin.get(`/v1/store/inventory/${petId}`);
    const etag = before.headers.get('etag')!;
    assert.equal((await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 7 })).status, 200);
    const after = await t.admin.get(`/v1/store/inventory/${petId}`, { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200);
    assert.equal(after.body.quantity, 7);
    assert.notEqual(after.headers.get('etag'), etag);
  });

  it('when a pet list that matched nothing gains a pet, then its old ETag no longer matches and the pet is in the answer', async () => {
    const empty = await t.admin.get('/v1/pets?name=Quokka');
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body, []);
    const etag = empty.headers.get('etag')!;
    assert.equal((await t.admin.get('/v1/pets?name=Quokka', { headers: { 'if-none-match': etag } })).status, 304);
    const { petId: quokka } = await createPet(t, { name: 'Quokka' });
    const after = await t.admin.get('/v1/pets?name=Quokka', { headers: { 'if-none-match': etag } });
    assert.equal(after.status, 200);
    assert.deepEqual(after.body.map((p: { id: number }) => p.id), [quokka]);
    assert.notEqual(after.headers.get('etag'), etag);
  });

  it('when a 304 is answered for the store data, then no row is read: only the store version is', async () => {
    const first = await t.admin.get(`/v1/pets?ids=${petId}`);
    const statements: string[] = [];
    const all = t.app.reader.all.bind(t.app.reader);
    t.app.reader.all = (sql, params) => {
      statements.push(sql);
      return all(sql, params);
    };
    try {
      const again = await t.admin.get(`/v1/pets?ids=${petId}`, { headers: { 'if-none-match': first.headers.get('etag')! } });
      assert.equal(again.status, 304);
    } finally {
      t.app.reader.all = all;
    }
    assert.deepEqual(statements, ['select max(id) as id from events']);
  });

  it("when another customer sends a customer's orders ETag, then it does not match: tags are per caller", async () => {
    const a = await createAccount(t, { name: 'A' });
    const b = await createAccount(t, { name: 'B' });
    assert.equal((await a.client.post('/v1/store/orders', { petId, quantity: 1 })).status, 201);
    const mine = await a.client.get('/v1/store/orders');
    assert.equal(mine.body.length, 1);
    const theirs = await b.client.get('/v1/store/orders', { headers: { 'if-none-match': mine.headers.get('etag')! } });
    assert.equal(theirs.status, 200);
    assert.deepEqual(theirs.body, []);
  });

  it("when the caller's own account is fetched again with its ETag, then it is 304 too (tagged from the answer) and costs nothing", async () => {
    const first = await t.admin.get('/v1/account');
    const etag = first.headers.get('etag')!;
    assert.ok(etag);
    const again = await t.admin.get('/v1/account', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal(again.headers.get('x-ratelimit-remaining'), first.headers.get('x-ratelimit-remaining'));
  });

  it('when If-None-Match comes with an invalid request, then it is the 400 as always, charged', async () => {
    const before = await t.admin.get('/v1/pets?limit=1');
    const res = await t.admin.get('/v1/pets?limit=0', { headers: { 'if-none-match': '*' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'VALIDATION_FAILED');
    // Charged: one point less than the request before it left.
    assert.equal(Number(res.headers.get('x-ratelimit-remaining')), Number(before.headers.get('x-ratelimit-remaining')) - 1);
  });

  it('when two instances serve the same database, then they give the same ETag for the same state', async () => {
    const other = await startApp({ databaseUrl: t.config.database.url, env: { ADMIN_API_KEY: t.adminKey } });
    try {
      const a = await t.admin.get(`/v1/pets?ids=${petId}`);
      const b = await other.admin.get(`/v1/pets?ids=${petId}`);
      assert.equal(a.headers.get('etag'), b.headers.get('etag'));
      assert.equal((await other.admin.get(`/v1/pets?ids=${petId}`, { headers: { 'if-none-match': a.headers.get('etag')! } })).status, 304);
    } finally {
      await other.close();
    }
  });

  it('when GraphQL is asked, then it has no HTTP caching: no ETag, Cache-Control no-store', async () => {
    const res = await t.admin.graphql('{ viewer { name } }');
    assert.equal(res.headers.get('etag'), null);
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });
});
