import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rejectsWith, startDomain, type DomainFixture } from './support.js';

/** Catalogue rules, straight against the domain services (no HTTP). */
describe('domain: catalogue', () => {
  let f: DomainFixture;
  before(async () => {
    f = await startDomain();
  });
  after(() => f?.close());

  it('when a category name differs only in case or surrounding spaces, then NAME_TAKEN', async () => {
    await f.domain().categories.createCategory(f.staff, { name: 'Birds' });
    await rejectsWith(f.domain().categories.createCategory(f.staff, { name: '  bIRDS ' }), 'NAME_TAKEN');
  });

  it('when a pet is created, then it is available with one unit in stock', async () => {
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Cats' });
    const pet = await f.domain().pets.createPet(f.staff, { name: ' Tom ', categoryId: category.id });
    assert.deepEqual(pet, { id: pet.id, name: 'Tom', categoryId: category.id, status: 'available' });
    assert.equal((await f.domain().store.getInventory(pet.id)).quantity, 1);
  });

  it('when a pet names a category that does not exist, then VALIDATION_FAILED (not NOT_FOUND)', async () => {
    await rejectsWith(f.domain().pets.createPet(f.staff, { name: 'Ghost', categoryId: 999_999 }), 'VALIDATION_FAILED');
  });

  it('when a category still has pets, then deleting it is CATEGORY_IN_USE; a pet with an open order cannot be deleted', async () => {
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Fish' });
    const pet = await f.domain().pets.createPet(f.staff, { name: 'Nemo', categoryId: category.id });
    await rejectsWith(f.domain().categories.deleteCategory(f.staff, category.id), 'CATEGORY_IN_USE');
    await f.domain().store.placeOrder(f.customer, { petId: pet.id, quantity: 1 });
    await rejectsWith(f.domain().pets.deletePet(f.staff, pet.id), 'PET_HAS_OPEN_ORDERS');
  });

  it('when a customer changes the catalogue, then FORBIDDEN', async () => {
    await rejectsWith(f.domain().categories.createCategory(f.customer, { name: 'Nope' }), 'FORBIDDEN');
  });

  it('when staff sets a pet available with no stock, then INSUFFICIENT_STOCK and it stays off sale', async () => {
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Hamsters' });
    const pet = await f.domain().pets.createPet(f.staff, { name: 'Hammy', categoryId: category.id });
    await f.domain().store.setInventory(f.staff, pet.id, 0);
    await rejectsWith(
      f.domain().pets.updatePet(f.staff, pet.id, { name: 'Hammy', categoryId: category.id, status: 'available' }),
      'INSUFFICIENT_STOCK',
    );
    assert.equal((await f.domain().pets.getPet(pet.id)).status, 'sold');
  });

  it('when one list after another gives other filters and other numbers of ids, then each gets exactly its own pets', async () => {
    const dogs = await f.domain().categories.createCategory(f.staff, { name: 'Shapes: dogs' });
    const owls = await f.domain().categories.createCategory(f.staff, { name: 'Shapes: owls' });
    const rex = await f.domain().pets.createPet(f.staff, { name: 'Shape Rex', categoryId: dogs.id });
    const fido = await f.domain().pets.createPet(f.staff, { name: 'Shape Fido', categoryId: dogs.id, status: 'pending' });
    const hoot = await f.domain().pets.createPet(f.staff, { name: 'Shape Hoot', categoryId: owls.id });
    const names = async (filter: Parameters<ReturnType<typeof f.domain>['pets']['listPets']>[0], limit?: number) =>
      (await f.domain().pets.listPets(filter, { limit })).items.map((p) => p.name);
    const all = [rex.id, fido.id, hoot.id];
    // Each shape (which filters, how many ids) is its own statement: a read must never run another shape's.
    assert.deepEqual(await names({ ids: all }), ['Shape Rex', 'Shape Fido', 'Shape Hoot']);
    assert.deepEqual(await names({ ids: [hoot.id, rex.id] }), ['Shape Rex', 'Shape Hoot']);
    assert.deepEqual(await names({ ids: all, status: 'pending' }), ['Shape Fido']);
    assert.deepEqual(await names({ ids: all, categoryId: owls.id }), ['Shape Hoot']);
    assert.deepEqual(await names({ ids: all, name: 'fido' }), ['Shape Fido']);
    assert.deepEqual(await names({ ids: all, categoryId: dogs.id, status: 'available', name: 'REX' }), ['Shape Rex']);
    assert.deepEqual(await names({ categoryId: dogs.id }), ['Shape Rex', 'Shape Fido']);
    const first = await f.domain().pets.listPets({ ids: all }, { limit: 2 });
    assert.deepEqual(
      first.items.map((p) => p.name),
      ['Shape Rex', 'Shape Fido'],
    );
    const next = await f.domain().pets.listPets({ ids: all }, { limit: 2, cursor: first.nextCursor });
    assert.deepEqual([next.items.map((p) => p.name), next.nextCursor], [['Shape Hoot'], null]);
    assert.deepEqual(await names({ ids: [fido.id] }), ['Shape Fido']);
  });

  it('when pets are filtered by a name substring, then the match is case-insensitive and pages follow the cursor', async () => {
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Rabbits' });
    for (const name of ['Bunny One', 'bunny two', 'Carrot']) await f.domain().pets.createPet(f.staff, { name, categoryId: category.id });
    const first = await f.domain().pets.listPets({ name: 'BUNNY', categoryId: category.id }, { limit: 1 });
    assert.deepEqual(
      first.items.map((p) => p.name),
      ['Bunny One'],
    );
    assert.ok(first.nextCursor);
    const second = await f.domain().pets.listPets({ name: 'BUNNY', categoryId: category.id }, { limit: 1, cursor: first.nextCursor });
    assert.deepEqual(
      second.items.map((p) => p.name),
      ['bunny two'],
    );
  });
});
