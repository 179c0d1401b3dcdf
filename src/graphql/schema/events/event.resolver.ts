import { Arg, Args, Ctx, Query, Resolver } from 'type-graphql';
import type { EventView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { EventConnection, EventType } from './event.type.js';
import { CategoryType } from '../categories/category.type.js';
import { InventoryItemType } from '../store/inventory.type.js';
import { OrderType } from '../store/order.type.js';
import { PetType } from '../pets/pet.type.js';
import { eventIdOf } from './event-id.js';

/** An event's stored REST representation as the GraphQL object of its union member. */
export function toGraphQLEvent(event: EventView): EventType {
  const family = event.type.split('.')[0];
  const d = event.data as Record<string, unknown>;
  const data =
    family === 'order'
      ? Object.assign(new OrderType(), { ...d, shipDate: d.shipDate ? new Date(d.shipDate as string) : null })
      : family === 'inventory'
        ? Object.assign(new InventoryItemType(), d)
        : family === 'pet'
          ? Object.assign(new PetType(), d)
          : Object.assign(new CategoryType(), { description: null, ...d });
  return Object.assign(new EventType(), { id: event.id, type: event.type, createdAt: event.createdAt, data });
}

@Resolver(() => EventType)
export class EventResolver {
  @Query(() => EventConnection, {
    description:
      'The event feed, oldest first (REST `GET /events`): pass the cursor of the last event processed (its `databaseId`), or its `Event.id`, as `after` to continue from it. ' +
      '`types` takes event types or families such as `order.*`.',
  })
  async events(
    @Arg('types', () => [String], { nullable: true }) types: string[] | null,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Connection<EventType>> {
    // `after` is the cursor (digits: the event's databaseId, which the domain reads, `0` the start) or, as a
    // subscription's `after:` takes it, the event's `Event.id`.
    const after = page.after && !/^\d+$/.test(page.after) ? String(eventIdOf(page.after, 'after')) : page.after;
    const connection = await paged(
      { first: page.first, after },
      (request) => domainOf(ctx).events.listEvents(actorOf(ctx), { after: request.cursor, types: types ?? undefined }, request.limit),
      (e) => e.id,
      String,
    );
    // Edges and pageInfo are read by name: their cursors are getters, which a spread would not copy.
    return {
      pageInfo: connection.pageInfo,
      edges: connection.edges.map((edge) => ({ cursor: edge.cursor, node: toGraphQLEvent(edge.node) })),
    };
  }
}
