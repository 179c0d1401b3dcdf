import { Field, ID, Int, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { OrderView } from '../../../domain/index.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

@ObjectType('Order', {
  simpleResolvers: true,
  implements: NodeInterface,
  description: 'An order for a pet, open while `complete` is false.',
})
export class OrderType implements Omit<OrderView, 'accountId'> {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;

  @Field(() => ID, { nullable: true, description: 'The `id` of the ordered pet; null once the pet has been deleted.' })
  petId!: number | null;

  @Field(() => Int, { description: 'Number of units ordered, 1 to 100.' })
  quantity!: number;

  @Field(() => DateTimeResolver, { nullable: true, description: 'Requested ship date, or the actual one once complete.' })
  shipDate!: Date | null;

  @Field(() => Boolean, { description: 'Whether the order has been fulfilled.' })
  complete!: boolean;
}

@ObjectType('OrderConnection', { simpleResolvers: true, description: 'A page of orders.' })
export class OrderConnection extends connectionType('Order', OrderType) {}
