import type { EntityManager } from '@mikro-orm/knex';
import { Category, InventoryItem, Pet, type PetStatus } from './entities/index.js';

const DEMO: Array<{ category: string; description: string; pets: Array<[string, PetStatus, number]> }> = [
  {
    category: 'Dogs',
    description: 'Loyal companions',
    pets: [
      ['Rex', 'available', 3],
      ['Fido', 'available', 1],
      ['Bella', 'available', 2],
    ],
  },
  {
    category: 'Cats',
    description: 'Independent spirits',
    pets: [
      ['Tom', 'available', 2],
      ['Luna', 'available', 5],
    ],
  },
  {
    category: 'Birds',
    description: 'Feathered friends',
    pets: [
      ['Tweety', 'available', 4],
      ['Polly', 'sold', 0],
    ],
  },
];

/** Demo catalogue for the embedded default (never in production). */
export async function seedDemoCatalog(em: EntityManager): Promise<void> {
  for (const group of DEMO) {
    const category = new Category(group.category, group.description);
    em.persist(category);
    for (const [name, status, stock] of group.pets) {
      const pet = new Pet(name, category, status);
      em.persist(pet);
      em.persist(new InventoryItem(pet, stock));
    }
  }
  await em.flush();
}
