import type { Migration } from '@mikro-orm/migrations';
import { COLLIDING_KEY_PREFIX, nameKey } from '../../domain/validate.js';

/**
 * Recomputes every category's `name_key` with the domain's `nameKey`, in the migration's transaction, around the
 * unique index (`dropUnique`, then `addUnique`): a category that collides with an earlier one (lower id) keeps its
 * row and gets `COLLIDING_KEY_PREFIX` + its id; the migration never fails on them. Returns how many collided.
 */
export async function refoldCategoryNameKeys(migration: Migration, dropUnique: string, addUnique: string): Promise<number> {
  const rows = (await migration.execute('select id, name, name_key from categories order by id')) as Array<{
    id: number | string;
    name: string;
    name_key: string;
  }>;
  await migration.execute(dropUnique);
  const taken = new Set<string>();
  let collisions = 0;
  for (const row of rows) {
    let key = nameKey(row.name);
    if (taken.has(key)) {
      key = `${COLLIDING_KEY_PREFIX}${row.id}`;
      collisions++;
    } else {
      taken.add(key);
    }
    if (key !== row.name_key) await migration.execute('update categories set name_key = ? where id = ?', [key, row.id]);
  }
  await migration.execute(addUnique);
  return collisions;
}
