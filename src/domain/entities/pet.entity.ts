import { Entity, Enum, Index, ManyToOne, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';
import { Category } from './category.entity.js';

export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];

@Entity({ tableName: 'pets' })
export class Pet {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Property({ type: 'string', length: 100 })
  name: string;

  @Index({ name: 'pets_category_id_index' })
  @ManyToOne({ entity: () => Category, deleteRule: 'restrict', updateRule: 'cascade' })
  category: Category;

  @Index({ name: 'pets_status_index' })
  @Enum({ items: () => PET_STATUSES, type: 'string' })
  status: PetStatus;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(name: string, category: Category, status: PetStatus) {
    this.name = name;
    this.category = category;
    this.status = status;
  }
}
