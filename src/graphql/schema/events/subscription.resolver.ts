import { Arg, Ctx, ID, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import { canSee, DomainError, parseEventTypes, type EventView, type InventoryView } from '../../../domain/index.js';
import { actorOf, type GraphQLContext } from '../../context.js';
import { optionalId } from '../../../domain/validate.js';
import { EventType } from './event.type.js';
import { InventoryItemType } from '../store/inventory.type.js';
import { toGraphQLEvent } from './event.resolver.js';

/** A slow subscriber may fall this far behind; past it the subscription ends rather than grow without bound. */
const MAX_BACKLOG = 1000;

/**
 * The events the caller may see that pass `accept`, as an async iterator for graphql-js. Before each
 * event the request's loaders forget what they loaded, so nested fields read the state after it.
 */
async function visibleEvents(ctx: GraphQLContext, accept: (event: EventView) => boolean): Promise<AsyncIterableIterator<EventView>> {
  const actor = actorOf(ctx);
  if (!ctx.events) throw new DomainError('VALIDATION_FAILED', 'Subscriptions are served over the graphql-ws protocol at /graphql.');
  const queue: EventView[] = [];
  let waiting: ((result: IteratorResult<EventView>) => void) | null = null;
  let done = false;
  let unsubscribe: () => void = () => undefined;
  const finish = async (): Promise<IteratorResult<EventView>> => {
    if (!done) {
      done = true;
      unsubscribe();
      queue.length = 0;
      waiting?.({ value: undefined, done: true });
      waiting = null;
    }
    return { value: undefined, done: true };
  };
  unsubscribe = await ctx.events.subscribe((event) => {
    if (done || !canSee(actor, event) || !accept(event)) return;
    if (waiting) {
      const resolve = waiting;
      waiting = null;
      resolve({ value: event, done: false });
    } else if (queue.push(event) > MAX_BACKLOG) void finish();
  });
  const take = (): Promise<IteratorResult<EventView>> => {
    if (queue.length) return Promise.resolve({ value: queue.shift()!, done: false });
    if (done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (waiting = resolve));
  };
  const iterator: AsyncIterableIterator<EventView> = {
    next: async () => {
      for (;;) {
        const result = await take();
        if (result.done) return result;
        // The key as it stands now: revoked or banned ends the subscription, a demoted account sees less.
        const current = ctx.currentActor ? await ctx.currentActor() : actor;
        if (!current) return finish();
        if (!canSee(current, result.value)) continue;
        ctx.loaders.clearAll();
        return result;
      }
    },
    return: finish,
    throw: async (error: unknown) => {
      await finish();
      throw error;
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

@Resolver()
export class SubscriptionResolver {
  @Subscription(() => EventType, {
    description:
      'Events as they commit (graphql-ws at /graphql; the key goes in connection_init as {"X-API-Key": …}), with the visibility of `events`. ' +
      '`types` takes event types or families such as `order.*`. Starting costs 1; each answer pushed costs its document’s cost less 1 (shown in extensions.cost).',
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { types?: string[] | null }, GraphQLContext>) => {
      const types = parseEventTypes(args.types ?? undefined);
      return visibleEvents(context, (e) => !types || types.includes(e.type as never));
    },
  })
  events(@Root() event: EventView, @Arg('types', () => [String], { nullable: true }) _types: string[] | null): EventType {
    return toGraphQLEvent(event);
  }

  @Subscription(() => EventType, {
    description:
      "Order events (order.placed, order.completed, order.cancelled) of the caller's orders (staff: all), optionally of one order.",
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { id?: string | null }, GraphQLContext>) => {
      const id = optionalId(args.id, 'id');
      return visibleEvents(context, (e) => e.type.startsWith('order.') && (id === undefined || e.data.id === id));
    },
  })
  orderUpdated(@Root() event: EventView, @Arg('id', () => ID, { nullable: true }) _id: string | null): EventType {
    return toGraphQLEvent(event);
  }

  @Subscription(() => InventoryItemType, {
    description: "A pet's stock and status after each change (inventory.changed), of every pet or of `petId`.",
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { petId?: string | null }, GraphQLContext>) => {
      const petId = optionalId(args.petId, 'petId');
      return visibleEvents(context, (e) => e.type === 'inventory.changed' && (petId === undefined || e.data.petId === petId));
    },
  })
  inventoryChanged(
    @Root() event: EventView,
    @Arg('petId', () => ID, { nullable: true }) _petId: string | null,
    @Ctx() _ctx: GraphQLContext,
  ): InventoryView {
    return event.data as unknown as InventoryView;
  }
}
