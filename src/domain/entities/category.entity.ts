import { Entity, PrimaryKey, Property, Unique, BigIntType } from '@mikro-orm/core';
import { nameKey } from '../validate.js';

@Entity({ tableName: 'categories' })
export class Category {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Property({ type: 'string', length: 100 })
  name: string;

  /**
   * The name case-folded (`nameKey`): the database enforces uniqueness ignoring case on it, across instances. Up to
   * three characters per character of the name.
   */
  @Unique({ name: 'categories_name_key_unique' })
  @Property({ type: 'string', length: 300 })
  nameKey: string;

  @Property({ type: 'string', length: 1000, nullable: true })
  description: string | null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(name: string, description: string | null) {
    this.name = name;
    this.nameKey = nameKey(name);
    this.description = description;
  }
}
