import { Field, ID, InputType, Int } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { OrderInput } from '../../../domain/store.service.js';

@InputType('NewOrderInput', { description: 'An order to place (REST `NewOrder`).' })
export class NewOrderInput implements OrderInput {
  @Field(() => ID)
  petId!: string;

  @Field(() => Int, { description: 'Number of units, 1 to 100.' })
  quantity!: number;

  @Field(() => DateTimeResolver, { nullable: true, description: 'Requested ship date.' })
  shipDate?: Date | null;
}

@InputType('OrderFilter', { description: 'Filters of `orders`; all given ones must match.' })
export class OrderFilterInput {
  @Field(() => Boolean, { nullable: true })
  complete?: boolean | null;

  @Field(() => ID, { nullable: true })
  petId?: string | null;
}
