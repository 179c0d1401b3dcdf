import { Entity, Index, ManyToOne, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';
import { Account } from './account.entity.js';
import { Pet } from './pet.entity.js';

@Entity({ tableName: 'orders' })
export class Order {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  /** Cleared when the pet is deleted (only possible once no order for it is open). */
  @Index({ name: 'orders_pet_id_index' })
  @ManyToOne({ entity: () => Pet, nullable: true, deleteRule: 'set null' })
  pet: Pet | null;

  @Index({ name: 'orders_account_id_index' })
  @ManyToOne({ entity: () => Account, deleteRule: 'cascade' })
  account: Account;

  @Property({ type: 'integer' })
  quantity: number;

  @Property({ type: 'datetime', nullable: true })
  shipDate: Date | null;

  @Property({ type: 'boolean' })
  complete: boolean = false;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(pet: Pet, account: Account, quantity: number, shipDate: Date | null) {
    this.pet = pet;
    this.account = account;
    this.quantity = quantity;
    this.shipDate = shipDate;
  }
}
