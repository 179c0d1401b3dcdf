import DataLoader from 'dataloader';
import type { CategoryView, Domain, InventoryView, Page, PageRequest, PetView } from '../../domain/index.js';

const byKey = <K, V>(keys: readonly K[], values: V[], keyOf: (v: V) => K): Array<V | null> => {
  const found = new Map(values.map((v) => [keyOf(v), v]));
  return keys.map((k) => found.get(k) ?? null);
};

/**
 * Per-request DataLoaders for the navigable relations (SPEC §2): each relation of a whole page costs
 * one statement. Created per request, so nothing is cached across callers.
 */
export function createLoaders(domain: () => Domain) {
  const pets = new DataLoader<number, PetView | null>(async (ids) => byKey(ids, await domain().pets.petsByIds(ids), (p) => p.id));
  const categories = new DataLoader<number, CategoryView | null>(async (ids) =>
    byKey(ids, await domain().categories.categoriesByIds(ids), (c) => c.id),
  );
  const inventory = new DataLoader<number, InventoryView | null>(async (ids) =>
    byKey(ids, await domain().store.inventoryByPetIds(ids), (i) => i.petId),
  );
  // `Category.pets(first, after)`: one loader per distinct page request, batching the categories.
  const categoryPets = new Map<string, DataLoader<number, Page<PetView>>>();
  return {
    pets,
    categories,
    inventory,
    /** Forgets every loaded value: a mutation may have changed them (see `freshLoadersPerMutationField`). */
    clearAll(): void {
      pets.clearAll();
      categories.clearAll();
      inventory.clearAll();
      categoryPets.clear();
    },
    petsOfCategory(page: PageRequest): DataLoader<number, Page<PetView>> {
      const key = `${page.limit}\u0000${page.cursor ?? ''}`;
      let loader = categoryPets.get(key);
      if (!loader) {
        loader = new DataLoader<number, Page<PetView>>(async (ids) => {
          const pages = await domain().pets.petPagesInCategories(ids, page);
          return ids.map((id) => pages.get(id) ?? { items: [], nextCursor: null });
        });
        categoryPets.set(key, loader);
      }
      return loader;
    },
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
