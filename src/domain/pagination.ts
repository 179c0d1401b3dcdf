import type { EntityManager } from '@mikro-orm/knex';
import type { EntityName, FilterQuery } from '@mikro-orm/core';
import { validationFailed } from './errors.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface PageRequest {
  limit?: number;
  cursor?: string | null;
}

export interface Page<T> {
  items: T[];
  /** Opaque cursor for the next page, or null on the last page. */
  nextCursor: string | null;
}

/**
 * Keyset cursors over the id: opaque to clients, valid on any instance, stable under inserts.
 * Encoded as base64url of `id:<n>` so they can be changed later without breaking the contract.
 */
export function encodeCursor(lastId: number): string {
  return Buffer.from(`id:${lastId}`).toString('base64url');
}

export function decodeCursor(cursor: string | null | undefined, path = 'cursor'): number {
  if (cursor === undefined || cursor === null || cursor === '') return 0;
  const text = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
  const match = /^id:(\d{1,16})$/.exec(text);
  if (!match || !Number.isSafeInteger(Number(match[1]))) {
    throw validationFailed('The cursor is not valid; use the one from the previous page.', [{ path, message: 'invalid cursor' }]);
  }
  return Number(match[1]);
}

export function pageSize(limit: number | undefined, path = 'limit'): number {
  if (limit === undefined || limit === null) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw validationFailed(`The page size must be between 1 and ${MAX_PAGE_SIZE}.`, [{ path, message: `must be 1..${MAX_PAGE_SIZE}` }]);
  }
  return limit;
}

/** Given rows fetched with `limit + 1`, cut to the page and compute the next cursor. */
export function toPage<T extends { id: number }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}

/**
 * A keyset page through the ORM: the entities matching `where` after the page's cursor, in id order, as views
 * (one more row is read to know whether another page follows). The page size is checked first, then the cursor.
 */
export async function findPage<E extends { id: number }, V extends { id: number }>(
  em: EntityManager,
  entity: EntityName<E>,
  where: Omit<FilterQuery<E>, 'id'> & object,
  page: PageRequest,
  view: (entity: E) => V,
): Promise<Page<V>> {
  const limit = pageSize(page.limit);
  const after = { ...(where as object), id: { $gt: decodeCursor(page.cursor) } } as unknown as FilterQuery<E>;
  const rows = await em.find(entity, after, { orderBy: { id: 'asc' } as never, limit: limit + 1 });
  return toPage(rows.map(view), limit);
}
