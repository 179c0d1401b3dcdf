import { Field, ID, Int, ObjectType } from 'type-graphql';
import type { InventoryView } from '../../../domain/index.js';
import type { PetStatus } from '../../../domain/entities/index.js';
import { PetStatusEnum } from '../enums.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

@ObjectType('InventoryItem', {
  simpleResolvers: true,
  implements: NodeInterface,
  description: "The stock of one pet. Its `status` is the pet's status; its REST twin is `/v1/store/inventory/{petId}`.",
})
export class InventoryItemType implements InventoryView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: string;

  @Field(() => ID, { description: 'The `id` of the pet this stock belongs to.' })
  petId!: number;

  @Field(() => Int, { description: 'Current stock count, 0 to 1000000.' })
  quantity!: number;

  @Field(() => PetStatusEnum)
  status!: PetStatus;
}

@ObjectType('InventoryItemConnection', { simpleResolvers: true, description: 'A page of inventory entries.' })
export class InventoryItemConnection extends connectionType('InventoryItem', InventoryItemType) {}
