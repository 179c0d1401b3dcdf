import type { Category, Pet, PetStatus } from './entities/index.js';
import type { CategoryView, InventoryView, PetView } from './views.js';

/** Views from entities (read through the ORM, for writes and their answers). */
export const toPetView = (p: Pet): PetView => ({ id: p.id, name: p.name, categoryId: p.category.id, status: p.status });
export const toCategoryView = (c: Category): CategoryView => ({ id: c.id, name: c.name, description: c.description });

/**
 * Rows of the plain-SQL reads (`SqlReader`), in the entities' column names. Ids are strings on
 * PostgreSQL (bigint) and numbers on SQLite, so every mapper goes through Number().
 */
export interface PetRow {
  id: number | string;
  name: string;
  category_id: number | string;
  status: PetStatus;
}
export const PET_COLUMNS = 'id, name, category_id, status';
export const petRowToView = (r: PetRow): PetView => ({ id: Number(r.id), name: r.name, categoryId: Number(r.category_id), status: r.status });

export interface CategoryRow {
  id: number | string;
  name: string;
  description: string | null;
}
export const CATEGORY_COLUMNS = 'id, name, description';
export const categoryRowToView = (r: CategoryRow): CategoryView => ({ id: Number(r.id), name: r.name, description: r.description });

export interface InventoryRow {
  pet_id: number | string;
  quantity: number | string;
  status: PetStatus;
}
/** Stock with its pet's status (a pet's status and its inventory entry's status are the same value). */
export const INVENTORY_SELECT = 'select i.pet_id, i.quantity, p.status from inventory i join pets p on p.id = i.pet_id';
export const inventoryRowToView = (r: InventoryRow): InventoryView => ({ petId: Number(r.pet_id), quantity: Number(r.quantity), status: r.status });

/** `?, ?, ?` for an `in (…)` list of `n` values; the lists up to 100 long (the most ids a request takes) are made once. */
const PLACEHOLDERS = Array.from({ length: 101 }, (_, n) => Array.from({ length: n }, () => '?').join(', '));
export const placeholders = (n: number): string => PLACEHOLDERS[n] ?? Array.from({ length: n }, () => '?').join(', ');
