import { ForeignKeyConstraintViolationException, raw } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Category, InventoryItem, Order, Pet, PET_STATUSES, type PetStatus } from './entities/index.js';
import { DomainError, forbidden, noSuch, notFound } from './errors.js';
import { isStaff, type Actor } from './actor.js';
import { decodeCursor, pageSize, toPage, type Page, type PageRequest } from './pagination.js';
import * as v from './validate.js';
import type { Id } from './validate.js';
import type { PetView } from './views.js';
import type { SqlReader } from './reader.js';
import { nameContains } from './name-search.js';
import { PET_COLUMNS, PETS_BY_ID, petRowToView, placeholders, readMany, readOne, toPetView, type PetRow } from './rows.js';
import { recordInventoryChanged, recordPetEvent } from './events.service.js';

export interface PetFilter {
  status?: PetStatus;
  categoryId?: number;
  /** Case-insensitive substring of the name. */
  name?: string;
  ids?: number[];
}

/**
 * What a client gives to create or replace a pet. Typed, so each facade's input type is checked
 * against it (`implements`); the service still checks every value, since REST bodies arrive untyped.
 */
export interface PetInput {
  name: string;
  categoryId: Id;
  status?: PetStatus | null;
}

/** `ids[0]` … `ids[99]`: where a refused id is, named without a new string per id read. */
const ID_PATHS = Array.from({ length: v.MAX_IDS }, (_, i) => `ids[${i}]`);

/**
 * A list's SQL text per shape (the dialect, which filters it has, how many ids), made once: each read hands the
 * reader the same string, whose hash V8 keeps, so the statement cache finds it without a new text being built,
 * flattened and hashed. At most 2 × 16 × (v.MAX_IDS + 1) shapes.
 */
const LIST_SQL = new Map<number, string>();

export function requireCatalogStaff(actor: Actor) {
  if (!isStaff(actor)) throw forbidden('Only staff can change the catalogue.');
}

/**
 * Pets: every rule about them, shared by both facades. Reads are plain SQL through the `SqlReader`
 * (prepared once, no EntityManager); writes go through the ORM's unit of work in one transaction.
 */
export class PetsService {
  constructor(
    private readonly emOf: () => EntityManager,
    private readonly reader: SqlReader,
  ) {}

  /** The request's EntityManager fork, made on first use: a read-only request never forks one. */
  private get em(): EntityManager {
    return this.emOf();
  }

  async listPets(filter: PetFilter, page: PageRequest): Promise<Page<PetView>> {
    const { sql, params, limit } = this.petsQuery(filter, page);
    const rows = await this.reader.all<PetRow>(sql, params);
    return toPage(rows.map(petRowToView), limit);
  }

  /** The list's SQL text, its values and the page's size, its `limit + 1` last. */
  private petsQuery(filter: PetFilter, page: PageRequest): { sql: string; params: unknown[]; limit: number } {
    const limit = pageSize(page.limit);
    const after = decodeCursor(page.cursor);
    const params: unknown[] = [];
    // The shape: the dialect's bit, a bit per condition given, then the number of ids.
    let shape = this.reader.dialect === 'sqlite' ? 0 : 1;
    // A first page has no lower bound (ids start at 1): SQLite seeks an `in` list in fewer instructions without one.
    if (after > 0) {
      shape |= 16;
      params.push(after);
    }
    let nameCondition = '';
    if (filter.status !== undefined) {
      shape |= 2;
      params.push(v.oneOf(filter.status, 'status', PET_STATUSES));
    }
    if (filter.categoryId !== undefined) {
      shape |= 4;
      params.push(v.id(filter.categoryId, 'categoryId'));
    }
    if (filter.name !== undefined) {
      const condition = nameContains(v.nameText(filter.name, 'name'), this.reader.dialect);
      shape |= 8;
      nameCondition = condition.sql;
      params.push(condition.param);
    }
    let idCount = 0;
    if (filter.ids !== undefined) {
      v.idCount(filter.ids.length, 'ids', 1);
      idCount = filter.ids.length;
      shape |= idCount << 5;
      for (let i = 0; i < idCount; i++) params.push(v.id(filter.ids[i], ID_PATHS[i]!));
    }
    params.push(limit + 1);
    let sql = LIST_SQL.get(shape);
    if (sql === undefined) {
      // The conditions, `and`-joined, on unqualified pets columns, in the order of their values.
      const where: string[] = [];
      if (shape & 16) where.push('id > ?');
      if (shape & 2) where.push('status = ?');
      if (shape & 4) where.push('category_id = ?');
      if (shape & 8) where.push(nameCondition);
      if (idCount) where.push(`id in (${placeholders(idCount)})`);
      sql = `select ${PET_COLUMNS} from pets${where.length ? ` where ${where.join(' and ')}` : ''} order by id asc limit ?`;
      LIST_SQL.set(shape, sql);
    }
    return { sql, params, limit };
  }

  getPet(id: number): Promise<PetView> {
    return readOne(this.reader, PETS_BY_ID, id);
  }

  /** For batching: the pets among `ids` (missing ones are absent). */
  petsByIds(ids: readonly number[]): Promise<PetView[]> {
    return readMany(this.reader, PETS_BY_ID, ids);
  }

  /**
   * For batching `Category.pets`: the same keyset page (`limit` after `cursor`) of each category's
   * pets, in one statement however many categories (a window function ranks pets per category).
   */
  async petPagesInCategories(categoryIds: readonly number[], page: PageRequest): Promise<Map<number, Page<PetView>>> {
    const limit = pageSize(page.limit);
    const after = decodeCursor(page.cursor);
    const pages = new Map<number, Page<PetView>>(categoryIds.map((id) => [id, { items: [], nextCursor: null }]));
    if (categoryIds.length === 0) return pages;
    const ids = categoryIds.map((id) => v.id(id, 'categoryId'));
    const rows = await this.reader.all<PetRow>(
      `select ${PET_COLUMNS} from (select ${PET_COLUMNS}, row_number() over (partition by category_id order by id) as rn ` +
        `from pets where category_id in (${placeholders(ids.length)}) and id > ?) ranked where rn <= ? order by id asc`,
      [...ids, after, limit + 1],
    );
    const byCategory = new Map<number, PetView[]>();
    for (const view of rows.map(petRowToView)) byCategory.set(view.categoryId, [...(byCategory.get(view.categoryId) ?? []), view]);
    for (const [categoryId, views] of byCategory) pages.set(categoryId, toPage(views, limit));
    return pages;
  }

  async createPet(actor: Actor, input: PetInput): Promise<PetView> {
    requireCatalogStaff(actor);
    const name = v.nameText(input.name, 'name');
    const status = input.status === undefined || input.status === null ? 'available' : v.oneOf(input.status, 'status', PET_STATUSES);
    const categoryId = v.id(input.categoryId, 'categoryId');
    return this.inExistingCategory(categoryId, () =>
      this.em.transactional(async (em) => {
        const category = await this.referencedCategory(em, categoryId);
        const pet = new Pet(name, category, status);
        em.persist(pet);
        em.persist(new InventoryItem(pet, 1));
        await em.flush();
        await recordPetEvent(em, 'pet.created', toPetView(pet));
        return toPetView(pet);
      }),
    );
  }

  async updatePet(actor: Actor, id: number, input: PetInput): Promise<PetView> {
    requireCatalogStaff(actor);
    const petId = v.id(id, 'petId');
    const name = v.nameText(input.name, 'name');
    const categoryId = v.id(input.categoryId, 'categoryId');
    const status = input.status === undefined || input.status === null ? undefined : v.oneOf(input.status, 'status', PET_STATUSES);
    return this.inExistingCategory(categoryId, () =>
      this.em.transactional(async (em) => {
        // Touch the inventory row first: it is the lock every stock and status change takes, so this
        // update cannot interleave with an order being placed for the same pet.
        const locked = await em.nativeUpdate(InventoryItem, { pet: petId }, { quantity: raw('quantity') });
        const pet = locked ? await em.findOne(Pet, { id: petId }) : null;
        if (!pet) throw notFound('Pet', petId);
        const category = await this.referencedCategory(em, categoryId);
        if (status === 'available' && pet.status !== 'available') {
          const stock = await em.findOne(InventoryItem, { pet: petId });
          if (!stock || stock.quantity <= 0) {
            throw new DomainError('INSUFFICIENT_STOCK', 'A pet without stock cannot be made available; set its inventory first.');
          }
        }
        const statusBefore = pet.status;
        pet.name = name;
        pet.category = category;
        if (status) pet.status = status;
        await em.flush();
        await recordPetEvent(em, 'pet.updated', toPetView(pet));
        if (pet.status !== statusBefore) await recordInventoryChanged(em, petId);
        return toPetView(pet);
      }),
    );
  }

  /**
   * The category was read inside the transaction, but another one may delete it before the pet row
   * is written: the foreign key then refuses the write, which means the category does not exist (400).
   */
  private async inExistingCategory<T>(categoryId: number, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      if (error instanceof ForeignKeyConstraintViolationException) throw this.noSuchCategory(categoryId);
      throw error;
    }
  }

  async deletePet(actor: Actor, id: number): Promise<void> {
    requireCatalogStaff(actor);
    const petId = v.id(id, 'petId');
    await this.em.transactional(async (em) => {
      await em.nativeUpdate(InventoryItem, { pet: petId }, { quantity: raw('quantity') });
      const pet = await em.findOne(Pet, { id: petId });
      if (!pet) throw notFound('Pet', petId);
      if (await em.count(Order, { pet: petId, complete: false })) {
        throw new DomainError('PET_HAS_OPEN_ORDERS', 'The pet has open orders; complete or cancel them first.');
      }
      await em.nativeDelete(InventoryItem, { pet: petId });
      await em.nativeUpdate(Order, { pet: petId }, { pet: null });
      await em.nativeDelete(Pet, { id: petId });
      await recordPetEvent(em, 'pet.deleted', toPetView(pet));
    });
  }

  private async referencedCategory(em: EntityManager, categoryId: number): Promise<Category> {
    const category = await em.findOne(Category, { id: categoryId });
    if (!category) throw this.noSuchCategory(categoryId);
    return category;
  }

  private noSuchCategory(categoryId: number) {
    return noSuch('Category', categoryId, 'categoryId');
  }
}
