import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { loadOpenApiDocument } from '../../src/rest/openapi.js';
import { createPet, startApp, type TestApp } from '../helpers/app.js';

/**
 * A pet and an inventory entry are sent as the domain's views are (no REST copy of their shape): every
 * answer and every event's `data` carries exactly the document's properties, in the document's order.
 */
describe('REST: a pet and an inventory entry are sent as their views, exactly the documented properties', () => {
  let t: TestApp;
  const doc = loadOpenApiDocument() as any;
  const petKeys = Object.keys(doc.components.schemas.Pet.properties);
  const inventoryKeys = Object.keys(doc.components.schemas.InventoryItem.properties);
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when pets and their stock are created, read, listed, changed and seen in the event feed, then each carries exactly the documented properties', async () => {
    assert.deepEqual(petKeys, ['id', 'name', 'categoryId', 'status']);
    const { petId, categoryId } = await createPet(t, { stock: 3 });
    const answers: Array<[string, unknown, string[]]> = [];
    const created = await t.admin.post('/v1/pets', { name: 'Shape', categoryId });
    answers.push(['POST /pets', created.body, petKeys]);
    answers.push(['GET /pets/{id}', (await t.admin.get(`/v1/pets/${petId}`)).body, petKeys]);
    answers.push(['GET /pets?ids', (await t.admin.get(`/v1/pets?ids=${petId}`)).body[0], petKeys]);
    answers.push(['PUT /pets/{id}', (await t.admin.put(`/v1/pets/${created.body.id}`, { name: 'Shaped', categoryId })).body, petKeys]);
    answers.push(['GET /store/inventory/{id}', (await t.admin.get(`/v1/store/inventory/${petId}`)).body, inventoryKeys]);
    answers.push(['PUT /store/inventory/{id}', (await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 2 })).body, inventoryKeys]);
    answers.push([
      'GET /store/inventory',
      (await t.admin.get('/v1/store/inventory?limit=100')).body.find((i: any) => i.petId === petId),
      inventoryKeys,
    ]);
    const events = (await t.admin.get('/v1/events?types=pet.*,inventory.changed&limit=100')).body as any[];
    answers.push(['pet.created data', events.find((e) => e.type === 'pet.created' && e.data.id === created.body.id)?.data, petKeys]);
    answers.push([
      'inventory.changed data',
      events.find((e) => e.type === 'inventory.changed' && e.data.petId === petId)?.data,
      inventoryKeys,
    ]);
    for (const [where, body, keys] of answers) assert.deepEqual(Object.keys(body as object), keys, where);
  });
});
