/**
 * The outbox and the event feed (REST `GET /v1/events`, GraphQL `events`): every change writes its
 * event in its own transaction, a refused change writes none, and each account sees only what it may.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { assertError, walk } from '../rest/support.js';
import { assertGraphQLError, dataOf, gql } from '../graphql/support.js';
import { EventsService } from '../../src/domain/events.service.js';

const EVENT_FIELDS = `id databaseId type createdAt data {
  __typename
  ... on Order { id petId quantity shipDate complete }
  ... on InventoryItem { stockOf: petId quantity status }
  ... on Pet { id name categoryId status }
  ... on Category { id name description }
}`;

describe('events: the outbox and the event feed', () => {
  let t: TestApp;
  let alice: Client;
  let bob: Client;
  let catId: number;
  let petId: number;
  let aliceOrder: any;
  let bobOrder: any;

  async function customer(name: string) {
    const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan: 'pro' });
    assert.equal(res.status, 201, res.text);
    return { client: new Client(t.url, res.body.apiKey.key), id: res.body.id as number };
  }

  before(async () => {
    t = await startApp();
    alice = (await customer('Alice')).client;
    bob = (await customer('Bob')).client;
    catId = (await t.admin.post('/v1/categories', { name: 'Ferrets' })).body.id;
    petId = (await t.admin.post('/v1/pets', { name: 'Fizz', categoryId: catId })).body.id;
    assert.equal((await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 3 })).status, 200);
    aliceOrder = (await alice.post('/v1/store/orders', { petId, quantity: 1 })).body;
    bobOrder = (await bob.post('/v1/store/orders', { petId, quantity: 2 })).body;
    assert.equal(
      (await t.admin.patch(`/v1/store/orders/${aliceOrder.id}`, { complete: true, shipDate: '2030-01-01T00:00:00.000Z' })).status,
      200,
    );
    assert.equal((await bob.delete(`/v1/store/orders/${bobOrder.id}`)).status, 204);
  });
  after(() => t.close());

  it('when staff reads the feed, then every change appears once, in id order, with the resource as REST shows it', async () => {
    const { items } = await walk(t.admin, '/v1/events?limit=3');
    assert.deepEqual(
      items.map((e) => e.type),
      [
        'category.created',
        'pet.created',
        'inventory.changed',
        'order.placed',
        'inventory.changed',
        'order.placed',
        'inventory.changed',
        'order.completed',
        'order.cancelled',
        'inventory.changed',
      ],
    );
    const ids = items.map((e) => e.id);
    assert.deepEqual(
      ids,
      [...ids].sort((x, y) => x - y),
    );
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual(items[0].data, (await t.admin.get(`/v1/categories/${catId}`)).body);
    assert.deepEqual(items[3].data, aliceOrder);
    assert.deepEqual(items[7].data, (await t.admin.get(`/v1/store/orders/${aliceOrder.id}`)).body);
    assert.deepEqual(items[8].data, bobOrder, 'a cancelled order: its last state');
    assert.deepEqual(items.at(-1).data, (await t.admin.get(`/v1/store/inventory/${petId}`)).body);
    for (const e of items) assert.ok(!Number.isNaN(Date.parse(e.createdAt)));
  });

  it("when a customer reads the feed, then it sees catalogue and inventory events and its own orders' events, never another customer's", async () => {
    const { items } = await walk(bob, '/v1/events');
    const orderEvents = items.filter((e) => e.type.startsWith('order.'));
    assert.deepEqual(
      orderEvents.map((e) => [e.type, e.data.id]),
      [
        ['order.placed', bobOrder.id],
        ['order.cancelled', bobOrder.id],
      ],
    );
    assert.equal(items.filter((e) => e.type === 'inventory.changed').length, 4);
    assert.ok(items.some((e) => e.type === 'pet.created'));
    const mine = (await walk(alice, '/v1/events?types=order.*')).items;
    assert.deepEqual(
      mine.map((e) => [e.type, e.data.id]),
      [
        ['order.placed', aliceOrder.id],
        ['order.completed', aliceOrder.id],
      ],
    );
  });

  it('when the feed is filtered by types and resumed after an id, then only later events of those types come back', async () => {
    const all = (await walk(t.admin, '/v1/events?limit=100')).items;
    const third = all[2].id;
    const res = await t.admin.get(`/v1/events?after=${third}&types=order.placed,category.*`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.map((e: any) => e.type),
      ['order.placed', 'order.placed'],
    );
    assert.ok(res.body.every((e: any) => e.id > third));
    const page = await t.admin.get('/v1/events?limit=2&types=inventory.changed');
    assert.match(page.headers.get('link') ?? '', /<\/v1\/events\?limit=2&types=inventory.changed&after=\d+>; rel="next"/);
  });

  it('when types or after are invalid, then it is VALIDATION_FAILED (400)', async () => {
    assertError(await t.admin.get('/v1/events?types=order.shipped'), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.get('/v1/events?types=*'), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.get('/v1/events?after=-1'), 400, 'VALIDATION_FAILED');
    assertError(await t.admin.get('/v1/events?after=abc'), 400, 'VALIDATION_FAILED');
    assertError(await t.anonymous.get('/v1/events'), 401, 'UNAUTHENTICATED');
  });

  it('when a change is refused, then no event is written for it', async () => {
    const before = (await walk(t.admin, '/v1/events?limit=100')).items.length;
    assertError(await alice.post('/v1/store/orders', { petId, quantity: 50 }), 409, 'INSUFFICIENT_STOCK');
    assertError(await t.admin.delete(`/v1/categories/${catId}`), 409, 'CATEGORY_IN_USE');
    assertError(await t.admin.post('/v1/categories', { name: 'ferrets' }), 409, 'NAME_TAKEN');
    assertError(await t.admin.put(`/v1/pets/${petId}`, { name: 'Fizz', categoryId: 999_999 }), 400, 'VALIDATION_FAILED');
    assert.equal((await walk(t.admin, '/v1/events?limit=100')).items.length, before);
  });

  it('when orders race for the last units, then there is exactly one order.placed event per order that was placed', async () => {
    const pet = (await t.admin.post('/v1/pets', { name: 'Racer', categoryId: catId })).body;
    await t.admin.put(`/v1/store/inventory/${pet.id}`, { quantity: 5 });
    const after = (await walk(t.admin, '/v1/events?limit=100')).items.at(-1).id;
    const results = await Promise.all(Array.from({ length: 12 }, () => bob.post('/v1/store/orders', { petId: pet.id, quantity: 1 })));
    const placed = results
      .filter((r) => r.status === 201)
      .map((r) => r.body.id)
      .sort((x, y) => x - y);
    assert.equal(placed.length, 5);
    const events = (await walk(t.admin, `/v1/events?after=${after}&types=order.placed&limit=100`)).items;
    assert.deepEqual(
      events.map((e) => e.data.id).sort((x, y) => x - y),
      placed,
    );
  });

  it('when events are older than 30 days, then the purge drops them and the feed no longer lists them', async () => {
    const em = t.app.orm.em.fork();
    await em.execute(`update events set created_at = ? where id = (select min(id) from events)`, [
      new Date(Date.now() - 31 * 24 * 3600 * 1000),
    ]);
    const oldest = (await t.admin.get('/v1/events?limit=1')).body[0].id;
    assert.equal(await new EventsService(em).purgeExpired(), 1);
    assert.ok((await t.admin.get('/v1/events?limit=1')).body[0].id > oldest);
  });

  it('when the GraphQL feed is read, then it matches REST for each account, with each resource as its GraphQL type', async () => {
    for (const who of [t.admin, alice, bob]) {
      const rest = (await walk(who, '/v1/events?limit=100')).items;
      const data = dataOf(await gql(who, `{ events(first: 100) { edges { cursor node { ${EVENT_FIELDS} } } pageInfo { hasNextPage } } }`));
      const nodes = data.events.edges.map((e: any) => e.node);
      assert.deepEqual(
        nodes.map((n: any) => n.databaseId),
        rest.map((e) => e.id),
      );
      assert.deepEqual(
        data.events.edges.map((e: any) => e.cursor),
        rest.map((e) => String(e.id)),
      );
      assert.deepEqual(
        nodes.map((n: any) => n.type),
        rest.map((e) => e.type),
      );
    }
    const data = dataOf(await gql(alice, `{ events(types: ["order.completed"]) { edges { node { ${EVENT_FIELDS} } } } }`));
    assert.deepEqual(data.events.edges[0].node.data, {
      __typename: 'Order',
      id: globalId('Order', aliceOrder.id),
      petId: globalId('Pet', petId),
      quantity: 1,
      shipDate: '2030-01-01T00:00:00.000Z',
      complete: true,
    });
    const page = dataOf(await gql(bob, '{ events(first: 1) { edges { cursor } pageInfo { hasNextPage endCursor } } }'));
    const next = dataOf(
      await gql(bob, 'query($after: String) { events(first: 1, after: $after) { edges { cursor } } }', {
        after: page.events.pageInfo.endCursor,
      }),
    );
    assert.ok(Number(next.events.edges[0].cursor) > Number(page.events.pageInfo.endCursor));
    // An event's Event.id (what a subscription pushes) continues the feed as its cursor does.
    const byId = dataOf(await gql(bob, '{ events(first: 2) { edges { cursor node { id } } } }'));
    const [first, second] = byId.events.edges;
    const after = dataOf(
      await gql(bob, 'query($after: String) { events(first: 1, after: $after) { edges { cursor } } }', { after: first.node.id }),
    );
    assert.deepEqual(after.events.edges, [{ cursor: second.cursor }]);
    // The cursor "0" is the feed's start, as REST's `after=0`.
    const fromStart = dataOf(await gql(bob, '{ events(first: 2, after: "0") { edges { cursor node { id } } } }'));
    assert.deepEqual(fromStart.events.edges, byId.events.edges);
    assertGraphQLError(await gql(bob, '{ events(after: "not-an-event") { edges { cursor } } }'), 'VALIDATION_FAILED', 400);
    assertGraphQLError(await gql(bob, `{ events(after: "${globalId('Pet', petId)}") { edges { cursor } } }`), 'VALIDATION_FAILED', 400);
    assertGraphQLError(await gql(bob, '{ events(types: ["nope"]) { edges { cursor } } }'), 'VALIDATION_FAILED', 400);
  });

  it("when a deleted pet's category is deleted after it, then its events still navigate to the category, as it was when deleted, and node(id:) of it is null", async () => {
    const category = (await t.admin.post('/v1/categories', { name: 'Axolotls', description: 'Aquatic' })).body;
    const pet = (await t.admin.post('/v1/pets', { name: 'Axel', categoryId: category.id })).body;
    assert.equal((await t.admin.delete(`/v1/pets/${pet.id}`)).status, 204);
    assert.equal((await t.admin.put(`/v1/categories/${category.id}`, { name: 'Axolotls (old)', description: 'Aquatic' })).status, 200);
    assert.equal((await t.admin.delete(`/v1/categories/${category.id}`)).status, 204);
    const query = `{ events(first: 100, types: ["pet.*"]) { edges { node { type data { ... on Pet { databaseId name category { id name description } } } } } } }`;
    for (const who of [t.admin, alice]) {
      const data = dataOf(await gql(who, query));
      const axel = data.events.edges.map((e: any) => e.node).filter((n: any) => n.data.databaseId === pet.id);
      assert.deepEqual(
        axel.map((n: any) => n.type),
        ['pet.created', 'pet.deleted'],
      );
      for (const n of axel)
        assert.deepEqual(n.data.category, { id: globalId('Category', category.id), name: 'Axolotls (old)', description: 'Aquatic' });
    }
    assert.equal(
      dataOf(await gql(alice, '{ node(id: $id) { id } }'.replace('$id', JSON.stringify(globalId('Category', category.id))))).node,
      null,
    );
    // REST reads live categories only: the last state is for navigating from a pet.
    assert.equal((await alice.get(`/v1/categories/${category.id}`)).status, 404);
  });
});

describe('events: the 30-day purge', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when some events are past 30 days, then exactly those go, and when all are, then the newest stays with the store version', async () => {
    const catId = (await t.admin.post('/v1/categories', { name: 'Purged' })).body.id;
    for (const name of ['A', 'B', 'C']) assert.equal((await t.admin.post('/v1/pets', { name, categoryId: catId })).status, 201);
    const before = (await walk(t.admin, '/v1/events?limit=100')).items;
    assert.ok(before.length >= 4);
    const em = t.app.orm.em.fork();
    const old = new Date(Date.now() - 31 * 24 * 3600 * 1000);
    // The three oldest events are past the period; the rest are within it.
    await em.execute('update events set created_at = ? where id <= ?', [old, before[2].id]);
    assert.equal(await new EventsService(em).purgeExpired(), 3);
    assert.deepEqual(
      (await walk(t.admin, '/v1/events?limit=100')).items.map((e) => e.id),
      before.slice(3).map((e) => e.id),
    );

    const tag = (await t.admin.get('/v1/pets')).headers.get('etag');
    assert.ok(tag);
    // Seen from 31 days on, every event is past the period: all go but the newest (the store's version).
    assert.equal(
      await new EventsService(t.app.orm.em.fork()).purgeExpired(new Date(Date.now() + 31 * 24 * 3600 * 1000)),
      before.length - 4,
    );
    assert.deepEqual(
      (await walk(t.admin, '/v1/events?limit=100')).items.map((e) => e.id),
      [before.at(-1).id],
    );
    assert.equal((await t.admin.get('/v1/pets')).headers.get('etag'), tag);
  });

  it('when a category was deleted more than 31 days ago, then the purge drops what it kept of it, and keeps a younger one', async () => {
    const deleted = async (name: string) => {
      const id = (await t.admin.post('/v1/categories', { name })).body.id;
      assert.equal((await t.admin.delete(`/v1/categories/${id}`)).status, 204);
      return id;
    };
    const [old, young] = [await deleted('Gone long ago'), await deleted('Gone a month ago')];
    const em = t.app.orm.em.fork();
    const day = 24 * 3600 * 1000;
    await em.execute('update deleted_categories set deleted_at = ? where id = ?', [new Date(Date.now() - 32 * day), old]);
    await em.execute('update deleted_categories set deleted_at = ? where id = ?', [new Date(Date.now() - 30.5 * day), young]);
    await new EventsService(em).purgeExpired();
    const kept = await em.execute<Array<{ id: number | string }>>('select id from deleted_categories where id in (?, ?)', [old, young]);
    assert.deepEqual(
      kept.map((row) => Number(row.id)),
      [young],
    );
  });
});
