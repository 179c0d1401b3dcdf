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
    await rejectsWith(f.domain().pets.updatePet(f.staff, pet.id, { name: 'Hammy', categoryId: category.id, status: 'available' }), 'INSUFFICIENT_STOCK');
    assert.equal((await f.domain().pets.getPet(pet.id)).status, 'sold');
  });

  it('when pets are filtered by a name substring, then the match is case-insensitive and pages follow the cursor', async () => {
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Rabbits' });
    for (const name of ['Bunny One', 'bunny two', 'Carrot']) await f.domain().pets.createPet(f.staff, { name, categoryId: category.id });
    const first = await f.domain().pets.listPets({ name: 'BUNNY', categoryId: category.id }, { limit: 1 });
    assert.deepEqual(first.items.map((p) => p.name), ['Bunny One']);
    assert.ok(first.nextCursor);
    const second = await f.domain().pets.listPets({ name: 'BUNNY', categoryId: category.id }, { limit: 1, cursor: first.nextCursor });
    assert.deepEqual(second.items.map((p) => p.name), ['bunny two']);
  });
});
