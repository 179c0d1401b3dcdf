import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import type { SqlTransaction } from './writer.js';
import type { FilterQuery } from '@mikro-orm/core';
import { Event, WebhookDelivery } from './entities/index.js';
import { isStaff, type Actor } from './actor.js';
import { pageSize, type Page } from './pagination.js';
import { validationFailed } from './errors.js';
import { categoryRepresentation, orderRepresentation } from './representations.js';
import type { CategoryView, EventView, InventoryView, OrderView, PetView } from './views.js';
import * as v from './validate.js';
import { currentTraceparent } from './trace-context.js';

export const EVENT_TYPES = [
  'order.placed',
  'order.completed',
  'order.cancelled',
  'inventory.changed',
  'pet.created',
  'pet.updated',
  'pet.deleted',
  'category.created',
  'category.updated',
  'category.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** How long events are kept (the feed's and redelivery's horizon). */
export const EVENT_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** The PostgreSQL channel notified when events commit (src/events/outbox-notifier.ts). */
export const EVENTS_CHANNEL = 'petstore_events';

/** Any constant: the PostgreSQL advisory lock that serialises the writers of events. */
const EVENT_WRITERS_LOCK = 0x5e7e47;
/** Takes the event writers' turn and queues the NOTIFY (see recordEvent). */
const EVENT_WRITERS_TURN = `select pg_advisory_xact_lock(?), pg_notify('${EVENTS_CHANNEL}', '')`;

/**
 * Writes one event in the caller's transaction (the outbox: no change without its event, no event
 * without its change). Call it last in the transaction. On PostgreSQL a transaction-scoped advisory
 * lock makes event writers take turns from here to their commit, so ids become visible in id order
 * and a reader that has seen event n never later finds an event below n (a sequence alone would
 * let transaction 11 commit before transaction 10). SQLite has one writer at a time anyway.
 */
export async function recordEvent(em: EntityManager, type: EventType, data: object, accountId: number | null = null): Promise<void> {
  // The NOTIFY is delivered at commit (and not at all on rollback): it wakes the outbox readers of every instance.
  if (em.getPlatform() instanceof BaseSqlitePlatform) {
    await em.insert(Event, { type, data: JSON.stringify(data), accountId, createdAt: new Date(), traceparent: currentTraceparent() });
    return;
  }
  await em.execute(EVENT_WRITERS_TURN, [EVENT_WRITERS_LOCK]);
  // The server's clock after the turn, as insertEvents stamps them: created_at follows the id (the purge relies on it).
  await em.execute(insertEventsSql(1, 'postgresql'), [type, JSON.stringify(data), accountId, currentTraceparent()]);
}

interface NewEvent {
  type: EventType;
  data: object;
  accountId: number | null;
}

/**
 * `recordEvent` for the plain-SQL writer (src/domain/writer.ts): the same rows, the same PostgreSQL
 * turn-taking and NOTIFY, all the events in one insert (ids in the order given). Written last
 * (`runLast`): on PostgreSQL the turn, the insert and the COMMIT go to the server as one message, so
 * the writers' turn lasts the server's time for them, not round trips through a busy event loop.
 */
export async function insertEvents(tx: SqlTransaction, events: readonly NewEvent[]): Promise<void> {
  if (!events.length) return;
  if (tx.dialect === 'postgresql') await tx.runLast(EVENT_WRITERS_TURN, [EVENT_WRITERS_LOCK]);
  // On the hottest write: one SQL text per row count and dialect (the writer finds its prepared statement by it), no per-call closures.
  const params: unknown[] = [];
  const traceparent = currentTraceparent();
  if (tx.dialect === 'postgresql') {
    // Stamped by the server after the writers' turn (the insert runs after the lock, in the same message), so
    // created_at follows the id as the purge expects (EventsService.purgeExpired), as recordEvent's do.
    for (const e of events) params.push(e.type, JSON.stringify(e.data), e.accountId, traceparent);
    await tx.runLast(insertEventsSql(events.length, 'postgresql'), params);
  } else {
    const createdAt = new Date();
    for (const e of events) params.push(e.type, JSON.stringify(e.data), e.accountId, traceparent, createdAt);
    await tx.runLast(insertEventsSql(events.length, 'sqlite'), params);
  }
}

const INSERT_EVENTS_SQL = { sqlite: [] as string[], postgresql: [] as string[] };
const insertEventsSql = (rows: number, dialect: 'sqlite' | 'postgresql') =>
  (INSERT_EVENTS_SQL[dialect][rows] ??= `insert into events (type, data, account_id, traceparent, created_at) values ${Array.from({ length: rows }, () =>
    dialect === 'postgresql' ? '(?, ?, ?, ?, clock_timestamp())' : '(?, ?, ?, ?, ?)',
  ).join(', ')}`);

export const recordOrderEvent = (em: EntityManager, type: 'order.placed' | 'order.completed' | 'order.cancelled', order: OrderView) =>
  recordEvent(em, type, orderRepresentation(order), order.accountId);

export const recordPetEvent = (em: EntityManager, type: 'pet.created' | 'pet.updated' | 'pet.deleted', pet: PetView) =>
  recordEvent(em, type, pet);

export const recordCategoryEvent = (em: EntityManager, type: 'category.created' | 'category.updated' | 'category.deleted', category: CategoryView) =>
  recordEvent(em, type, categoryRepresentation(category));

/** `inventory.changed` with the pet's stock and status as they stand in this transaction. */
export async function recordInventoryChanged(em: EntityManager, petId: number): Promise<void> {
  const [row] = await em.execute<Array<{ quantity: number | string; status: PetView['status'] }>>(
    'select i.quantity, p.status from inventory i join pets p on p.id = i.pet_id where i.pet_id = ?',
    [petId],
  );
  if (row) await recordEvent(em, 'inventory.changed', { petId, quantity: Number(row.quantity), status: row.status } satisfies InventoryView);
}

export const toEventView = (e: Event): EventView => ({
  id: e.id,
  type: e.type as EventType,
  createdAt: e.createdAt,
  data: JSON.parse(e.data) as Record<string, unknown>,
  accountId: e.accountId,
  traceparent: e.traceparent,
});

/** Whether an account may see an event: staff all; customers catalogue and inventory events and their own orders'. */
export const canSee = (viewer: { role: Actor['role']; accountId: number }, event: { accountId: number | null }) =>
  viewer.role === 'staff' || event.accountId === null || event.accountId === viewer.accountId;

/** The event types a `types` filter names: exact types or a family such as `order.*`; empty means all. */
export function parseEventTypes(value: unknown, path = 'types'): EventType[] | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const names = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : [value];
  const out = new Set<EventType>();
  for (const name of names.map((n) => (typeof n === 'string' ? n.trim() : n))) {
    const family = typeof name === 'string' && name.endsWith('.*') ? name.slice(0, -1) : null;
    const matched = EVENT_TYPES.filter((t) => t === name || (family !== null && t.startsWith(family)));
    if (!matched.length) {
      const message = `must name event types such as order.placed or order.* (known: ${EVENT_TYPES.join(', ')})`;
      throw validationFailed(`${path} ${message}.`, [{ path, message }]);
    }
    for (const t of matched) out.add(t);
  }
  return [...out];
}

/** An event id to read after: 0 (from the oldest kept) or a positive id. */
export function parseAfter(value: unknown, path = 'after'): number {
  if (value === undefined || value === null || value === '' || value === 0 || value === '0') return 0;
  return v.id(value, path);
}

export interface EventFilter {
  /** Only events with a greater id; the cursor of an event is its id. */
  after?: unknown;
  types?: unknown;
}

/** The event feed and the outbox's upkeep. */
export class EventsService {
  constructor(private readonly em: EntityManager) {}

  /** Events the caller may see, oldest first; the next page starts after the last id. */
  async listEvents(actor: Actor, filter: EventFilter, limit?: number): Promise<Page<EventView>> {
    const size = pageSize(limit);
    const after = parseAfter(filter.after);
    const types = parseEventTypes(filter.types);
    const where: FilterQuery<Event> = { id: { $gt: after } };
    if (types) where.type = { $in: types };
    if (!isStaff(actor)) where.$or = [{ accountId: null }, { accountId: actor.accountId }];
    const rows = await this.em.find(Event, where, { orderBy: { id: 'asc' }, limit: size + 1 });
    const items = rows.slice(0, size).map(toEventView);
    return { items, nextCursor: rows.length > size && items.length ? String(items.at(-1)!.id) : null };
  }

  /** Every event after `after`, oldest first, whoever may see it (for relays that filter per recipient). */
  async eventsAfter(after: number, limit: number): Promise<EventView[]> {
    const rows = await this.em.find(Event, { id: { $gt: after } }, { orderBy: { id: 'asc' }, limit });
    return rows.map(toEventView);
  }

  /** The id of the newest event, 0 when there is none. */
  async lastEventId(): Promise<number> {
    const [row] = await this.em.execute<Array<{ id: number | string | null }>>('select max(id) as id from events');
    return Number(row?.id ?? 0);
  }

  /**
   * Drops events, and webhook delivery attempts, older than the retention period; returns how many
   * events went. The newest event always stays, so event ids never go back: the feed's cursors and the
   * webhook relay resume after an event id.
   *
   * Events are stamped in their transaction after the writers' turn, so `createdAt` follows the id:
   * the events to drop are those below the first one within the period. `events` has no index on
   * `createdAt` (every order would write its page too): that first event is found by reading in id
   * order, through exactly the rows that go (an hour's worth at the hourly purge), and they go by id.
   * An instance whose clock is behind the others' can make an event go or stay a little early or late
   * (by the clocks' difference, on a 30-day horizon).
   */
  async purgeExpired(now = new Date()): Promise<number> {
    const horizon = new Date(now.getTime() - EVENT_RETENTION_MS);
    await this.em.nativeDelete(WebhookDelivery, { createdAt: { $lt: horizon }, status: { $ne: 'pending' } });
    const [kept] = await this.em.find(Event, { createdAt: { $gte: horizon } }, { orderBy: { id: 'asc' }, limit: 1, fields: ['id'] });
    const bound = kept ? kept.id : await this.lastEventId();
    return this.em.nativeDelete(Event, { id: { $lt: bound } });
  }
}

/**
 * Events as they commit, pushed to listeners on this instance (GraphQL subscriptions). The
 * implementation reads the shared outbox, so an event committed on any instance reaches every one.
 */
export interface EventSubscriptions {
  /** Calls `listener` with each event committed from now on; returns the unsubscribe function. */
  subscribe(listener: (event: EventView) => void): Promise<() => void>;
}
