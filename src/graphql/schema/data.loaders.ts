import DataLoader from 'dataloader';
import type { CategoryView, Domain, InventoryView, Page, PageRequest, PetView } from '../../domain/index.js';

const byKey = <K, V>(keys: readonly K[], values: V[], keyOf: (v: V) => K): Array<V | null> => {
  const found = new Map(values.map((v) => [keyOf(v), v]));
  return keys.map((k) => found.get(k) ?? null);
};

/**
 * Per-request DataLoaders for the navigable relations (docs/API.md, "GraphQL"): each relation of a whole page costs
 * one statement. Created per request, so nothing is cached across callers; each loader is made on its
 * first use (most operations use none).
 */
export function createLoaders(domain: () => Domain): Loaders {
  return new Loaders(domain);
}

/** A class, so that its getters live on the prototype: an object literal with getters is slow to create per request. */
export class Loaders {
  #pets?: DataLoader<number, PetView | null>;
  #categories?: DataLoader<number, CategoryView | null>;
  #petCategories?: DataLoader<number, CategoryView | null>;
  #inventory?: DataLoader<number, InventoryView | null>;
  // `Category.pets(first, after)`: one loader per distinct page request, batching the categories.
  #categoryPets?: Map<string, DataLoader<number, Page<PetView>>>;

  constructor(private readonly domain: () => Domain) {}

  get pets(): DataLoader<number, PetView | null> {
    return (this.#pets ??= new DataLoader(async (ids) => byKey(ids, await this.domain().pets.petsByIds(ids), (p) => p.id)));
  }

  get categories(): DataLoader<number, CategoryView | null> {
    return (this.#categories ??= new DataLoader(async (ids) =>
      byKey(ids, await this.domain().categories.categoriesByIds(ids), (c) => c.id),
    ));
  }

  /** `Pet.category`: a category deleted since the pet's state was recorded (in an event) answers its last state. */
  get petCategories(): DataLoader<number, CategoryView | null> {
    return (this.#petCategories ??= new DataLoader(async (ids) =>
      byKey(ids, await this.domain().categories.categoriesOfPets(ids), (c) => c.id),
    ));
  }

  get inventory(): DataLoader<number, InventoryView | null> {
    return (this.#inventory ??= new DataLoader(async (ids) =>
      byKey(ids, await this.domain().store.inventoryByPetIds(ids), (i) => i.petId),
    ));
  }

  /** Forgets every loaded value: a mutation may have changed them (see `freshLoadersPerMutationField`). */
  clearAll(): void {
    this.#pets?.clearAll();
    this.#categories?.clearAll();
    this.#petCategories?.clearAll();
    this.#inventory?.clearAll();
    this.#categoryPets?.clear();
  }

  petsOfCategory(page: PageRequest): DataLoader<number, Page<PetView>> {
    const key = `${page.limit}\u0000${page.cursor ?? ''}`;
    this.#categoryPets ??= new Map();
    let loader = this.#categoryPets.get(key);
    if (!loader) {
      loader = new DataLoader<number, Page<PetView>>(async (ids) => {
        const pages = await this.domain().pets.petPagesInCategories(ids, page);
        return ids.map((id) => pages.get(id) ?? { items: [], nextCursor: null });
      });
      this.#categoryPets.set(key, loader);
    }
    return loader;
  }
}
