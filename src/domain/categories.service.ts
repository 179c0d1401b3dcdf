import { ForeignKeyConstraintViolationException, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Category, DeletedCategory, Pet } from './entities/index.js';
import { DomainError, notFound } from './errors.js';
import type { Actor } from './actor.js';
import type { Page, PageRequest } from './pagination.js';
import * as v from './validate.js';
import type { CategoryView } from './views.js';
import type { SqlReader } from './reader.js';
import { CATEGORIES_BY_ID, DELETED_CATEGORIES_BY_ID, readMany, readOne, readPage, toCategoryView } from './rows.js';
import { requireCatalogStaff } from './pets.service.js';
import { recordCategoryEvent } from './events.service.js';

export interface CategoryInput {
  name: string;
  description?: string | null;
}

/** A category whose name equals another's ignoring case (kept by the migration to case folding), and that other. */
export interface CategoryNameCollision {
  id: number;
  name: string;
  sameAsId: number | null;
}

/**
 * The categories whose names collide with another's under case folding, which the migration to folded keys kept
 * (with a key of their own) rather than fail: the app logs them at start until they are renamed or merged.
 */
export async function categoryNameCollisions(em: EntityManager): Promise<CategoryNameCollision[]> {
  const colliding = await em.find(Category, { nameKey: { $like: `${v.COLLIDING_KEY_PREFIX}%` } }, { orderBy: { id: 'asc' } });
  const collisions: CategoryNameCollision[] = [];
  for (const category of colliding) {
    const other = await em.findOne(Category, { nameKey: v.nameKey(category.name) });
    collisions.push({ id: category.id, name: category.name, sameAsId: other?.id ?? null });
  }
  return collisions;
}

/** Categories: every rule about them, shared by both facades; reads plain SQL, writes through the ORM. */
export class CategoriesService {
  constructor(
    private readonly emOf: () => EntityManager,
    private readonly reader: SqlReader,
  ) {}

  /** The request's EntityManager fork, made on first use: a read-only request never forks one. */
  private get em(): EntityManager {
    return this.emOf();
  }

  listCategories(page: PageRequest): Promise<Page<CategoryView>> {
    return readPage(this.reader, CATEGORIES_BY_ID, page);
  }

  getCategory(id: number): Promise<CategoryView> {
    return readOne(this.reader, CATEGORIES_BY_ID, id);
  }

  /** For batching (GraphQL's `Pet.category` loader runs this for every page of pets). */
  categoriesByIds(ids: readonly number[]): Promise<CategoryView[]> {
    return readMany(this.reader, CATEGORIES_BY_ID, ids);
  }

  /**
   * The categories pets name, for navigating from a pet: each live one, else its last state when it has been deleted
   * (a deleted pet's last state, in an event, can name a category deleted after it). One more statement only when
   * some are missing.
   */
  async categoriesOfPets(ids: readonly number[]): Promise<CategoryView[]> {
    // The loader's ids are distinct.
    const live = await readMany(this.reader, CATEGORIES_BY_ID, ids);
    if (live.length === ids.length) return live;
    const found = new Set(live.map((c) => c.id));
    const gone = ids.filter((id) => !found.has(id));
    return [...live, ...(await readMany(this.reader, DELETED_CATEGORIES_BY_ID, gone))];
  }

  async createCategory(actor: Actor, input: CategoryInput): Promise<CategoryView> {
    requireCatalogStaff(actor);
    const { name, description } = this.categoryFields(input);
    const category = new Category(name, description);
    await this.saveCategory(this.em, category, 'category.created');
    return toCategoryView(category);
  }

  async updateCategory(actor: Actor, id: number, input: CategoryInput): Promise<CategoryView> {
    requireCatalogStaff(actor);
    const categoryId = v.id(id, 'categoryId');
    const { name, description } = this.categoryFields(input);
    const category = await this.em.findOne(Category, { id: categoryId });
    if (!category) throw notFound('Category', categoryId);
    category.name = name;
    category.nameKey = v.nameKey(name);
    category.description = description;
    await this.saveCategory(this.em, category, 'category.updated');
    return toCategoryView(category);
  }

  async deleteCategory(actor: Actor, id: number): Promise<void> {
    requireCatalogStaff(actor);
    const categoryId = v.id(id, 'categoryId');
    try {
      await this.em.transactional(async (em) => {
        const category = await em.findOne(Category, { id: categoryId });
        if (!category) throw notFound('Category', categoryId);
        if (await em.count(Pet, { category: categoryId })) throw this.categoryInUse();
        // Another delete of it committed while this one waited for the row: that one answered, this one finds nothing.
        if ((await em.nativeDelete(Category, { id: categoryId })) === 0) throw notFound('Category', categoryId);
        await em.insert(DeletedCategory, { id: categoryId, name: category.name, description: category.description, deletedAt: new Date() });
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
    const name = v.nameText(input.name, 'name');
    const description =
      input.description === undefined || input.description === null
        ? null
        : v.trimmedText(input.description, 'description', 1000, { min: 0 });
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
