import type { Category, Pet, PetStatus } from './entities/index.js';
import type { CategoryView, InventoryView, PetView } from './views.js';
import type { SqlReader } from './reader.js';
import { notFound } from './errors.js';
import { decodeCursor, pageSize, toPage, type Page, type PageRequest } from './pagination.js';
import * as v from './validate.js';

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
export const petRowToView = (r: PetRow): PetView => ({
  id: Number(r.id),
  name: r.name,
  categoryId: Number(r.category_id),
  status: r.status,
});

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
export const INVENTORY_BY_PET = `${INVENTORY_SELECT} where i.pet_id = ?`;
export const inventoryRowToView = (r: InventoryRow): InventoryView => ({
  petId: Number(r.pet_id),
  quantity: Number(r.quantity),
  status: r.status,
});

/**
 * A datetime column as epoch ms, as the plain-SQL readers return it: a number on SQLite (MikroORM stores epoch ms), on
 * PostgreSQL the server's text of a timestamptz (`2026-11-29 06:01:35.123456+00`: MikroORM's pool keeps it a string),
 * or a Date.
 */
export const timeOf = (value: number | string | Date): number =>
  value instanceof Date
    ? value.getTime()
    : typeof value === 'number'
      ? value
      : Number.isNaN(Number(value))
        ? Date.parse(value)
        : Number(value);

/** `?, ?, ?` for an `in (…)` list of `n` values; the lists up to 100 long (the most ids a request takes) are made once. */
const PLACEHOLDERS = Array.from({ length: 101 }, (_, n) => Array.from({ length: n }, () => '?').join(', '));
export const placeholders = (n: number): string => PLACEHOLDERS[n] ?? Array.from({ length: n }, () => '?').join(', ');

/** A resource read by id through the plain-SQL reader (one, several, a keyset page): its table's columns and the view of a row. */
export interface ReadById<Row, View> {
  /** The resource's name in a 404 ("Pet 7 was not found.") */
  resource: string;
  /** The id's name in a 400 (`petId`). */
  idName: string;
  /** `select <columns> from <table>`. */
  select: string;
  view: (row: Row) => View;
  /** The statements' texts, made once (a text built per read is flattened and hashed again for the statement cache). */
  sql: { one: string; page: string };
}
const readById = <Row, View>(by: Omit<ReadById<Row, View>, 'sql'>): ReadById<Row, View> => ({
  ...by,
  sql: { one: `${by.select} where id = ?`, page: `${by.select} where id > ? order by id asc limit ?` },
});
export const PETS_BY_ID = readById<PetRow, PetView>({
  resource: 'Pet',
  idName: 'petId',
  select: `select ${PET_COLUMNS} from pets`,
  view: petRowToView,
});
export const CATEGORIES_BY_ID = readById<CategoryRow, CategoryView>({
  resource: 'Category',
  idName: 'categoryId',
  select: `select ${CATEGORY_COLUMNS} from categories`,
  view: categoryRowToView,
});
/** Deleted categories' last states (src/domain/entities/deleted-category.entity.ts), as categories. */
export const DELETED_CATEGORIES_BY_ID = readById<CategoryRow, CategoryView>({
  resource: 'Category',
  idName: 'categoryId',
  select: `select ${CATEGORY_COLUMNS} from deleted_categories`,
  view: categoryRowToView,
});

/** One row by id, as its view: the id checked by the domain's id rule, NOT_FOUND when there is no such row. */
export async function readOne<Row, View>(reader: SqlReader, by: ReadById<Row, View>, id: number): Promise<View> {
  const row = await reader.one<Row>(by.sql.one, [v.id(id, by.idName)]);
  if (!row) throw notFound(by.resource, id);
  return by.view(row);
}

/** For batching (GraphQL's loaders): the rows among `ids`, as views; missing ones are absent. */
export async function readMany<Row, View>(reader: SqlReader, by: ReadById<Row, View>, ids: readonly number[]): Promise<View[]> {
  if (ids.length === 0) return [];
  const rows = await reader.all<Row>(`${by.select} where id in (${placeholders(ids.length)})`, ids);
  return rows.map(by.view);
}

/** A keyset page of the whole table in id order, as views (one more row is read to know whether another follows). */
export async function readPage<Row, View extends { id: number }>(
  reader: SqlReader,
  by: ReadById<Row, View>,
  page: PageRequest,
): Promise<Page<View>> {
  const limit = pageSize(page.limit);
  const rows = await reader.all<Row>(by.sql.page, [decodeCursor(page.cursor), limit + 1]);
  return toPage(rows.map(by.view), limit);
}
