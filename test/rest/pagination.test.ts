import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { assertError, nextLink, walk } from './support.js';

interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

describe('REST lists: limit, Link rel="next" cursors and filters', () => {
  let t: TestApp;
  let dogs: number;
  let cats: number;
  let created: Pet[];
  before(async () => {
    t = await startApp();
    dogs = (await t.admin.post('/v1/categories', { name: 'Dogs' })).body.id;
    cats = (await t.admin.post('/v1/categories', { name: 'Cats' })).body.id;
    created = [];
    const names = [
      'Rex',
      'REXANNA',
      'Fido',
      'Bella',
      'Max',
      'Tom',
      'Luna',
      'Tigger',
      'Felix',
      'Oscar',
      'Milo',
      'Percy_1',
      'Percy%2',
      'Ärger',
      'ÉMILE',
      'Star*',
      'Who?',
      'Arr[1]',
      'Back\\slash',
      'Ωmega',
    ];
    for (let i = 0; i < 45; i++) {
      const name = `${names[i % names.length]} ${i}`;
      const res = await t.admin.post('/v1/pets', {
        name,
        categoryId: i % 3 === 0 ? cats : dogs,
        status: i % 5 === 0 ? 'sold' : 'available',
      });
      assert.equal(res.status, 201, res.text);
      created.push(res.body);
    }
  });
  after(() => t.close());

  it('when no limit is given, then a page has 20 items and a Link to the next one', async () => {
    const res = await t.admin.get('/v1/pets');
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 20);
    assert.deepEqual(res.body, created.slice(0, 20));
    assert.ok(nextLink(res));
  });

  it('when following rel="next" with any limit, then every pet comes exactly once, in id order, and the last page has no Link', async () => {
    for (const limit of [1, 7, 20, 45, 100]) {
      const { items, pages } = await walk<Pet>(t.admin, `/v1/pets?limit=${limit}`);
      assert.deepEqual(items, created, `limit ${limit}`);
      assert.equal(pages, Math.ceil(created.length / limit), `limit ${limit}: pages`);
    }
    const last = await t.admin.get('/v1/pets?limit=45');
    assert.equal(last.headers.get('link'), null);
  });

  it('when a page is followed, then the next link keeps the limit and filters', async () => {
    const res = await t.admin.get(`/v1/pets?limit=3&categoryId=${dogs}&status=available`);
    const next = nextLink(res)!;
    const params = new URL(next, 'http://x').searchParams;
    assert.equal(params.get('limit'), '3');
    assert.equal(params.get('categoryId'), String(dogs));
    assert.equal(params.get('status'), 'available');
    assert.ok(params.get('cursor'));
  });

  it('when pets are added while a client pages, then the walk still returns each pet once', async () => {
    const first = await t.admin.get('/v1/pets?limit=10');
    const added = await t.admin.post('/v1/pets', { name: 'Latecomer', categoryId: dogs });
    const rest = await walk<Pet>(t.admin, nextLink(first)!);
    const ids = [...first.body, ...rest.items].map((p: Pet) => p.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual(ids, [...created.map((p) => p.id), added.body.id]);
    assert.equal((await t.admin.delete(`/v1/pets/${added.body.id}`)).status, 204);
  });

  it('when filtering by status, categoryId, or both, then exactly the matching pets come back, across pages', async () => {
    const cases: Array<[string, (p: Pet) => boolean]> = [
      ['status=sold', (p) => p.status === 'sold'],
      ['status=available', (p) => p.status === 'available'],
      ['status=pending', (p) => p.status === 'pending'],
      [`categoryId=${cats}`, (p) => p.categoryId === cats],
      [`categoryId=${dogs}&status=sold`, (p) => p.categoryId === dogs && p.status === 'sold'],
      ['categoryId=999999', () => false],
    ];
    for (const [query, match] of cases) {
      const { items } = await walk<Pet>(t.admin, `/v1/pets?limit=4&${query}`);
      assert.deepEqual(items, created.filter(match), query);
    }
  });

  it('when filtering by name, then it is a case-insensitive substring match (beyond ASCII too), and wildcards match themselves', async () => {
    const has = (text: string) => (p: Pet) => p.name.toLowerCase().includes(text.toLowerCase());
    const cases: Array<[string, (p: Pet) => boolean]> = [
      ['Ärger', has('ärger')],
      ['ä', has('ä')],
      ['ÄRG', has('ärg')],
      ['émile', has('émile')],
      ['ωMEGA', has('ωmega')],
      ['*', has('*')],
      ['?', has('?')],
      ['[', has('[')],
      ['r[1]', has('r[1]')],
      ['\\', has('\\')],
      ['k\\S', has('k\\s')],
      ['rex', (p) => p.name.toLowerCase().includes('rex')],
      ['REX', (p) => p.name.toLowerCase().includes('rex')],
      ['xAnN', (p) => p.name.toLowerCase().includes('xann')],
      ['1', (p) => p.name.includes('1')],
      ['%', (p) => p.name.includes('%')],
      ['_', (p) => p.name.includes('_')],
      ['y%2', (p) => p.name.includes('y%2')],
      ['nobody', () => false],
    ];
    for (const [name, match] of cases) {
      const { items } = await walk<Pet>(t.admin, `/v1/pets?limit=5&name=${encodeURIComponent(name)}`);
      const expected = created.filter(match);
      assert.deepEqual(items, expected, `name=${name}`);
    }
    assert.ok(created.filter((p) => p.name.includes('%')).length > 0);
    assert.ok(created.filter((p) => p.name.includes('Ä')).length > 0);
  });

  it('when filtering by ids, then those pets come back in id order, unknown ids are absent, and other filters combine', async () => {
    const pick = [created[30]!, created[2]!, created[17]!];
    const res = await t.admin.get(`/v1/pets?ids=${pick.map((p) => p.id).join(',')},987654`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body,
      [...pick].sort((a, b) => a.id - b.id),
    );
    const paged = await walk<Pet>(t.admin, `/v1/pets?limit=1&ids=${pick.map((p) => p.id).join(',')}`);
    assert.deepEqual(
      paged.items,
      [...pick].sort((a, b) => a.id - b.id),
    );
    const both = await t.admin.get(`/v1/pets?ids=${created[0]!.id},${created[1]!.id}&status=sold`);
    assert.deepEqual(
      both.body,
      [created[0]].filter((p) => p!.status === 'sold'),
    );
    const hundred = await t.admin.get(`/v1/pets?limit=100&ids=${Array.from({ length: 100 }, (_, i) => i + 1).join(',')}`);
    assert.equal(hundred.status, 200);
    assert.deepEqual(
      hundred.body,
      created.filter((p) => p.id <= 100),
    );
  });

  it('when the cursor is tampered with or from nowhere, then it is 400 VALIDATION_FAILED', async () => {
    const res = await t.admin.get('/v1/pets?limit=2');
    const cursor = new URL(nextLink(res)!, 'http://x').searchParams.get('cursor')!;
    for (const bad of [`${cursor.slice(0, -1)}!`, 'bm9wZQ', 'x'.repeat(201), Buffer.from('id:abc').toString('base64url')]) {
      assertError(await t.admin.get(`/v1/pets?cursor=${encodeURIComponent(bad)}`), 400, 'VALIDATION_FAILED');
    }
  });

  it('when other lists are walked (categories, inventory, orders, accounts), then each item comes exactly once', async () => {
    const categories = await walk<{ id: number }>(t.admin, '/v1/categories?limit=1');
    assert.deepEqual(
      categories.items.map((c) => c.id),
      [dogs, cats],
    );
    assert.equal(categories.pages, 2);
    const inventory = await walk<{ petId: number }>(t.admin, '/v1/store/inventory?limit=6');
    assert.deepEqual(
      inventory.items.map((i) => i.petId),
      created.map((p) => p.id),
    );
    const pet = created.find((p) => p.status === 'available')!;
    await t.admin.put(`/v1/store/inventory/${pet.id}`, { quantity: 10 });
    const orderIds = [];
    for (let i = 0; i < 5; i++) orderIds.push((await t.admin.post('/v1/store/orders', { petId: pet.id, quantity: 1 })).body.id);
    const orders = await walk<{ id: number }>(t.admin, '/v1/store/orders?limit=2');
    assert.deepEqual(
      orders.items.map((o) => o.id),
      orderIds,
    );
    assert.equal(orders.pages, 3);
    for (const id of orderIds) await t.admin.delete(`/v1/store/orders/${id}`);
    for (let i = 0; i < 3; i++) await t.admin.post('/v1/accounts', { name: `Account ${i}`, role: 'customer', plan: 'free' });
    const accounts = await walk<{ id: number }>(t.admin, '/v1/accounts?limit=2');
    assert.equal(accounts.items.length, 4);
    assert.equal(new Set(accounts.items.map((a) => a.id)).size, 4);
  });
});
