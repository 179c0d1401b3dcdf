import DataLoader from 'dataloader';
import type { CategoryView, Domain, InventoryView, Page, PageRequest, PetView } from '../../domain/index.js';

const byKey = <K, V>(keys: readonly K[], values: V[], keyOf: (v: V) => K): Array<V | null> => {
  const found = new Map(values.map((v) => [keyOf(v), v]));
  return keys.map((k) => found.get(k) ?? null);
};

/**
 * Per-request DataLoaders for the navigable relations (SPEC §2): each relation of a whole page costs
 * one statement. Created per request, so nothing is cached across callers; each loader is made on its
 * first use (most operations use none).
 */
export function createLoaders(domain: () => Domain) {
  let pets: DataLoader<number, PetView | null> | undefined;
  let categories: DataLoader<number, CategoryView | null> | undefined;
  let inventory: DataLoader<number, InventoryView | null> | undefined;
  // `Category.pets(first, after)`: one loader per distinct page request, batching the categories.
  let categoryPets: Map<string, DataLoader<number, Page<PetView>>> | undefined;
  return {
    get pets(): DataLoader<number, PetView | null> {
      return (pets ??= new DataLoader(async (ids) => byKey(ids, await domain().pets.petsByIds(ids), (p) => p.id)));
    },
    get categories(): DataLoader<number, CategoryView | null> {
      return (categories ??= new DataLoader(async (ids) => byKey(ids, await domain().categories.categoriesByIds(ids), (c) => c.id)));
    },
    get inventory(): DataLoader<number, InventoryView | null> {
      return (inventory ??= new DataLoader(async (ids) => byKey(ids, await domain().store.inventoryByPetIds(ids), (i) => i.petId)));
    },
    /** Forgets every loaded value: a mutation may have changed them (see `freshLoadersPerMutationField`). */
    clearAll(): void {
      pets?.clearAll();
      categories?.clearAll();
      inventory?.clearAll();
      categoryPets?.clear();
    },
    petsOfCategory(page: PageRequest): DataLoader<number, Page<PetView>> {
      const key = `${page.limit}\u0000${page.cursor ?? ''}`;
      categoryPets ??= new Map();
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
