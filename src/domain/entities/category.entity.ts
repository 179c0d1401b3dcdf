import { Entity, PrimaryKey, Property, Unique, BigIntType } from '@mikro-orm/core';

@Entity({ tableName: 'categories' })
export class Category {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Property({ type: 'string', length: 100 })
  name: string;

  /** Lower-cased name: the database enforces case-insensitive uniqueness on it, across instances. */
  @Unique({ name: 'categories_name_key_unique' })
  @Property({ type: 'string', length: 100 })
  nameKey: string;

  @Property({ type: 'string', length: 1000, nullable: true })
  description: string | null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(name: string, description: string | null) {
    this.name = name;
    this.nameKey = name.toLowerCase();
    this.description = description;
  }
}
