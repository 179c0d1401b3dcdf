import { Arg, Args, Ctx, Directive, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { OrderView, PetView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf, optionalDatabaseIdOf } from '../../global-id.js';
import { REFERENCE_IDS } from '../node/node.type.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { OrderConnection, OrderType } from './order.type.js';
import { NewOrderInput, OrderFilterInput } from './order.input.js';
import { PetType } from '../pets/pet.type.js';
import { EXPERIMENTAL } from '../stability.directive.js';

@Resolver(() => OrderType)
export class OrderResolver {
  @Query(() => OrderConnection, {
    description: "Orders in id order: a customer sees only its own account's orders, staff sees all (REST `GET /store/orders`).",
  })
  async orders(
    @Arg('filter', () => OrderFilterInput, { nullable: true }) filter: OrderFilterInput | null,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Connection<OrderView>> {
    const where = { complete: filter?.complete ?? undefined, petId: optionalDatabaseIdOf('Pet', filter?.petId, 'petId') };
    return paged(
      page,
      (request) => domainOf(ctx).store.listOrders(actorOf(ctx), where, request),
      (o) => o.id,
    );
  }

  @Query(() => OrderType, {
    nullable: true,
    description: "One order, for its owner or staff; another account's order is NOT_FOUND (REST `GET /store/orders/{orderId}`).",
  })
  async order(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<OrderView> {
    return domainOf(ctx).store.getOrder(actorOf(ctx), databaseIdOf('Order', id, 'id'));
  }

  @Mutation(() => OrderType, {
    nullable: true,
    description:
      'Places an order (REST `POST /store/orders`). With `idempotencyKey` (≤ 255 characters, kept 24 h), a retry with the same ' +
      'input replays the first outcome; the same key with another input is IDEMPOTENCY_KEY_REUSED.',
  })
  async placeOrder(
    @Arg('input', () => NewOrderInput) input: NewOrderInput,
    @Arg('idempotencyKey', () => String, { nullable: true }) idempotencyKey: string | null,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrderView> {
    const placed = { ...input, petId: databaseIdOf('Pet', input.petId, 'petId') };
    const { order } = await domainOf(ctx).store.placeOrder(actorOf(ctx), placed, idempotencyKey ?? undefined);
    return order;
  }

  @Mutation(() => OrderType, {
    nullable: true,
    description: 'Staff: fulfils an open order; `shipDate` defaults to now (REST `PATCH /store/orders/{orderId}`).',
  })
  async completeOrder(
    @Arg('id', () => ID) id: string,
    @Arg('shipDate', () => DateTimeResolver, { nullable: true }) shipDate: Date | null,
    @Ctx() ctx: GraphQLContext,
  ): Promise<OrderView> {
    return domainOf(ctx).store.completeOrder(actorOf(ctx), databaseIdOf('Order', id, 'id'), shipDate ?? undefined);
  }

  @Directive(EXPERIMENTAL)
  @Mutation(() => ID, {
    nullable: true,
    description: 'Owner or staff: cancels an open order and restocks; returns its id (REST `DELETE /store/orders/{orderId}`).',
  })
  async cancelOrder(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).store.cancelOrder(actorOf(ctx), databaseIdOf('Order', id, 'id'));
    return id;
  }

  @FieldResolver(() => ID, { nullable: true, description: 'The `id` of the ordered pet; null once the pet has been deleted.' })
  petId(@Root() order: OrderView): string | null {
    return REFERENCE_IDS.Order.petId(order);
  }

  @FieldResolver(() => PetType, { nullable: true, description: 'The ordered pet; null once it has been deleted.' })
  async pet(@Root() order: OrderView, @Ctx() ctx: GraphQLContext): Promise<PetView | null> {
    return order.petId === null ? null : ctx.loaders.pets.load(order.petId);
  }
}
