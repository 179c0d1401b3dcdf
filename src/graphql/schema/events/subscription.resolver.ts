import { Arg, Ctx, ID, Resolver, Root, Subscription, type SubscribeResolverData } from 'type-graphql';
import { canSee, DomainError, parseEventTypes, type EventView, type InventoryView } from '../../../domain/index.js';
import { actorOf, type GraphQLContext } from '../../context.js';
import { optionalDatabaseIdOf } from '../../global-id.js';
import { MAX_PAGE_SIZE } from '../../../domain/pagination.js';
import { isAfter, type EventPosition } from '../../../domain/event-position.js';
import { EventType } from './event.type.js';
import { InventoryItemType } from '../store/inventory.type.js';
import { toGraphQLEvent } from './event.resolver.js';
import { eventIdOf } from './event-id.js';

const ORDER_EVENTS = ['order.placed', 'order.completed', 'order.cancelled'] as const;

/** A back-fill reads the feed's largest page at a time, and pays for each page what `GET /v1/events?limit=100` costs. */
const BACKFILL_PAGE = MAX_PAGE_SIZE;

/** What a subscription pushes last when it must end with an error: its field resolver throws it. */
class Ending {
  constructor(readonly error: Error) {}
}

/** The event, or the error that ends the subscription (the client gets it as a `next` with `errors`, then `complete`). */
function eventOf(root: EventView | Ending): EventView {
  if (root instanceof Ending) throw root.error;
  return root;
}

interface Follow {
  /** Event types read from the database for a back-fill (undefined: all). */
  types?: readonly string[];
  /** What the subscription pushes of the events the caller may see. */
  accept: (event: EventView) => boolean;
  /** `after:`, decoded (eventIdOf): back-fill what came after that event before going live. */
  after?: number;
}

/**
 * The events the caller may see that pass `accept`, as an async iterator for graphql-js. Before each
 * event the request's loaders forget what they loaded, so nested fields read the state after it.
 * With `after`, it listens to the live stream first (buffering), then reads the database after that event
 * a feed page at a time; once a page comes back short it goes live, dropping the buffered events its back-fill
 * already gave (those at or before the last position it read), so there is no gap and no duplicate at the join.
 */
export async function visibleEvents(
  ctx: GraphQLContext,
  { types, accept, after }: Follow,
): Promise<AsyncIterableIterator<EventView | Ending>> {
  const actor = actorOf(ctx);
  if (!ctx.events) throw new DomainError('VALIDATION_FAILED', 'Subscriptions are served over the graphql-ws protocol at /graphql.');
  const backlogMax = ctx.events.backlogMax;
  // Where the back-fill reads next; null while live.
  let backfill: EventPosition | null = after === undefined ? null : await ctx.domain.events.resumePosition(actor, after);
  /** The last position the back-fill read: live events at or before it were (or will be) given by it. */
  let joined: EventPosition | null = null;
  /** How many times the buffer was dropped during a back-fill: a page read across a drop is not the last one. */
  let drops = 0;
  let page: EventView[] = [];
  const queue: Array<{ event: EventView; position: EventPosition }> = [];
  let waiting: ((result: IteratorResult<EventView | Ending>) => void) | null = null;
  let done = false;
  let ending: Ending | null = null;
  let unsubscribe: () => void = () => undefined;
  const finish = async (): Promise<IteratorResult<EventView>> => {
    if (!done) {
      done = true;
      backfill = null;
      unsubscribe();
      queue.length = 0;
      page = [];
      waiting?.({ value: undefined, done: true });
      waiting = null;
    }
    return { value: undefined, done: true };
  };
  /** Ends with `error` as the last answer, rather than a bare `complete`. */
  const fail = (error: Error) => {
    if (done || ending) return;
    ending = new Ending(error);
    queue.length = 0;
    page = [];
    unsubscribe();
    if (waiting) {
      const resolve = waiting;
      waiting = null;
      resolve({ value: ending, done: false });
      void finish();
    }
  };
  const tooSlow = () =>
    fail(
      new DomainError(
        'SUBSCRIBER_TOO_SLOW',
        `More than ${backlogMax} events (the backlog bound) waited for this subscription's client to read them, so it ended; ` +
          'none is lost: subscribe again with after: the last Event.id you received.',
      ),
    );
  unsubscribe = await ctx.events.subscribe((event, position) => {
    if (done || ending || !canSee(actor, event) || !accept(event)) return;
    if (joined && !isAfter(position, joined)) return;
    const live = backfill === null && !page.length;
    if (live && waiting) {
      const resolve = waiting;
      waiting = null;
      resolve({ value: event, done: false });
    } else if (queue.push({ event, position }) > backlogMax) {
      if (live) return tooSlow();
      // Behind while back-filling: what the buffer held is in the database, so the back-fill reads on for it.
      queue.length = 0;
      drops++;
      backfill ??= joined;
    }
  });
  /** The next back-filled event, or null once the back-fill has caught up (then the stream is live). */
  const backfilled = async (): Promise<EventView | null> => {
    while (!page.length && backfill) {
      await ctx.charge?.(1);
      // Completed (or its socket closed) while the page was charged: nothing more is read, nor charged.
      if (done || ending || !backfill) return null;
      const dropsBefore = drops;
      // One more than a page, as the feed reads to know whether a next page follows: N events cost what paging them costs.
      const rows = await ctx.domain.events.visibleAfter(actor, backfill, types, BACKFILL_PAGE + 1);
      if (done || ending || !backfill) return null;
      const read = rows.slice(0, BACKFILL_PAGE);
      if (read.length) joined = backfill = read.at(-1)!.position;
      joined ??= backfill;
      page = read.map((r) => r.event).filter(accept);
      if (rows.length <= BACKFILL_PAGE && drops === dropsBefore) backfill = null;
      while (queue.length && !isAfter(queue[0]!.position, joined)) queue.shift();
      ctx.loaders.clearAll();
    }
    return page.shift() ?? null;
  };
  const take = async (): Promise<IteratorResult<EventView | Ending>> => {
    if (done) return { value: undefined, done: true };
    if (ending) {
      const last = ending;
      await finish();
      return { value: last, done: false };
    }
    if (page.length || backfill) {
      try {
        const event = await backfilled();
        if (event) return { value: event, done: false };
      } catch (error) {
        fail(error as Error);
        return take();
      }
    }
    // Completed, or failed, while a back-fill page was charged or read: end now, nothing will wake a wait.
    if (done) return { value: undefined, done: true };
    if (ending) return take();
    while (queue.length) {
      const { event, position } = queue.shift()!;
      if (joined && !isAfter(position, joined)) continue;
      return { value: event, done: false };
    }
    return new Promise((resolve) => (waiting = resolve));
  };
  const iterator: AsyncIterableIterator<EventView | Ending> = {
    next: async () => {
      for (;;) {
        const result = await take();
        if (result.done || result.value instanceof Ending) return result;
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

const afterOf = (value: string | null | undefined) => (value === undefined || value === null ? undefined : eventIdOf(value, 'after'));

const AFTER_DESCRIPTION =
  'Resume after this event (an `Event.id`, the last one received, or its `databaseId`: REST’s event id): first the events after it the caller may see, then live, none missed or repeated. ' +
  'Back-filling reads pages of 100 events, each costing 1 as a feed page does; an event older than the 30-day retention is EVENT_EXPIRED, ' +
  'an id that is not one of an event the caller may see VALIDATION_FAILED.';

@Resolver()
export class SubscriptionResolver {
  @Subscription(() => EventType, {
    description:
      'Events as they commit (graphql-ws at /graphql; the key goes in connection_init as {"X-API-Key": …}), with the visibility of `events`. ' +
      '`types` takes event types or families such as `order.*`. Starting costs 1; each answer pushed costs its document’s cost less 1 (shown in extensions.cost).',
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { types?: string[] | null; after?: string | null }, GraphQLContext>) => {
      const types = parseEventTypes(args.types ?? undefined);
      return visibleEvents(context, { types, accept: (e) => !types || types.includes(e.type as never), after: afterOf(args.after) });
    },
  })
  events(
    @Root() event: EventView | Ending,
    @Arg('types', () => [String], { nullable: true }) _types: string[] | null,
    @Arg('after', () => ID, { nullable: true, description: AFTER_DESCRIPTION }) _after: string | null,
  ): EventType {
    return toGraphQLEvent(eventOf(event));
  }

  @Subscription(() => EventType, {
    description:
      "Order events (order.placed, order.completed, order.cancelled) of the caller's orders (staff: all), optionally of one order.",
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { id?: string | null; after?: string | null }, GraphQLContext>) => {
      const id = optionalDatabaseIdOf('Order', args.id, 'id');
      return visibleEvents(context, {
        types: ORDER_EVENTS,
        accept: (e) => e.type.startsWith('order.') && (id === undefined || e.data.id === id),
        after: afterOf(args.after),
      });
    },
  })
  orderUpdated(
    @Root() event: EventView | Ending,
    @Arg('id', () => ID, { nullable: true }) _id: string | null,
    @Arg('after', () => ID, { nullable: true, description: AFTER_DESCRIPTION }) _after: string | null,
  ): EventType {
    return toGraphQLEvent(eventOf(event));
  }

  @Subscription(() => InventoryItemType, {
    description: "A pet's stock and status after each change (inventory.changed), of every pet or of `petId`.",
    subscribe: ({ args, context }: SubscribeResolverData<unknown, { petId?: string | null }, GraphQLContext>) => {
      const petId = optionalDatabaseIdOf('Pet', args.petId, 'petId');
      return visibleEvents(context, { accept: (e) => e.type === 'inventory.changed' && (petId === undefined || e.data.petId === petId) });
    },
  })
  inventoryChanged(
    @Root() root: EventView | Ending,
    @Arg('petId', () => ID, { nullable: true }) _petId: string | null,
    @Ctx() _ctx: GraphQLContext,
  ): InventoryView {
    return eventOf(root).data as unknown as InventoryView;
  }
}
