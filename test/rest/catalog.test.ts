import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/project-path.js';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { assertError, snapshot, stockOf } from './support.js';

describe('REST catalogue: categories and pets', () => {
  let t: TestApp;
  let customer: Client;
  before(async () => {
    t = await startApp();
    customer = (await createAccount(t)).client;
  });
  after(() => t.close());

  describe('categories', () => {
    it('when staff creates a category, then it is 201 with a Location that serves it, and anyone can read and list it', async () => {
      const res = await t.admin.post('/v1/categories', { name: '  Reptiles  ', description: 'Cold-blooded friends' });
      assert.equal(res.status, 201);
      assert.equal(res.body.name, 'Reptiles', 'names are trimmed');
      assert.equal(res.body.description, 'Cold-blooded friends');
      assert.equal(res.headers.get('location'), `/v1/categories/${res.body.id}`);

      const got = await customer.get(res.headers.get('location')!);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, res.body);

      const list = await customer.get('/v1/categories?limit=100');
      assert.equal(list.status, 200);
      assert.ok(list.body.some((c: { id: number }) => c.id === res.body.id));
    });

    it('when staff replaces a category, then name and description are replaced (an omitted description is removed)', async () => {
      const created = await t.admin.post('/v1/categories', { name: 'Fish', description: 'Wet' });
      const res = await t.admin.put(`/v1/categories/${created.body.id}`, { name: 'Fishes' });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { id: created.body.id, name: 'Fishes' });
      const got = await t.admin.get(`/v1/categories/${created.body.id}`);
      assert.deepEqual(got.body, { id: created.body.id, name: 'Fishes' });
    });

    it('when staff renames a category to its own name in another case, then it is allowed', async () => {
      const created = await t.admin.post('/v1/categories', { name: 'Hamsters' });
      const res = await t.admin.put(`/v1/categories/${created.body.id}`, { name: 'HAMSTERS' });
      assert.equal(res.status, 200);
      assert.equal(res.body.name, 'HAMSTERS');
    });

    it('when a category name is taken ignoring case, then creating or renaming is 409 NAME_TAKEN and changes nothing', async () => {
      await t.admin.post('/v1/categories', { name: 'Parrots' });
      const other = await t.admin.post('/v1/categories', { name: 'Canaries' });
      assert.equal((await t.admin.post('/v1/categories', { name: 'Äffchen' })).status, 201);
      const before = await snapshot(t);

      assertError(await t.admin.post('/v1/categories', { name: 'pArRoTs' }), 409, 'NAME_TAKEN');
      assertError(await t.admin.post('/v1/categories', { name: ' parrots ' }), 409, 'NAME_TAKEN');
      assertError(await t.admin.put(`/v1/categories/${other.body.id}`, { name: 'PARROTS' }), 409, 'NAME_TAKEN');
      assertError(await t.admin.post('/v1/categories', { name: 'äFFCHEN' }), 409, 'NAME_TAKEN');

      assert.deepEqual(await snapshot(t), before);
    });

    it('when a category still has pets, then deleting it is 409 CATEGORY_IN_USE and it stays', async () => {
      const { categoryId } = await createPet(t);
      assertError(await t.admin.delete(`/v1/categories/${categoryId}`), 409, 'CATEGORY_IN_USE');
      assert.equal((await t.admin.get(`/v1/categories/${categoryId}`)).status, 200);
    });

    it('when staff deletes an empty category, then it is 204 and afterwards 404', async () => {
      const created = await t.admin.post('/v1/categories', { name: 'Ferrets' });
      const res = await t.admin.delete(`/v1/categories/${created.body.id}`);
      assert.equal(res.status, 204);
      assert.equal(res.text, '');
      assertError(await t.admin.get(`/v1/categories/${created.body.id}`), 404, 'NOT_FOUND');
      assertError(await t.admin.delete(`/v1/categories/${created.body.id}`), 404, 'NOT_FOUND');
      assertError(await t.admin.put(`/v1/categories/${created.body.id}`, { name: 'Ferrets' }), 404, 'NOT_FOUND');
    });
  });

  describe('pets', () => {
    it('when staff creates a pet, then it is 201 available with a Location, and its inventory entry has quantity 1', async () => {
      const cat = await t.admin.post('/v1/categories', { name: 'Rabbits' });
      const res = await t.admin.post('/v1/pets', { name: ' Bugs ', categoryId: cat.body.id });
      assert.equal(res.status, 201);
      assert.deepEqual(res.body, { id: res.body.id, name: 'Bugs', categoryId: cat.body.id, status: 'available' });
      assert.equal(res.headers.get('location'), `/v1/pets/${res.body.id}`);
      assert.deepEqual(await stockOf(t, res.body.id), { quantity: 1, status: 'available' });

      const inv = await customer.get(`/v1/store/inventory/${res.body.id}`);
      assert.equal(inv.status, 200);
      assert.deepEqual(inv.body, { petId: res.body.id, quantity: 1, status: 'available' });

      const got = await customer.get(`/v1/pets/${res.body.id}`);
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, res.body);
      const listed = await customer.get(`/v1/pets?ids=${res.body.id}`);
      assert.deepEqual(listed.body, [res.body]);
    });

    it('when staff creates a pet with a status, then the pet and its inventory entry have it', async () => {
      const { categoryId } = await createPet(t);
      const res = await t.admin.post('/v1/pets', { name: 'Shy', categoryId, status: 'pending' });
      assert.equal(res.status, 201);
      assert.equal(res.body.status, 'pending');
      assert.deepEqual(await stockOf(t, res.body.id), { quantity: 1, status: 'pending' });
    });

    it('when staff replaces a pet without a status, then name and category change and the status stays', async () => {
      const { petId } = await createPet(t, { stock: 3 });
      await t.admin.put(`/v1/pets/${petId}`, {
        name: 'Rex',
        categoryId: (await t.admin.get(`/v1/pets/${petId}`)).body.categoryId,
        status: 'pending',
      });
      const cat = await t.admin.post('/v1/categories', { name: 'Working dogs' });
      const res = await t.admin.put(`/v1/pets/${petId}`, { name: 'Max', categoryId: cat.body.id });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { id: petId, name: 'Max', categoryId: cat.body.id, status: 'pending' });
      assert.deepEqual((await t.admin.get(`/v1/pets?ids=${petId}`)).body, [res.body]);
    });

    it('when staff sets a pet pending or sold, then it is off sale (inventory status follows) and available again while it has stock', async () => {
      const { petId, categoryId } = await createPet(t, { stock: 2 });
      for (const status of ['pending', 'sold', 'available'] as const) {
        const res = await t.admin.put(`/v1/pets/${petId}`, { name: 'Rex', categoryId, status });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.status, status);
        assert.deepEqual(await stockOf(t, petId), { quantity: 2, status });
      }
    });

    it('when staff sets a pet without stock available, then it is 409 INSUFFICIENT_STOCK and nothing changes', async () => {
      const { petId, categoryId } = await createPet(t, { stock: 0 });
      assert.deepEqual(await stockOf(t, petId), { quantity: 0, status: 'sold' });
      const before = await snapshot(t);
      assertError(await t.admin.put(`/v1/pets/${petId}`, { name: 'Renamed', categoryId, status: 'available' }), 409, 'INSUFFICIENT_STOCK');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when a name has 100 characters outside the BMP (emoji), then it is accepted as the document says, and 101 are refused', async () => {
      const { categoryId } = await createPet(t);
      const name = '\u{1F436}'.repeat(100);
      const res = await t.admin.post('/v1/pets', { name, categoryId });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.name, name);
      assert.equal((await t.admin.get(`/v1/pets?ids=${res.body.id}`)).body[0].name, name);
      const cat = await t.admin.post('/v1/categories', { name: '\u{1F431}'.repeat(100), description: '\u{1F431}'.repeat(1000) });
      assert.equal(cat.status, 201, cat.text);
      assertError(await t.admin.post('/v1/pets', { name: `${name}\u{1F436}`, categoryId }), 400, 'VALIDATION_FAILED');
    });

    it('when staff deletes a pet without orders, then it is 204 and the pet and its inventory entry are gone', async () => {
      const { petId, categoryId } = await createPet(t);
      const res = await t.admin.delete(`/v1/pets/${petId}`);
      assert.equal(res.status, 204);
      assertError(await t.admin.get(`/v1/pets/${petId}`), 404, 'NOT_FOUND');
      assertError(await t.admin.get(`/v1/store/inventory/${petId}`), 404, 'NOT_FOUND');
      assertError(await t.admin.put(`/v1/pets/${petId}`, { name: 'Ghost', categoryId }), 404, 'NOT_FOUND');
      assertError(await t.admin.delete(`/v1/pets/${petId}`), 404, 'NOT_FOUND');
      assertError(await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 3 }), 404, 'NOT_FOUND');
      assert.deepEqual((await t.admin.get(`/v1/pets?ids=${petId}`)).body, []);
      // The category is free again.
      assert.equal((await t.admin.delete(`/v1/categories/${categoryId}`)).status, 204);
    });

    it('when a pet has an open order, then deleting it is 409 PET_HAS_OPEN_ORDERS and nothing changes', async () => {
      const { petId } = await createPet(t, { stock: 2 });
      const order = await customer.post('/v1/store/orders', { petId, quantity: 1 });
      assert.equal(order.status, 201);
      const before = await snapshot(t);
      assertError(await t.admin.delete(`/v1/pets/${petId}`), 409, 'PET_HAS_OPEN_ORDERS');
      assert.deepEqual(await snapshot(t), before);
    });

    it('when a pet has only completed orders, then it can be deleted and the orders survive with petId null', async () => {
      const { petId } = await createPet(t, { stock: 2 });
      const order = await customer.post('/v1/store/orders', { petId, quantity: 1 });
      assert.equal((await t.admin.patch(`/v1/store/orders/${order.body.id}`, { complete: true })).status, 200);
      assert.equal((await t.admin.delete(`/v1/pets/${petId}`)).status, 204);
      const got = await customer.get(`/v1/store/orders/${order.body.id}`);
      assert.equal(got.status, 200);
      assert.equal(got.body.petId, null);
      assert.equal(got.body.complete, true);
    });
  });

  describe('races between the catalogue and its references', () => {
    it('when pets are created in or moved to a category while it is deleted, then one side wins and the other gets its documented refusal, never a 500', async () => {
      const { petId: mover } = await createPet(t);
      for (let round = 0; round < 8; round++) {
        const cat = await t.admin.post('/v1/categories', { name: `Doomed ${round}` });
        const [created, deleted, moved] = await Promise.all([
          t.admin.post('/v1/pets', { name: 'Newcomer', categoryId: cat.body.id }),
          t.admin.delete(`/v1/categories/${cat.body.id}`),
          t.admin.put(`/v1/pets/${mover}`, { name: 'Mover', categoryId: cat.body.id }),
        ]);
        if (created.status !== 201) assertError(created, 400, 'VALIDATION_FAILED');
        if (moved.status !== 200) assertError(moved, 400, 'VALIDATION_FAILED');
        if (deleted.status === 204) {
          assert.ok(created.status !== 201 && moved.status !== 200, `round ${round}: a pet joined a deleted category`);
        } else {
          assertError(deleted, 409, 'CATEGORY_IN_USE');
          assert.ok(created.status === 201 || moved.status === 200, `round ${round}: refused the delete, yet no pet is in the category`);
        }
        // Put the mover back in a category that lives, for the next round.
        const home = await t.admin.post('/v1/categories', { name: `Home ${round}` });
        assert.equal((await t.admin.put(`/v1/pets/${mover}`, { name: 'Mover', categoryId: home.body.id })).status, 200);
      }
    });
  });

  describe('races between deletes', () => {
    it('when one category is deleted by several requests at once, then one is 204 and the others 404, never a 500, with one category.deleted event', async () => {
      for (let round = 0; round < 5; round++) {
        const cat = await t.admin.post('/v1/categories', { name: `Twice gone ${round}` });
        const answers = await Promise.all([1, 2, 3, 4].map(() => t.admin.delete(`/v1/categories/${cat.body.id}`)));
        const statuses = answers.map((a) => a.status).sort();
        assert.deepEqual(statuses, [204, 404, 404, 404], `round ${round}: ${answers.map((a) => a.text).join(' ')}`);
        for (const a of answers.filter((x) => x.status === 404)) assertError(a, 404, 'NOT_FOUND');
        const events = (await t.admin.get('/v1/events?types=category.deleted&limit=100')).body as Array<{ data: { id: number } }>;
        assert.equal(events.filter((e) => e.data.id === cat.body.id).length, 1, `round ${round}: one category.deleted event`);
      }
    });
  });

  describe('the OpenAPI document', () => {
    it('when anyone asks for /v1/openapi.json without a key, then it is the committed document', async () => {
      const res = await t.anonymous.get('/v1/openapi.json');
      assert.equal(res.status, 200);
      assert.equal(res.body.openapi, '3.0.3');
      assert.equal(res.body.info.version, '1.0.0');
      assert.ok(res.body.paths['/pets/{petId}'].get.deprecated);
    });

    it('when anyone asks for /v1/openapi.yaml without a key, then it is the committed YAML served as is', async () => {
      const res = await t.anonymous.get('/v1/openapi.yaml');
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /yaml/);
      assert.equal(res.text, readFileSync(projectPath('schema/openapi.yaml'), 'utf8'));
    });
  });
});
