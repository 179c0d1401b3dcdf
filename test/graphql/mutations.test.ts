import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createPet, type TestApp } from '../helpers/app.js';
import { dataOf, gql } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';

describe('GraphQL mutations: several root fields in one operation', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when two mutations of one operation change the same pet, then each payload reads the pet after its own change', async () => {
    const { petId } = await createPet(t, { stock: 5 });
    const data = dataOf(
      await gql(
        t.admin,
        `mutation($id: ID!) {
          stock: setInventory(petId: $id, quantity: 1) { quantity pet { status inventory { quantity } } }
          order: placeOrder(input: {petId: $id, quantity: 1}) { id pet { status inventory { quantity status } } }
          cancel: cancelOrder(id: "${globalId('Order', 1)}")
          again: setInventory(petId: $id, quantity: 0) { pet { status } }
        }`,
        { id: globalId('Pet', petId) },
      ),
    );
    assert.deepEqual(data.stock, { quantity: 1, pet: { status: 'available', inventory: { quantity: 1 } } });
    assert.deepEqual(data.order.pet, { status: 'pending', inventory: { quantity: 0, status: 'pending' } });
    assert.equal(data.cancel, globalId('Order', 1));
    assert.deepEqual(data.again, { pet: { status: 'sold' } });
  });

  it('when the pet of a completed order is deleted, then the order keeps its data with petId and pet null', async () => {
    const { petId } = await createPet(t, { stock: 2 });
    const placed = dataOf(
      await gql(t.admin, 'mutation($id: ID!) { placeOrder(input: {petId: $id, quantity: 1}) { id } }', { id: globalId('Pet', petId) }),
    ).placeOrder;
    dataOf(await gql(t.admin, 'mutation($id: ID!) { completeOrder(id: $id) { id } }', { id: placed.id }));
    const stock = dataOf(
      await gql(t.admin, 'query($id: ID!) { inventoryItem(petId: $id) { quantity pet { id name } } }', { id: globalId('Pet', petId) }),
    );
    assert.deepEqual(stock.inventoryItem, { quantity: 1, pet: { id: globalId('Pet', petId), name: 'Rex' } });
    assert.equal(
      dataOf(await gql(t.admin, 'mutation($id: ID!) { deletePet(id: $id) }', { id: globalId('Pet', petId) })).deletePet,
      globalId('Pet', petId),
    );
    const order = dataOf(
      await gql(t.admin, 'query($id: ID!) { order(id: $id) { id petId quantity complete pet { id } } }', { id: placed.id }),
    ).order;
    assert.deepEqual(order, { id: placed.id, petId: null, quantity: 1, complete: true, pet: null });
  });

  it('when mutations run in one operation, then they run in order and a refused one leaves the others done', async () => {
    const { petId } = await createPet(t, { stock: 1 });
    const res = await gql(
      t.admin,
      `mutation($id: ID!) {
        first: placeOrder(input: {petId: $id, quantity: 1}) { id }
        second: placeOrder(input: {petId: $id, quantity: 1}) { id }
      }`,
      { id: globalId('Pet', petId) },
    );
    assert.equal(res.status, 200);
    assert.ok(res.body.data?.first?.id);
    assert.equal(res.body.data?.second, null);
    assert.deepEqual(
      res.body.errors?.map((e) => [e.path, e.extensions?.code, e.extensions?.status]),
      [[['second'], 'PET_NOT_AVAILABLE', 409]],
    );
  });
});

describe('GraphQL: an operationName that names no operation', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  for (const operationName of ['', 'Other']) {
    it(`when a mutation document is sent with operationName ${JSON.stringify(operationName)}, then it is 400 VALIDATION_FAILED, never a 500`, async () => {
      const res = await t.admin.request('POST', '/graphql', { body: { query: 'mutation Op { deleteCategory(id: "10") }', operationName } });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED');
      assert.equal(res.body.errors?.[0]?.extensions?.status, 400);
      assert.equal(res.body.data, undefined);
    });
  }
});
