import { Entity, OneToOne, Property } from '@mikro-orm/core';
import { Pet } from './pet.entity.js';

/** Stock of one pet. Its status is the pet's status (stored once, on the pet). */
@Entity({ tableName: 'inventory' })
export class InventoryItem {
  @OneToOne({ entity: () => Pet, primary: true, deleteRule: 'cascade', updateRule: 'cascade', fieldName: 'pet_id' })
  pet: Pet;

  @Property({ type: 'integer' })
  quantity: number;

  constructor(pet: Pet, quantity: number) {
    this.pet = pet;
    this.quantity = quantity;
  }
}
