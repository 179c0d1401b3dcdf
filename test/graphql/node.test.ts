import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAccount, startApp, type TestApp } from '../helpers/app.js';
import { assertGraphQLError, dataOf, gql } from './support.js';
import { decodeEventId } from '../../src/graphql/global-id.js';

const NODE = `query Node($id: ID!) {
  node(id: $id) { __typename id ... on Pet { databaseId name } ... on Category { databaseId name } ... on Order { databaseId quantity } }
}`;

describe('GraphQL global ids: Node, node(id:), nodes(ids:) (issue 49)', () => {
  let t: TestApp;
  let customer: Awaited<ReturnType<typeof createAccount>>;
  let other: Awaited<ReturnType<typeof createAccount>>;
  let ids: { category: string; pet: string; order: string; otherOrder: string };
  let databaseIds: { category: number; pet: number; order: number };

  before(async () => {
    t = await startApp();
    customer = await createAccount(t, { name: 'Node customer' });
    other = await createAccount(t, { name: 'Other customer' });
    const created = dataOf(
      await gql(t.admin, 'mutation { createCategory(input: { name: "Fish" }) { id databaseId name } }'),
    ).createCategory;
    const pet = dataOf(
      await gql(t.admin, 'mutation P($c: ID!) { createPet(input: { name: "Nemo", categoryId: $c }) { id databaseId categoryId } }', {
        c: created.id,
      }),
    ).createPet;
    await gql(t.admin, 'mutation S($p: ID!) { setInventory(petId: $p, quantity: 10) { quantity } }', { p: pet.id });
    const place = 'mutation O($p: ID!) { placeOrder(input: { petId: $p, quantity: 1 }) { id databaseId petId } }';
    const order = dataOf(await gql(customer.client, place, { p: pet.id })).placeOrder;
    const otherOrder = dataOf(await gql(other.client, place, { p: pet.id })).placeOrder;
    assert.equal(pet.categoryId, created.id, 'Pet.categoryId is the category’s global id');
    assert.equal(order.petId, pet.id, 'Order.petId is the pet’s global id');
    ids = { category: created.id, pet: pet.id, order: order.id, otherOrder: otherOrder.id };
    databaseIds = { category: created.databaseId, pet: pet.databaseId, order: order.databaseId };
  });
  after(() => t.close());

  it('when a pet, a category and an order have the same database id, then their GraphQL ids differ and databaseId is the REST id', async () => {
    assert.deepEqual([databaseIds.category, databaseIds.pet, databaseIds.order], [1, 1, 1], 'fresh database: all three are 1');
    assert.equal(new Set([ids.category, ids.pet, ids.order]).size, 3);
    const rest = await t.admin.get(`/v1/pets/${databaseIds.pet}`);
    assert.equal(rest.body.name, 'Nemo');
    for (const id of Object.values(ids)) assert.match(id, /^[A-Za-z0-9_-]+$/, 'opaque, URL-safe');
  });

  it('when node(id:) is asked for each id, then it returns that object with its own type', async () => {
    const pet = dataOf(await gql(customer.client, NODE, { id: ids.pet })).node;
    assert.deepEqual(pet, { __typename: 'Pet', id: ids.pet, databaseId: 1, name: 'Nemo' });
    const category = dataOf(await gql(customer.client, NODE, { id: ids.category })).node;
    assert.deepEqual(category, { __typename: 'Category', id: ids.category, databaseId: 1, name: 'Fish' });
    const order = dataOf(await gql(customer.client, NODE, { id: ids.order })).node;
    assert.deepEqual(order, { __typename: 'Order', id: ids.order, databaseId: 1, quantity: 1 });
    const stock = dataOf(await gql(customer.client, `query { pet(id: "${ids.pet}") { inventory { id } } }`)).pet.inventory;
    const item = dataOf(
      await gql(customer.client, 'query N($id: ID!) { node(id: $id) { __typename ... on InventoryItem { petId quantity } } }', {
        id: stock.id,
      }),
    ).node;
    assert.deepEqual(item, { __typename: 'InventoryItem', petId: ids.pet, quantity: 8 });
  });

  it("when a customer asks node(id:) for another customer's order, then the answer is null without an error, as for an unknown id", async () => {
    const res = await gql(customer.client, NODE, { id: ids.otherOrder });
    assert.deepEqual(res.body, { data: { node: null }, extensions: { cost: { requested: 1, charged: 1 } } });
    const typed = await gql(customer.client, 'query O($id: ID!) { order(id: $id) { id } }', { id: ids.otherOrder });
    assertGraphQLError(typed, 'NOT_FOUND', 404);
    const staff = dataOf(await gql(t.admin, NODE, { id: ids.otherOrder })).node;
    assert.equal(staff.__typename, 'Order');
  });

  it('when a customer asks node(id:) for accounts and keys, then it sees its own and null for the others', async () => {
    const viewer = dataOf(await gql(customer.client, 'query { viewer { id databaseId apiKey { id databaseId } } }')).viewer;
    const q = 'query N($id: ID!) { node(id: $id) { __typename ... on Account { databaseId } ... on ApiKey { databaseId } } }';
    // The viewer's id is its own type's (a normalised cache keeps Viewer and Account apart), and stands for the account.
    assert.deepEqual(dataOf(await gql(customer.client, q, { id: viewer.id })).node, {
      __typename: 'Account',
      databaseId: customer.accountId,
    });
    assert.deepEqual(dataOf(await gql(customer.client, q, { id: viewer.apiKey.id })).node, {
      __typename: 'ApiKey',
      databaseId: customer.keyId,
    });
    const others = dataOf(await gql(other.client, 'query { viewer { id apiKey { id } } }')).viewer;
    assert.equal(dataOf(await gql(customer.client, q, { id: others.id })).node, null);
    assert.equal(dataOf(await gql(customer.client, q, { id: others.apiKey.id })).node, null);
  });

  it('when nodes(ids:) is asked for several ids, then it answers them in order, null where not visible, and costs 1 per id', async () => {
    const res = await gql(customer.client, 'query N($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }', {
      ids: [ids.category, ids.otherOrder, ids.pet, ids.order],
    });
    assert.deepEqual(dataOf(res).nodes, [
      { __typename: 'Category', id: ids.category },
      null,
      { __typename: 'Pet', id: ids.pet },
      { __typename: 'Order', id: ids.order },
    ]);
    assert.deepEqual(res.body.extensions?.cost, { requested: 4, charged: 4 });
    const two = await gql(customer.client, 'query N($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: [ids.pet, ids.category] });
    assert.deepEqual(two.body.extensions?.cost, { requested: 2, charged: 2 }, 'the same document with fewer ids costs less');
    // More ids than a read takes is refused before it runs, and costs 1 as any refused request does, not 1 per id.
    const tooMany = await gql(customer.client, 'query N($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: Array(101).fill(ids.pet) });
    assert.equal(assertGraphQLError(tooMany, 'VALIDATION_FAILED', 400).extensions?.details?.[0]?.path, 'ids');
    // 1 taken from what was left, or from a fresh window if the minute ended in between.
    const left = (res: typeof two) => Number(res.headers.get('x-ratelimit-remaining'));
    const sameWindow = tooMany.headers.get('x-ratelimit-reset') === two.headers.get('x-ratelimit-reset');
    const limit = Number(tooMany.headers.get('x-ratelimit-limit'));
    assert.equal(left(tooMany), sameWindow ? left(two) - 1 : limit - 1, 'the refusal cost more than 1');
  });

  it('when an argument gets an id of another type or a malformed one, then the answer is VALIDATION_FAILED naming the argument', async () => {
    const wrongType = await gql(customer.client, 'query P($id: ID!) { pet(id: $id) { id } }', { id: ids.category });
    const error = assertGraphQLError(wrongType, 'VALIDATION_FAILED', 400);
    assert.match(error.message, /must be the id of a Pet; this one is a Category's/);
    assert.deepEqual(error.extensions?.details, [{ path: 'id', message: 'must be a Pet id' }]);
    for (const bad of [
      '1',
      'UGV0OjE=',
      'UGV0OjA',
      Buffer.from('Pet:01').toString('base64url'),
      Buffer.from('Nope:1').toString('base64url'),
      // Names every JavaScript object has: not types of this API either.
      ...['constructor', 'toString', 'hasOwnProperty'].map((name) => Buffer.from(`${name}:1`).toString('base64url')),
      '',
    ]) {
      const res = await gql(customer.client, NODE, { id: bad });
      const refused = assertGraphQLError(res, 'VALIDATION_FAILED', 400);
      assert.deepEqual(refused.extensions?.details, [{ path: 'id', message: 'must be a global id' }], bad);
    }
    const filter = await gql(customer.client, 'query F($c: ID) { pets(filter: { categoryId: $c }) { edges { node { id } } } }', {
      c: ids.pet,
    });
    assert.deepEqual(assertGraphQLError(filter, 'VALIDATION_FAILED', 400).extensions?.details, [
      { path: 'categoryId', message: 'must be a Category id' },
    ]);
    const order = await gql(customer.client, 'mutation O($p: ID!) { placeOrder(input: { petId: $p, quantity: 1 }) { id } }', { p: '1' });
    assertGraphQLError(order, 'VALIDATION_FAILED', 400);
  });

  it('when an id names nothing, then the message names the id as the client sent it (its global id), on a replay too; REST names its own id', async () => {
    const missing = Buffer.from('Pet:999999').toString('base64url');
    const read = await gql(customer.client, 'query P($id: ID!) { pet(id: $id) { id } }', { id: missing });
    assert.equal(assertGraphQLError(read, 'NOT_FOUND', 404).message, `Pet ${missing} was not found.`);
    const stock = await gql(customer.client, 'query I($id: ID!) { inventoryItem(petId: $id) { quantity } }', { id: missing });
    assert.equal(assertGraphQLError(stock, 'NOT_FOUND', 404).message, `Inventory entry for pet ${missing} was not found.`);
    const place = 'mutation O($p: ID!, $k: String) { placeOrder(idempotencyKey: $k, input: { petId: $p, quantity: 1 }) { id } }';
    const first = await gql(customer.client, place, { p: missing, k: 'order-of-a-missing-pet' });
    const replay = await gql(customer.client, place, { p: missing, k: 'order-of-a-missing-pet' });
    for (const [answer, what] of [
      [first, 'first'],
      [replay, 'replay'],
    ] as const) {
      assert.equal(assertGraphQLError(answer, 'VALIDATION_FAILED', 400).message, `Pet ${missing} does not exist.`, what);
    }
    const category = Buffer.from('Category:999999').toString('base64url');
    const pet = await gql(t.admin, 'mutation P($c: ID!) { createPet(input: { name: "Stray", categoryId: $c }) { id } }', { c: category });
    assert.equal(assertGraphQLError(pet, 'VALIDATION_FAILED', 400).message, `Category ${category} does not exist.`);
    const tooMany = await gql(customer.client, 'mutation O($p: ID!) { placeOrder(input: { petId: $p, quantity: 100 }) { id } }', {
      p: ids.pet,
    });
    assert.match(assertGraphQLError(tooMany, 'INSUFFICIENT_STOCK', 409).message, new RegExp(`^Pet ${ids.pet} has only \\d+ in stock`));
    const rest = await customer.client.get('/v1/pets/999999');
    assert.equal(rest.body.message, 'Pet 999999 was not found.');
  });

  it('when an Event id is decoded with the exported decoder, then it is the feed id REST shows', async () => {
    const events = dataOf(await gql(t.admin, 'query { events(first: 100) { edges { node { id databaseId type } } } }')).events.edges;
    const rest = await t.admin.get('/v1/events?limit=100');
    assert.ok(events.length > 0);
    for (const [i, { node }] of events.entries()) {
      assert.equal(decodeEventId(node.id), node.databaseId);
      assert.equal(node.databaseId, rest.body[i].id);
    }
    assert.throws(() => decodeEventId(ids.pet), /must be the id of an Event; this one is a Pet's/);
  });
});
