import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, createPet, recordSql, startApp, type Client, type TestApp, type TestResponse } from '../helpers/app.js';

/**
 * Conditional GETs (docs/RATE-LIMITS.md, "Conditional requests"): every REST GET answer has a strong ETag made from what the caller is
 * sent; If-None-Match that names it is 304 without a body, costs nothing, still carries the rate-limit
 * headers, and every instance gives the same tag. A conditional request is still a request: over the
 * limit or banned it is 429 as without the header, anything but a 304 costs 1, and a 304 needs a
 * resource the caller may see.
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

  it('when a page keeps its body but loses its next page, then its old ETag no longer matches: the tag covers the Link header too', async () => {
    const { categoryId, petId: first } = await createPet(t, { name: 'Paged one' });
    const second = await t.admin.post('/v1/pets', { name: 'Paged two', categoryId });
    assert.equal(second.status, 201);
    const paged = await t.admin.get(`/v1/pets?categoryId=${categoryId}&limit=1`);
    assert.equal(paged.status, 200);
    assert.deepEqual(
      paged.body.map((p: { id: number }) => p.id),
      [first],
    );
    assert.match(paged.headers.get('link') ?? '', /rel="next"/);
    const etag = paged.headers.get('etag')!;

    assert.equal((await t.admin.delete(`/v1/pets/${second.body.id}`)).status, 204);
    const last = await t.admin.get(`/v1/pets?categoryId=${categoryId}&limit=1`, { headers: { 'if-none-match': etag } });
    // The same bytes of body, now without a next page: a 304 would keep the client's stale link.
    assert.equal(last.status, 200);
    assert.equal(last.text, paged.text);
    assert.equal(last.headers.get('link'), null);
    assert.notEqual(last.headers.get('etag'), etag);
    assert.match(last.headers.get('etag')!, /^"[A-Za-z0-9_-]{20,}"$/);
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
    assert.deepEqual(
      after.body.map((p: { id: number }) => p.id),
      [quokka],
    );
    assert.notEqual(after.headers.get('etag'), etag);
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

  it("when another customer's order completes, then a customer's own orders keep their ETag: a tag shows only what its caller may see", async () => {
    const a = await createAccount(t, { name: 'Watcher' });
    const b = await createAccount(t, { name: 'Other buyer' });
    assert.equal((await a.client.post('/v1/store/orders', { petId, quantity: 1 })).status, 201);
    const mine = await a.client.get('/v1/store/orders');
    const etag = mine.headers.get('etag')!;
    const theirs = await b.client.post('/v1/store/orders', { petId, quantity: 1 });
    assert.equal(theirs.status, 201);
    assert.equal((await t.admin.patch(`/v1/store/orders/${theirs.body.id}`, { complete: true })).status, 200);
    const again = await a.client.get('/v1/store/orders', { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304, 'another account completing its order changes nothing the watcher sees');
    assert.equal((await a.client.get('/v1/store/orders')).headers.get('etag'), etag);
  });

  it("when If-None-Match: * asks for another account's order, a missing order or staff-only inventory, then it is the 404, 404 and 403 as without it, and each costs 1", async () => {
    const owner = await createAccount(t, { name: 'Owner' });
    const snoop = await createAccount(t, { name: 'Snoop' });
    const order = await owner.client.post('/v1/store/orders', { petId, quantity: 1 });
    assert.equal(order.status, 201);
    const star = { headers: { 'if-none-match': '*' } };
    let remaining = Number((await snoop.client.get('/v1/account')).headers.get('x-ratelimit-remaining'));
    for (const [path, status] of [
      [`/v1/store/orders/${order.body.id}`, 404],
      ['/v1/store/orders/999999', 404],
      ['/v1/store/inventory', 403],
    ] as const) {
      const res = await snoop.client.get(path, star);
      assert.equal(res.status, status, `${path}: ${res.text}`);
      assert.equal(Number(res.headers.get('x-ratelimit-remaining')), --remaining, `${path} costs 1`);
    }
    // The owner may see it: then * matches, free.
    assert.equal((await owner.client.get(`/v1/store/orders/${order.body.id}`, star)).status, 304);
  });

  it('when conditional GETs of a missing order keep coming, then each costs 1 and the key meets its limit: no 429 is skipped', async () => {
    const free = await createAccount(t, { name: 'Free prober', plan: 'free' });
    const answers: TestResponse[] = [];
    for (let i = 0; i < 70; i++) answers.push(await free.client.get('/v1/store/orders/999999', { headers: { 'if-none-match': '*' } }));
    assert.deepEqual(counts(answers), { 404: 60, 429: 10 });
    assert.equal(answers[59]!.headers.get('x-ratelimit-remaining'), '0');
  });

  it('when a free key over its limit sends 40 conditional GETs (matching, missing and stale tags), then every one is 429 as without the header, and it is banned', async () => {
    const free = await createAccount(t, { name: 'Free watcher', plan: 'free' });
    const account = await free.client.get('/v1/account');
    const etag = account.headers.get('etag')!;
    for (let remaining = Number(account.headers.get('x-ratelimit-remaining')); remaining > 0; remaining--) {
      assert.equal((await free.client.get('/v1/account')).status, 200);
    }
    assert.equal(
      (await free.client.get('/v1/account', { headers: { 'if-none-match': etag } })).status,
      429,
      'a matching tag over the limit',
    );
    const answers: TestResponse[] = [];
    for (let i = 0; i < 13; i++) answers.push(await free.client.get('/v1/account', { headers: { 'if-none-match': etag } }));
    for (let i = 0; i < 13; i++) answers.push(await free.client.get('/v1/store/orders/999999', { headers: { 'if-none-match': '*' } }));
    for (let i = 0; i < 13; i++) answers.push(await free.client.get('/v1/account', { headers: { 'if-none-match': '"stale"' } }));
    assert.deepEqual(counts(answers), { 429: 39 });
    // Refusals count toward a ban as they would without the header (BAN_THRESHOLD 10).
    assert.equal(answers.at(-1)!.body.code, 'API_KEY_BANNED');
    assert.ok(answers.at(-1)!.headers.get('retry-after'));
    // Banned, it is refused before the answer is made: its conditional requests read nothing.
    const sql = recordSql(t.app);
    sql.start();
    for (const path of ['/v1/account', '/v1/store/orders/999999', '/v1/pets?limit=100'])
      assert.equal((await free.client.get(path, { headers: { 'if-none-match': '*' } })).body.code, 'API_KEY_BANNED');
    // (The key's own lookup, when its 1 s cache entry lapses meanwhile, is the authentication's, not the answer's.)
    assert.deepEqual(
      sql.stop().filter((statement) => !/\bfrom api_keys k join accounts\b/.test(statement)),
      [],
    );
  });

  it('when a banned key asks for its webhook with the matching tag, then it is 429 API_KEY_BANNED, not 304', async () => {
    const hooks = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', BAN_THRESHOLD: '1' } });
    try {
      const buyer = await createAccount(hooks, { name: 'Hooked', plan: 'free' });
      const created = await buyer.client.post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['order.placed'] });
      assert.equal(created.status, 201, created.text);
      const first = await buyer.client.get(`/v1/webhooks/${created.body.id}`);
      const etag = first.headers.get('etag')!;
      assert.equal((await buyer.client.get(`/v1/webhooks/${created.body.id}`, { headers: { 'if-none-match': etag } })).status, 304);
      await exhaust(buyer.client);
      // BAN_THRESHOLD 1: the second refusal bans the key.
      assert.equal((await buyer.client.get('/v1/account')).body.code, 'RATE_LIMITED');
      assert.equal((await buyer.client.get('/v1/account')).body.code, 'API_KEY_BANNED');
      const res = await buyer.client.get(`/v1/webhooks/${created.body.id}`, { headers: { 'if-none-match': etag } });
      assert.equal(res.status, 429);
      assert.equal(res.body.code, 'API_KEY_BANNED');
    } finally {
      await hooks.close();
    }
  });

  it('when a conditional GET is answered (304, 200 or 404), then the request is guarded once: one charge at the limiter', async () => {
    const charges: number[] = [];
    const gate = t.app.gate;
    const charge = gate.charge.bind(gate);
    gate.charge = (actor, cost, options) => {
      charges.push(cost);
      return charge(actor, cost, options);
    };
    try {
      const first = await t.admin.get(`/v1/pets?ids=${petId}`);
      charges.length = 0;
      for (const [path, tag, status] of [
        [`/v1/pets?ids=${petId}`, first.headers.get('etag')!, 304],
        [`/v1/pets?ids=${petId}`, '"stale"', 200],
        ['/v1/account', '"stale"', 200],
        ['/v1/pets/999999', '*', 404],
      ] as const) {
        const before = charges.length;
        assert.equal((await t.admin.get(path, { headers: { 'if-none-match': tag } })).status, status);
        assert.equal(charges.length - before, 1, `${path} with ${tag}`);
      }
    } finally {
      gate.charge = charge;
    }
  });
});

function counts(responses: TestResponse[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const r of responses) out[r.status] = (out[r.status] ?? 0) + 1;
  return out;
}

/** Spends what is left of a key's minute window. */
async function exhaust(client: Client): Promise<void> {
  const remaining = Number((await client.get('/v1/account')).headers.get('x-ratelimit-remaining'));
  for (let i = 0; i < remaining; i++) assert.equal((await client.get('/v1/account')).status, 200);
}
