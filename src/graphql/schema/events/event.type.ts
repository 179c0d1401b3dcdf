import { createUnionType, Field, ID, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import { connectionType } from '../connection.type.js';
import { CategoryType } from '../categories/category.type.js';
import { InventoryItemType } from '../store/inventory.type.js';
import { OrderType } from '../store/order.type.js';
import { PetType } from '../pets/pet.type.js';
import { NodeInterface } from '../node/node.type.js';

export const EventDataUnion = createUnionType({
  name: 'EventData',
  description: 'The resource an event is about, as it stood after the change (a deleted one: its last state).',
  types: () => [OrderType, InventoryItemType, PetType, CategoryType] as const,
});

@ObjectType('Event', {
  simpleResolvers: true,
  implements: NodeInterface,
  description:
    'Something that changed, written in the same transaction as the change and kept 30 days (REST `GET /events`, webhooks). ' +
    'A customer sees catalogue and inventory events and the events of its own orders; staff sees all.',
})
export class EventType {
  @Field(() => ID, {
    description:
      'Global and opaque, as every `id`: pass it as a subscription’s `after:` to resume. `databaseId` is the feed’s id (REST `GET /events`), ' +
      'assigned in commit order, and the `webhook-id` of its webhook deliveries.',
  })
  id!: number;

  @Field(() => String, {
    description:
      'order.placed, order.completed, order.cancelled, inventory.changed, pet.created, pet.updated, pet.deleted, ' +
      'category.created, category.updated or category.deleted; new types may be added.',
  })
  type!: string;

  @Field(() => DateTimeResolver, { description: 'When the change committed.' })
  createdAt!: Date;

  @Field(() => EventDataUnion)
  data!: typeof EventDataUnion;
}

@ObjectType('EventConnection', {
  simpleResolvers: true,
  description: 'A page of events, oldest first; the cursor of an event is its `databaseId`.',
})
export class EventConnection extends connectionType('Event', EventType) {}
