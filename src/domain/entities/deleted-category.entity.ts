import { Entity, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';

/**
 * A deleted category's last state, written in the transaction that deletes it: `Pet.category` of a pet whose
 * category has since been deleted (a deleted pet's last state in an event) answers it. Category ids are never
 * reused (both databases' ids only grow), so an id is either live or here.
 */
@Entity({ tableName: 'deleted_categories' })
export class DeletedCategory {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: false })
  id!: number;

  @Property({ type: 'string', length: 100 })
  name!: string;

  @Property({ type: 'string', length: 1000, nullable: true })
  description!: string | null;

  @Property({ type: 'datetime' })
  deletedAt!: Date;
}
