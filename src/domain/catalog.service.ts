import { UniqueConstraintViolationException, ForeignKeyConstraintViolationException, raw } from '@mikro-orm/core';
import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import { Category, InventoryItem, Order, Pet, PET_STATUSES, type PetStatus } from './entities/index.js';
import { DomainError, forbidden, notFound, validationFailed } from './errors.js';
import { isStaff, type Actor } from './actor.js';
import { decodeCursor, pageSize, toPage, type Page, type PageRequest } from './pagination.js';
import * as v from './validate.js';
import type { Id } from './validate.js';
import type { CategoryView, PetView } from './views.js';
import { recordCategoryEvent, recordInventoryChanged, recordPetEvent } from './events.service.js';

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

export interface CategoryInput {
  name: string;
  description?: string | null;
}

export const MAX_IDS = 100;

export const toPetView = (p: Pet): PetView => ({ id: p.id, name: p.name, categoryId: p.category.id, status: p.status });
export const toCategoryView = (c: Category): CategoryView => ({ id: c.id, name: c.name, description: c.description });

/** A `pets` row read with plain SQL; ids are strings on PostgreSQL (bigint), numbers on SQLite. */
interface PetRow {
  id: number | string;
  name: string;
  category_id: number | string;
  status: PetStatus;
}
const petRowToView = (r: PetRow): PetView => ({ id: Number(r.id), name: r.name, categoryId: Number(r.category_id), status: r.status });

interface CategoryRow {
  id: number | string;
  name: string;
  description: string | null;
}
const categoryRowToView = (r: CategoryRow): CategoryView => ({ id: Number(r.id), name: r.name, description: r.description });

function requireStaff(actor: Actor) {
  if (!isStaff(actor)) throw forbidden('Only staff can change the catalogue.');
}

/** Pets and categories: every rule of the catalogue, shared by both facades. */
export class CatalogService {
  constructor(private readonly em: EntityManager) {}

  async listPets(filter: PetFilter, page: PageRequest): Promise<Page<PetView>> {
    const limit = pageSize(page.limit);
    const after = decodeCursor(page.cursor);
    const where = ['id > ?'];
    const params: unknown[] = [after];
    if (filter.status !== undefined) {
      where.push('status = ?');
      params.push(v.oneOf(filter.status, 'status', PET_STATUSES));
    }
    if (filter.categoryId !== undefined) {
      where.push('category_id = ?');
      params.push(v.id(filter.categoryId, 'categoryId'));
    }
    if (filter.name !== undefined) {
      const condition = this.nameContains(v.trimmedText(filter.name, 'name', 100));
      where.push(condition.sql);
      params.push(condition.param);
    }
    if (filter.ids !== undefined) {
      if (filter.ids.length === 0 || filter.ids.length > MAX_IDS) {
        throw validationFailed(`ids takes 1 to ${MAX_IDS} ids.`, [{ path: 'ids', message: `1 to ${MAX_IDS} ids` }]);
      }
      const ids = filter.ids.map((id, i) => v.id(id, `ids[${i}]`));
      where.push(`id in (${ids.map(() => '?').join(', ')})`);
      params.push(...ids);
    }
    params.push(limit + 1);
    // The hottest read of both facades, so plain SQL over the entity's columns: the ORM's query
    // building and hydration cost ~1.4 ms of CPU per call here, this ~0.1 ms (README, "Performance").
    const rows = await this.em.execute<PetRow[]>(
      `select id, name, category_id, status from pets where ${where.join(' and ')} order by id asc limit ?`,
      params,
    );
    return toPage(rows.map(petRowToView), limit);
  }

  /**
   * A case-insensitive substring condition on the pet's name. PostgreSQL's lower() folds every
   * alphabet; SQLite's folds only ASCII, so there the text becomes a GLOB pattern in which each
   * letter is the set of its case forms (`[äÄ]`) and the GLOB wildcards stand for themselves.
   */
  private nameContains(text: string): { sql: string; param: string } {
    if (this.em.getPlatform() instanceof BaseSqlitePlatform) {
      const pattern = [...text]
        .map((c) => {
          const forms = new Set([c, c.toLowerCase(), c.toUpperCase(), c.toLowerCase().toUpperCase()].filter((f) => [...f].length === 1));
          return forms.size > 1 || '*?['.includes(c) ? `[${[...forms].join('')}]` : c;
        })
        .join('');
      return { sql: 'name glob ?', param: `*${pattern}*` };
    }
    // LIKE with an explicit escape character, so that %, _ and \ in the text stand for themselves.
    const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
    return { sql: `lower(name) like ? escape '\\'`, param: `%${escaped}%` };
  }

  async getPet(id: number): Promise<PetView> {
    const pet = await this.em.findOne(Pet, { id: v.id(id, 'petId') });
    if (!pet) throw notFound('Pet', id);
    return toPetView(pet);
  }

  /** For batching: the pets among `ids` (missing ones are absent). */
  async petsByIds(ids: readonly number[]): Promise<PetView[]> {
    if (ids.length === 0) return [];
    const pets = await this.em.find(Pet, { id: { $in: [...ids] } });
    return pets.map(toPetView);
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
    const placeholders = ids.map(() => '?').join(', ');
    const ranked = raw(
      (alias) =>
        `${alias}.id in (select r.id from (select p.id, row_number() over (partition by p.category_id order by p.id) as rn ` +
        `from pets p where p.category_id in (${placeholders}) and p.id > ?) r where r.rn <= ?)`,
      [...ids, after, limit + 1],
    );
    const rows = await this.em.find(Pet, { [ranked]: [] }, { orderBy: { id: 'asc' } });
    const byCategory = new Map<number, PetView[]>();
    for (const view of rows.map(toPetView)) byCategory.set(view.categoryId, [...(byCategory.get(view.categoryId) ?? []), view]);
    for (const [categoryId, views] of byCategory) pages.set(categoryId, toPage(views, limit));
    return pages;
  }

  async createPet(actor: Actor, input: PetInput): Promise<PetView> {
    requireStaff(actor);
    const name = v.trimmedText(input.name, 'name', 100);
    const status = input.status === undefined || input.status === null ? 'available' : v.oneOf(input.status, 'status', PET_STATUSES);
    const categoryId = v.id(input.categoryId, 'categoryId');
    return this.inExistingCategory(categoryId, () => this.em.transactional(async (em) => {
      const category = await this.referencedCategory(em, categoryId);
      const pet = new Pet(name, category, status);
      em.persist(pet);
      em.persist(new InventoryItem(pet, 1));
      await em.flush();
      await recordPetEvent(em, 'pet.created', toPetView(pet));
      return toPetView(pet);
    }));
  }

  async updatePet(actor: Actor, id: number, input: PetInput): Promise<PetView> {
    requireStaff(actor);
    const petId = v.id(id, 'petId');
    const name = v.trimmedText(input.name, 'name', 100);
    const categoryId = v.id(input.categoryId, 'categoryId');
    const status = input.status === undefined || input.status === null ? undefined : v.oneOf(input.status, 'status', PET_STATUSES);
    return this.inExistingCategory(categoryId, () => this.em.transactional(async (em) => {
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
    }));
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
    requireStaff(actor);
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
    return validationFailed(`Category ${categoryId} does not exist.`, [{ path: 'categoryId', message: 'no such category' }]);
  }

  async listCategories(page: PageRequest): Promise<Page<CategoryView>> {
    const limit = pageSize(page.limit);
    // Plain SQL, like listPets: a page of categories goes with every page of pets a REST client shows.
    const rows = await this.em.execute<CategoryRow[]>('select id, name, description from categories where id > ? order by id asc limit ?', [
      decodeCursor(page.cursor),
      limit + 1,
    ]);
    return toPage(rows.map(categoryRowToView), limit);
  }

  async getCategory(id: number): Promise<CategoryView> {
    const category = await this.em.findOne(Category, { id: v.id(id, 'categoryId') });
    if (!category) throw notFound('Category', id);
    return toCategoryView(category);
  }

  async categoriesByIds(ids: readonly number[]): Promise<CategoryView[]> {
    if (ids.length === 0) return [];
    // Plain SQL: GraphQL's `Pet.category` loader runs this for every page of pets.
    const rows = await this.em.execute<CategoryRow[]>(`select id, name, description from categories where id in (${ids.map(() => '?').join(', ')})`, [...ids]);
    return rows.map(categoryRowToView);
  }

  async createCategory(actor: Actor, input: CategoryInput): Promise<CategoryView> {
    requireStaff(actor);
    const { name, description } = this.categoryFields(input);
    const category = new Category(name, description);
    await this.saveCategory(this.em, category, 'category.created');
    return toCategoryView(category);
  }

  async updateCategory(actor: Actor, id: number, input: CategoryInput): Promise<CategoryView> {
    requireStaff(actor);
    const categoryId = v.id(id, 'categoryId');
    const { name, description } = this.categoryFields(input);
    const category = await this.em.findOne(Category, { id: categoryId });
    if (!category) throw notFound('Category', categoryId);
    category.name = name;
    category.nameKey = name.toLowerCase();
    category.description = description;
    await this.saveCategory(this.em, category, 'category.updated');
    return toCategoryView(category);
  }

  async deleteCategory(actor: Actor, id: number): Promise<void> {
    requireStaff(actor);
    const categoryId = v.id(id, 'categoryId');
    try {
      await this.em.transactional(async (em) => {
        const category = await em.findOne(Category, { id: categoryId });
        if (!category) throw notFound('Category', categoryId);
        if (await em.count(Pet, { category: categoryId })) throw this.categoryInUse();
        await em.nativeDelete(Category, { id: categoryId });
        await recordCategoryEvent(em, 'category.deleted', toCategoryView(category));
      });
    } catch (error) {
      // A pet created in the meantime by another instance: the foreign key refuses the delete.
      if (error instanceof ForeignKeyConstraintViolationException) throw this.categoryInUse();
      throw error;
    }
  }

  private categoryInUse() {
    return new DomainError('CATEGORY_IN_USE', 'Pets still belong to this category; move or delete them first.');
  }

  private categoryFields(input: CategoryInput) {
    const name = v.trimmedText(input.name, 'name', 100);
    const description =
      input.description === undefined || input.description === null ? null : v.trimmedText(input.description, 'description', 1000, { min: 0 });
    return { name, description };
  }

  private async saveCategory(em: EntityManager, category: Category, event: 'category.created' | 'category.updated') {
    try {
      await em.transactional(async (tx) => {
        tx.persist(category);
        await tx.flush();
        await recordCategoryEvent(tx, event, toCategoryView(category));
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) {
        em.clear();
        throw new DomainError('NAME_TAKEN', `A category named "${category.name}" already exists.`);
      }
      throw error;
    }
  }
}
