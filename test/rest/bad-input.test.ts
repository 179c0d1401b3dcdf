import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { createAccount, createPet, startApp, type Client, type TestApp, type TestResponse } from '../helpers/app.js';
import { assertMatchesOpenApi } from '../helpers/openapi-validator.js';
import { assertError, snapshot } from './support.js';

type Send = () => Promise<TestResponse>;

/**
 * Bad inputs (docs/ERRORS.md): each gets its documented code, and none changes anything
 * (a snapshot of everything staff can see is the same before and after).
 */
describe('REST bad inputs: documented code, nothing changed', () => {
  let t: TestApp;
  let customer: Client;
  let petId: number;
  let categoryId: number;
  let orderId: number;
  let accountId: number;
  before(async () => {
    t = await startApp();
    const acct = await createAccount(t);
    customer = acct.client;
    accountId = acct.accountId;
    ({ petId, categoryId } = await createPet(t, { stock: 5 }));
    orderId = (await customer.post('/v1/store/orders', { petId, quantity: 1 })).body.id;
  });
  after(() => t.close());

  /** Sends every case, asserting its status and code, and that the store is unchanged afterwards. */
  async function expectRefusedAndUnchanged(cases: Array<[string, Send]>, status: number, code: string) {
    const before = await snapshot(t);
    for (const [label, send] of cases) {
      const res = await send();
      try {
        assertError(res, status, code);
      } catch (error) {
        (error as Error).message = `${label}: ${(error as Error).message}`;
        throw error;
      }
    }
    assert.deepEqual(await snapshot(t), before);
  }

  const json = (client: Client, method: string, path: string, rawBody: string, contentType = 'application/json') =>
    client.request(method, path, { rawBody, headers: { 'content-type': contentType } });

  it('when a body property has the wrong type, then it is 400 VALIDATION_FAILED', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['pet name number', () => a.post('/v1/pets', { name: 5, categoryId })],
        ['pet categoryId string', () => a.post('/v1/pets', { name: 'Rex', categoryId: String(categoryId) })],
        ['pet status unknown', () => a.post('/v1/pets', { name: 'Rex', categoryId, status: 'lost' })],
        ['pet replace categoryId float', () => a.put(`/v1/pets/${petId}`, { name: 'Rex', categoryId: 1.5 })],
        ['category name object', () => a.post('/v1/categories', { name: { first: 'Dogs' } })],
        ['category description number', () => a.put(`/v1/categories/${categoryId}`, { name: 'X', description: 7 })],
        ['order petId string', () => customer.post('/v1/store/orders', { petId: String(petId), quantity: 1 })],
        ['order quantity string', () => customer.post('/v1/store/orders', { petId, quantity: '1' })],
        ['order quantity float', () => customer.post('/v1/store/orders', { petId, quantity: 1.5 })],
        ['order shipDate not a date', () => customer.post('/v1/store/orders', { petId, quantity: 1, shipDate: 'tomorrow' })],
        ['order shipDate impossible', () => customer.post('/v1/store/orders', { petId, quantity: 1, shipDate: '2026-02-30T00:00:00Z' })],
        ['complete as string', () => a.patch(`/v1/store/orders/${orderId}`, { complete: 'true' })],
        ['complete false', () => a.patch(`/v1/store/orders/${orderId}`, { complete: false })],
        ['inventory string', () => a.put(`/v1/store/inventory/${petId}`, { quantity: '5' })],
        ['account plan unknown', () => a.post('/v1/accounts', { name: 'X', role: 'customer', plan: 'platinum' })],
        ['account role unknown', () => a.patch(`/v1/accounts/${accountId}`, { role: 'admin' })],
        [
          'account limits string',
          () => a.patch(`/v1/accounts/${accountId}`, { plan: 'enterprise', limits: { perMinute: '5', perDay: 5 } }),
        ],
        ['null name', () => a.post('/v1/categories', { name: null })],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when a required property is missing, then it is 400 VALIDATION_FAILED naming it', async () => {
    const a = t.admin;
    const res = await a.post('/v1/pets', { name: 'Rex' });
    assertError(res, 400, 'VALIDATION_FAILED');
    assert.ok(
      res.body.details.some((d: { path: string }) => d.path.includes('categoryId')),
      res.text,
    );
    await expectRefusedAndUnchanged(
      [
        ['pet without name', () => a.post('/v1/pets', { categoryId })],
        ['pet replace without categoryId', () => a.put(`/v1/pets/${petId}`, { name: 'Rex' })],
        ['category without name', () => a.post('/v1/categories', { description: 'x' })],
        ['order without quantity', () => customer.post('/v1/store/orders', { petId })],
        ['order without petId', () => customer.post('/v1/store/orders', { quantity: 1 })],
        ['completion without complete', () => a.patch(`/v1/store/orders/${orderId}`, { shipDate: '2026-12-01T00:00:00Z' })],
        ['inventory without quantity', () => a.put(`/v1/store/inventory/${petId}`, {})],
        ['account without plan', () => a.post('/v1/accounts', { name: 'X', role: 'customer' })],
        ['empty account update', () => a.patch(`/v1/accounts/${accountId}`, {})],
        [
          'limits without perDay',
          () => a.post('/v1/accounts', { name: 'X', role: 'customer', plan: 'enterprise', limits: { perMinute: 5 } }),
        ],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when a body has an unknown property, then it is 400 VALIDATION_FAILED naming it', async () => {
    const a = t.admin;
    const res = await a.post('/v1/pets', { name: 'Rex', categoryId, colour: 'brown' });
    assertError(res, 400, 'VALIDATION_FAILED');
    assert.ok(
      res.body.details.some((d: { path: string }) => d.path.includes('colour')),
      res.text,
    );
    await expectRefusedAndUnchanged(
      [
        ['pet with id', () => a.post('/v1/pets', { id: 999, name: 'Rex', categoryId })],
        ['pet replace with tags', () => a.put(`/v1/pets/${petId}`, { name: 'Rex', categoryId, tags: [] })],
        ['category with id', () => a.post('/v1/categories', { id: 5, name: 'Sneaky' })],
        ['order with complete', () => customer.post('/v1/store/orders', { petId, quantity: 1, complete: true })],
        ['order with accountId', () => customer.post('/v1/store/orders', { petId, quantity: 1, accountId: 1 })],
        ['completion with quantity', () => a.patch(`/v1/store/orders/${orderId}`, { complete: true, quantity: 50 })],
        ['inventory with status', () => a.put(`/v1/store/inventory/${petId}`, { quantity: 3, status: 'sold' })],
        ['account with apiKey', () => a.post('/v1/accounts', { name: 'X', role: 'customer', plan: 'free', apiKey: 'psk_mine' })],
        [
          'limits with extra',
          () => a.post('/v1/accounts', { name: 'X', role: 'customer', plan: 'enterprise', limits: { perMinute: 5, perDay: 5, burst: 1 } }),
        ],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when a value is out of its bounds, then it is 400 VALIDATION_FAILED', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['empty name', () => a.post('/v1/pets', { name: '', categoryId })],
        ['blank name', () => a.post('/v1/pets', { name: '   ', categoryId })],
        ['name of 101', () => a.post('/v1/pets', { name: 'x'.repeat(101), categoryId })],
        ['blank category name', () => a.put(`/v1/categories/${categoryId}`, { name: '  \t ' })],
        ['description of 1001', () => a.post('/v1/categories', { name: 'Long', description: 'x'.repeat(1001) })],
        ['quantity 0', () => customer.post('/v1/store/orders', { petId, quantity: 0 })],
        ['quantity 101', () => customer.post('/v1/store/orders', { petId, quantity: 101 })],
        ['negative quantity', () => customer.post('/v1/store/orders', { petId, quantity: -1 })],
        ['stock -1', () => a.put(`/v1/store/inventory/${petId}`, { quantity: -1 })],
        ['stock 1000001', () => a.put(`/v1/store/inventory/${petId}`, { quantity: 1_000_001 })],
        [
          'limits 0',
          () => a.post('/v1/accounts', { name: 'X', role: 'customer', plan: 'enterprise', limits: { perMinute: 0, perDay: 5 } }),
        ],
        ['categoryId 0', () => a.post('/v1/pets', { name: 'Rex', categoryId: 0 })],
        ['categoryId beyond int range', () => a.post('/v1/pets', { name: 'Rex', categoryId: 9007199254740992 })],
        ['petId 1e20', () => customer.post('/v1/store/orders', { petId: 1e20, quantity: 1 })],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when a text contains a NUL character (which no database column can store), then it is 400, never 500', async () => {
    const a = t.admin;
    const nul = (value: unknown) => JSON.stringify(value);
    await expectRefusedAndUnchanged(
      [
        ['pet name', () => json(a, 'POST', '/v1/pets', nul({ name: 'Re\u0000x', categoryId }))],
        ['pet rename', () => json(a, 'PUT', `/v1/pets/${petId}`, nul({ name: '\u0000', categoryId }))],
        ['category name', () => json(a, 'POST', '/v1/categories', nul({ name: 'Dogs\u0000' }))],
        ['category description', () => json(a, 'PUT', `/v1/categories/${categoryId}`, nul({ name: 'Dogs', description: 'a\u0000b' }))],
        ['account name', () => json(a, 'POST', '/v1/accounts', nul({ name: 'Ev\u0000l', role: 'customer', plan: 'free' }))],
        ['account rename', () => json(a, 'PATCH', `/v1/accounts/${accountId}`, nul({ name: 'Ev\u0000l' }))],
        ['name filter', () => a.get('/v1/pets?name=%00')],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when a body refers to a categoryId or petId that does not exist, then it is 400 VALIDATION_FAILED (not 404)', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['create pet in missing category', () => a.post('/v1/pets', { name: 'Rex', categoryId: 987654 })],
        ['create pet in largest id', () => a.post('/v1/pets', { name: 'Rex', categoryId: 9007199254740991 })],
        ['move pet to missing category', () => a.put(`/v1/pets/${petId}`, { name: 'Rex', categoryId: 987654 })],
        ['order missing pet', () => customer.post('/v1/store/orders', { petId: 987654, quantity: 1 })],
      ],
      400,
      'VALIDATION_FAILED',
    );
    const res = await a.post('/v1/pets', { name: 'Rex', categoryId: 987654 });
    assert.deepEqual(res.body.details, [{ path: 'categoryId', message: 'no such category' }]);
  });

  it('when several query parameters are repeated, then the 400 names each of them once, in the order they repeat, at most 20', async () => {
    const res = await t.admin.get('/v1/pets?status=sold&limit=2&limit=3&status=available&limit=4&name=a');
    assertError(res, 400, 'VALIDATION_FAILED');
    assert.deepEqual(res.body.details, [
      { path: 'limit', message: 'must be given once' },
      { path: 'status', message: 'must be given once' },
    ]);
    assert.equal(res.body.message, 'The query parameters limit and status are each given more than once.');
    const one = await t.admin.get('/v1/pets?status=sold&status=available');
    assertError(one, 400, 'VALIDATION_FAILED');
    assert.deepEqual(one.body.details, [{ path: 'status', message: 'must be given once' }]);
    assert.equal(one.body.message, 'The query parameter status is given more than once.');
    // Many repeated names: the answer stays short.
    const names = Array.from({ length: 300 }, (_, i) => `p${i}`);
    const many = await t.admin.get(`/v1/pets?${names.map((n) => `${n}=1&${n}=2`).join('&')}`);
    assertError(many, 400, 'VALIDATION_FAILED');
    assert.deepEqual(
      many.body.details.map((d: { path: string }) => d.path),
      names.slice(0, 20),
    );
    assert.match(many.body.message, /^The query parameters p0, p1, .*, p19 and 280 more are each given more than once\.$/);
  });

  it("when a query parameter is not one the operation takes (misspelt, another case, another list's), then it is ignored, and the next page's link carries only the operation's own", async () => {
    // Events page by `after`: a `cursor` there is another list's parameter.
    const res = await t.admin.get('/v1/events?limit=1&limt=5&LIMIT=7&cursor=aWQ6Mg');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.length, 1);
    const next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
    assert.ok(next, `a next page (${res.headers.get('link')})`);
    assert.deepEqual([...new URL(next, t.url).searchParams.keys()].sort(), ['after', 'limit']);
  });

  it('when a documented header is invalid (an Idempotency-Key with a space, or too long), then details name it as the document does', async () => {
    const orders = (await customer.get('/v1/store/orders')).body.length;
    for (const key of ['a b', 'k'.repeat(256)]) {
      const res = await customer.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': key } });
      assertError(res, 400, 'VALIDATION_FAILED');
      assert.deepEqual(
        res.body.details.map((d: { path: string }) => d.path),
        ['Idempotency-Key'],
      );
    }
    assert.equal((await customer.get('/v1/store/orders')).body.length, orders, 'no order was placed');
  });

  it('when the body is malformed JSON, or JSON that is not an object, then it is 400 VALIDATION_FAILED', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['truncated', () => json(a, 'POST', '/v1/pets', '{"name": "Rex", ')],
        ['single quotes', () => json(a, 'POST', '/v1/categories', "{'name': 'Dogs'}")],
        ['trailing comma', () => json(customer, 'POST', '/v1/store/orders', `{"petId": ${petId}, "quantity": 1,}`)],
        ['garbage', () => json(a, 'PUT', `/v1/store/inventory/${petId}`, 'quantity=5')],
        ['two documents', () => json(a, 'PATCH', `/v1/accounts/${accountId}`, '{"name":"a"}{"name":"b"}')],
        ['array', () => json(a, 'POST', '/v1/pets', '[]')],
        ['null', () => json(a, 'POST', '/v1/categories', 'null')],
        ['string', () => json(customer, 'POST', '/v1/store/orders', '"order"')],
        ['number', () => json(a, 'PUT', `/v1/store/inventory/${petId}`, '5')],
        ['empty body', () => json(a, 'POST', '/v1/pets', '')],
        ['no body', () => a.request('POST', '/v1/categories')],
        ['body on a body-less operation', () => json(a, 'DELETE', `/v1/pets/${petId}`, '{}')],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when the body is not JSON, then it is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const a = t.admin;
    const body = JSON.stringify({ name: 'Rex', categoryId });
    await expectRefusedAndUnchanged(
      [
        ['text/plain', () => json(a, 'POST', '/v1/pets', body, 'text/plain')],
        ['form', () => json(a, 'POST', '/v1/categories', 'name=Dogs', 'application/x-www-form-urlencoded')],
        ['xml', () => json(customer, 'POST', '/v1/store/orders', `<order petId="${petId}"/>`, 'application/xml')],
        ['no content-type', () => a.request('PUT', `/v1/store/inventory/${petId}`, { rawBody: '{"quantity":9}' })],
      ],
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
  });

  it('when the body is larger than 1 MiB, then it is 413 PAYLOAD_TOO_LARGE, with or without Content-Length', async () => {
    const before = await snapshot(t);
    const big = JSON.stringify({ name: 'Rex', categoryId, pad: 'x'.repeat(1024 * 1024) });
    for (const [path, key] of [
      ['/v1/pets', t.adminKey],
      ['/v1/store/orders', customer.key!],
      ['/v1/categories', t.adminKey],
    ] as const) {
      for (const chunked of [false, true]) {
        const res = await rawPost(`${t.url}${path}`, key, big, chunked);
        assertMatchesOpenApi('POST', path, res.status, res.headers, res.body);
        assertError(res, 413, 'PAYLOAD_TOO_LARGE');
      }
    }
    assert.deepEqual(await snapshot(t), before);
    // Exactly 1 MiB is still accepted.
    for (const chunked of [false, true]) {
      const limit = JSON.stringify({ name: `Exactly one MiB, chunked: ${chunked}` }).padEnd(1024 * 1024, ' ');
      const res = await rawPost(`${t.url}/v1/categories`, t.adminKey, limit, chunked);
      assert.equal(res.status, 201, res.text);
    }
  });

  it('when a path id is not a positive decimal integer in range, then it is 400 VALIDATION_FAILED on every kind of resource', async () => {
    const a = t.admin;
    const bad = ['abc', '1.5', '-1', '0', '1e3', '0x10', '+1', '9007199254740992', '99999999999999999999'];
    const cases: Array<[string, Send]> = [];
    for (const id of bad) {
      cases.push(
        [`GET pet ${id}`, () => a.get(`/v1/pets/${id}`)],
        [`PUT pet ${id}`, () => a.put(`/v1/pets/${id}`, { name: 'Rex', categoryId })],
        [`DELETE pet ${id}`, () => a.delete(`/v1/pets/${id}`)],
        [`GET category ${id}`, () => a.get(`/v1/categories/${id}`)],
        [`DELETE category ${id}`, () => a.delete(`/v1/categories/${id}`)],
        [`GET order ${id}`, () => customer.get(`/v1/store/orders/${id}`)],
        [`PATCH order ${id}`, () => a.patch(`/v1/store/orders/${id}`, { complete: true })],
        [`DELETE order ${id}`, () => customer.delete(`/v1/store/orders/${id}`)],
        [`PUT inventory ${id}`, () => a.put(`/v1/store/inventory/${id}`, { quantity: 1 })],
        [`PATCH account ${id}`, () => a.patch(`/v1/accounts/${id}`, { name: 'X' })],
        [`POST key ${id}`, () => a.post(`/v1/accounts/${id}/api-keys`)],
        [`DELETE key ${id}`, () => a.delete(`/v1/api-keys/${id}`)],
      );
    }
    await expectRefusedAndUnchanged(cases, 400, 'VALIDATION_FAILED');
  });

  it('when a path id is well formed but unknown, then it is 404 NOT_FOUND', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['pet', () => a.get('/v1/pets/9007199254740991')],
        ['category', () => a.put('/v1/categories/424242', { name: 'Nobody' })],
        ['order', () => a.patch('/v1/store/orders/424242', { complete: true })],
        ['inventory', () => customer.get('/v1/store/inventory/424242')],
        ['account', () => a.patch('/v1/accounts/424242', { name: 'Nobody' })],
        ['key', () => a.delete('/v1/api-keys/424242/ban')],
      ],
      404,
      'NOT_FOUND',
    );
  });

  it('when a query parameter is invalid, then it is 400 VALIDATION_FAILED', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['limit 0', () => a.get('/v1/pets?limit=0')],
        ['limit 101', () => a.get('/v1/categories?limit=101')],
        ['limit text', () => a.get('/v1/store/orders?limit=ten')],
        ['limit float', () => a.get('/v1/accounts?limit=2.5')],
        ['limit hex', () => a.get('/v1/store/inventory?limit=0x10')],
        ['limit empty', () => a.get('/v1/pets?limit=')],
        ['cursor garbage', () => a.get('/v1/pets?cursor=%%%')],
        ['cursor not ours', () => a.get(`/v1/categories?cursor=${Buffer.from('{"id":1}').toString('base64url')}`)],
        ['cursor too long', () => a.get(`/v1/store/orders?cursor=${'a'.repeat(201)}`)],
        ['status unknown', () => a.get('/v1/pets?status=lost')],
        ['categoryId text', () => a.get('/v1/pets?categoryId=dogs')],
        ['categoryId 0', () => a.get('/v1/pets?categoryId=0')],
        ['name empty', () => a.get('/v1/pets?name=')],
        ['name too long', () => a.get(`/v1/pets?name=${'x'.repeat(101)}`)],
        ['ids with gap', () => a.get('/v1/pets?ids=1,,2')],
        ['ids with zero', () => a.get('/v1/pets?ids=0')],
        ['ids not numbers', () => a.get('/v1/pets?ids=a,b')],
        ['ids beyond range', () => a.get('/v1/pets?ids=9999999999999999')],
        ['ids more than 100', () => a.get(`/v1/pets?ids=${Array.from({ length: 101 }, (_, i) => i + 1).join(',')}`)],
        ['complete maybe', () => a.get('/v1/store/orders?complete=maybe')],
        ['petId negative', () => customer.get('/v1/store/orders?petId=-3')],
        ['repeated parameter', () => a.get('/v1/pets?status=sold&status=available')],
      ],
      400,
      'VALIDATION_FAILED',
    );
  });

  it('when the route does not exist, then it is 404 NOT_FOUND; when the method does not, 405 METHOD_NOT_ALLOWED with Allow', async () => {
    const a = t.admin;
    await expectRefusedAndUnchanged(
      [
        ['unknown', () => a.get('/v1/dogs')],
        ['too deep', () => a.get(`/v1/pets/${petId}/photos`)],
        ['v2', () => a.get('/v2/pets', { skipContract: true })],
        ['root', () => a.get('/nothing-here', { skipContract: true })],
        ['without key', () => t.anonymous.get('/v1/dogs')],
      ],
      404,
      'NOT_FOUND',
    );
    await expectRefusedAndUnchanged(
      [
        ['PATCH /pets', () => a.patch('/v1/pets', { name: 'Rex' })],
        ['DELETE /pets', () => a.delete('/v1/pets')],
        ['POST /pets/{id}', () => a.post(`/v1/pets/${petId}`, { name: 'Rex', categoryId })],
        ['PUT /store/orders/{id}', () => a.put(`/v1/store/orders/${orderId}`, { complete: true })],
        ['DELETE /store/inventory/{id}', () => a.delete(`/v1/store/inventory/${petId}`)],
        ['POST /openapi.json', () => a.post('/v1/openapi.json', {})],
      ],
      405,
      'METHOD_NOT_ALLOWED',
    );
    const res = await a.delete('/v1/pets');
    assert.deepEqual(res.headers.get('allow')?.split(/,\s*/).sort(), ['GET', 'HEAD', 'POST']);
  });

  it('when a documented path is written in other letter case or with a trailing slash, then it is routed as the documented one', async () => {
    // The router is split by first segment (src/rest/router.ts); @koa/router matches without regard to case.
    const pets = await t.admin.get(`/v1/pets?ids=${petId}`);
    const stock = await t.admin.get(`/v1/store/inventory/${petId}`);
    for (const [path, documented] of [
      [`/v1/PETS?ids=${petId}`, pets],
      [`/v1/Pets/?ids=${petId}`, pets],
      [`/v1/STORE/inventory/${petId}`, stock],
      [`/v1/store/Inventory/${petId}/`, stock],
    ] as const) {
      const res = await t.admin.get(path, { skipContract: true });
      assert.equal(res.status, 200, path);
      assert.deepEqual(res.body, documented.body, path);
    }
    // A 405 is decided by the same matching as routing: any case, the documented methods in Allow.
    const res = await t.admin.delete('/v1/PETS', { skipContract: true });
    assertError(res, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(res.headers.get('allow'), 'GET, HEAD, POST');
    // A `.` in a documented path is a dot, not "any character".
    assertError(await t.admin.post('/v1/openapiXjson', {}, { skipContract: true }), 404, 'NOT_FOUND');
    assertError(await t.admin.post('/v1/openapi.json', {}, { skipContract: true }), 405, 'METHOD_NOT_ALLOWED');
  });

  it('when a GET operation is asked with HEAD, then it answers as the GET would, without a body', async () => {
    // The segment's router gives every GET route HEAD too (src/rest/router.ts runs the route it matches).
    const get = await t.admin.get(`/v1/pets/${petId}`);
    const head = await t.admin.request('HEAD', `/v1/pets/${petId}`, { skipContract: true });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers.get('etag'), get.headers.get('etag'));
    assert.equal(head.headers.get('content-type'), get.headers.get('content-type'));
    assert.ok(head.headers.get('x-ratelimit-limit'));
  });

  it('when a path parameter is percent-encoded, then it is decoded before it is checked', async () => {
    const plain = await t.admin.get(`/v1/pets/${petId}`);
    const encoded = await t.admin.get(`/v1/pets/${[...String(petId)].map((d) => `%3${d}`).join('')}`, { skipContract: true });
    assert.equal(encoded.status, 200);
    assert.deepEqual(encoded.body, plain.body);
    // Encoded text that decodes to something other than a decimal id is still refused, naming the parameter.
    const refused = await t.admin.get('/v1/pets/1%2E0', { skipContract: true });
    assertError(refused, 400, 'VALIDATION_FAILED');
    assert.match(JSON.stringify(refused.body), /petId/);
  });

  it('when the client sends an X-Request-Id, then an error echoes it; a malformed one is replaced', async () => {
    const res = await t.admin.get('/v1/pets/abc', { headers: { 'x-request-id': 'client-trace-42' } });
    assertError(res, 400, 'VALIDATION_FAILED');
    assert.equal(res.body.requestId, 'client-trace-42');
    const odd = await t.admin.get('/v1/pets/abc', { headers: { 'x-request-id': 'has spaces <and> markup' } });
    assertError(odd, 400, 'VALIDATION_FAILED');
    assert.notEqual(odd.body.requestId, 'has spaces <and> markup');
  });
});

/**
 * POSTs a body over a fresh connection (with Content-Length, or chunked) and reads the answer as soon
 * as it comes, even while the body is still being sent; the connection is then dropped, so that a
 * half-sent body never holds up the server's shutdown.
 */
function rawPost(url: string, key: string, body: string, chunked: boolean): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': key };
    if (chunked) headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(Buffer.byteLength(body));
    const req = httpRequest(url, { method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        answered = true;
        req.destroy();
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, text, body: text ? JSON.parse(text) : undefined });
      });
    });
    // A server may stop reading once it has answered; a write error after the answer is expected.
    req.on('error', (error) => {
      if (!answered) setTimeout(() => !answered && reject(error), 1000);
    });
    const chunk = 64 * 1024;
    for (let i = 0; i < body.length; i += chunk) req.write(body.slice(i, i + chunk));
    req.end();
  });
}

/** Variants of a documented example body: every string or every number replaced by something hostile. */
function mutations(example: unknown): string[] {
  if (!example || typeof example !== 'object') return [];
  const map = (value: unknown, onString: (s: string) => unknown, onNumber: (n: number) => unknown): unknown => {
    if (typeof value === 'string') return onString(value);
    if (typeof value === 'number') return onNumber(value);
    if (Array.isArray(value)) return value.map((v) => map(v, onString, onNumber));
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, map(v, onString, onNumber)]));
    return value;
  };
  const same = <T>(v: T) => v;
  return [
    map(example, same, same),
    map(example, () => '\u{1F436}'.repeat(100), same),
    map(example, () => ' \u00A0\u200B ', same),
    map(example, () => "x'); drop table pets; --", same),
    map(example, (s) => `${s}\u0000`, same),
    map(example, same, () => 9007199254740991),
    map(example, same, () => -1),
    map(example, same, () => 0.5),
    map(example, same, (n) => String(n)),
  ].map((v) => JSON.stringify(v));
}

/**
 * A sweep over every operation of the document with hostile path values and bodies: whatever a
 * client sends, the answer is never a 5xx, always the error envelope, and never leaks internals.
 */
describe('REST hostile input sweep: never a 500', () => {
  let t: TestApp;
  let staff: Client;
  before(async () => {
    t = await startApp();
    await createPet(t, { stock: 2 });
    // Over a thousand requests: a staff account whose quota the sweep cannot exhaust.
    staff = (await createAccount(t, { role: 'staff', plan: 'enterprise', limits: { perMinute: 1_000_000, perDay: 100_000_000 } })).client;
  });
  after(() => t.close());

  it('when every operation gets hostile ids and bodies, then no answer is a 5xx and every error is well formed', async () => {
    const doc = (await t.anonymous.get('/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const ids = ['424242', "1'--", '%00', '9'.repeat(40), '%F0%9F%90%B6', '..%2F..%2Fetc'];
    const bodies: Array<string | undefined> = [
      undefined,
      '{}',
      '{"name":{"$gt":""},"categoryId":[1],"petId":{"id":1},"quantity":1e309,"complete":null}',
      `{"name":"${'\\u0000'.repeat(10)}","categoryId":1,"quantity":1,"petId":1}`,
      '{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}',
      '\u0000\u0001',
    ];
    const problems: string[] = [];
    let sent = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const method of ['get', 'put', 'post', 'patch', 'delete']) {
        if (!item[method]) continue;
        for (const id of template.includes('{') ? ids : ['']) {
          const path = `/v1${template.replace(/\{\w+\}/g, id)}`;
          const example = (item[method] as { requestBody?: { content: { 'application/json': { example?: unknown } } } }).requestBody
            ?.content['application/json'].example;
          for (const body of method === 'get' ? [undefined] : [...bodies, ...mutations(example)]) {
            sent++;
            const res = await staff.request(method.toUpperCase(), path, {
              ...(body === undefined ? {} : { rawBody: body, headers: { 'content-type': 'application/json' } }),
              // A request for a path the validator cannot map (e.g. an encoded slash) is still checked below.
              skipContract: true,
            });
            if (res.status >= 500 || res.status === 429)
              problems.push(`${method.toUpperCase()} ${path} ${body ?? ''} → ${res.status} ${res.text.slice(0, 200)}`);
            else if (res.status >= 400) {
              try {
                assertError(res, res.status, res.body?.code);
              } catch (error) {
                problems.push(`${method.toUpperCase()} ${path} → ${(error as Error).message}`);
              }
            }
          }
        }
      }
    }
    assert.ok(sent > 100);
    assert.deepEqual(problems, []);
  });
});
