import { setTimeout } from 'node:timers/promises';
import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import type { SqlTransaction } from './writer.js';
import { DeletedCategory, Event, WebhookDelivery } from './entities/index.js';
import { isStaff, type Actor } from './actor.js';
import { pageSize, type Page } from './pagination.js';
import { DomainError, notFound, validationFailed } from './errors.js';
import { categoryRepresentation, orderRepresentation } from './representations.js';
import type { CategoryView, EventView, InventoryView, OrderView, PetView } from './views.js';
import * as v from './validate.js';
import { currentTraceparent } from './trace-context.js';
import { OUTBOX_START, type EventPosition } from './event-position.js';

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
const DAY_MS = 24 * 3600 * 1000;
/**
 * How long a feed read waits, at most, for events already committed behind an older transaction still running
 * (PostgreSQL): past it, the page holds what may be read and the rest comes on a later read, never skipped.
 */
export const FEED_SETTLE_MS = 1000;

/**
 * The PostgreSQL channel on which instances announce their commits, after them (src/events/outbox-notifier.ts).
 * No writing transaction NOTIFYs: PostgreSQL would commit every notifying transaction one at a time.
 */
export const EVENTS_CHANNEL = 'petstore_events';

/**
 * Writes one event in the caller's transaction (the outbox: no change without its event, no event
 * without its change). Call it last in the transaction. Writers do not take turns: on PostgreSQL each
 * event records its transaction's id, and readers read in (transaction id, id) order only below the
 * snapshot's horizon (`readEvents`), where every transaction of this database has ended, so a transaction that commits after
 * a later one is read after it, never skipped. SQLite has one writer at a time: ids are in commit order.
 */
export async function recordEvent(em: EntityManager, type: EventType, data: object, accountId: number | null = null): Promise<void> {
  if (em.getPlatform() instanceof BaseSqlitePlatform) {
    await em.insert(Event, {
      type,
      data: JSON.stringify(data),
      accountId,
      createdAt: new Date(),
      txid: 0,
      traceparent: currentTraceparent(),
    });
    return;
  }
  await em.execute(insertEventsSql(1, 'postgresql'), [type, JSON.stringify(data), accountId, currentTraceparent()]);
}

interface NewEvent {
  type: EventType;
  data: object;
  accountId: number | null;
}

/**
 * `recordEvent` for the plain-SQL writer (src/domain/writer.ts): the same rows, all the events in one
 * insert (ids in the order given). Written last (`runLast`): on PostgreSQL the insert and the COMMIT go
 * to the server as one message.
 */
export async function insertEvents(tx: SqlTransaction, events: readonly NewEvent[]): Promise<void> {
  if (!events.length) return;
  // On the hottest write: one SQL text per row count and dialect (the writer finds its prepared statement by it), no per-call closures.
  const params: unknown[] = [];
  const traceparent = currentTraceparent();
  if (tx.dialect === 'postgresql') {
    // Stamped by the server at the insert, with the id, so created_at follows the id as the purge expects
    // (EventsService.purgeExpired), as recordEvent's do.
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
  (INSERT_EVENTS_SQL[dialect][rows] ??=
    `insert into events (type, data, account_id, traceparent, created_at${dialect === 'postgresql' ? ', txid' : ''}) values ${Array.from(
      { length: rows },
      () => (dialect === 'postgresql' ? `(?, ?, ?, ?, clock_timestamp(), ${CURRENT_TXID})` : '(?, ?, ?, ?, ?)'),
    ).join(', ')}`);

/** An event written by a PostgreSQL statement from its own rows: its data and account as SQL expressions over them. */
export interface EventFromRows {
  type: EventType;
  data: string;
  accountId: string;
}

/**
 * PostgreSQL: the outbox's insert as a part of one writing statement (a data-modifying CTE) that makes a change
 * whole: one row per event for each row of `from`, with the columns and stamps `insertEvents` gives them, ids in
 * the order given. Parameters: the traceparent, then those of each event's expressions in order.
 */
export function insertEventsFromRowsPg(from: string, events: readonly EventFromRows[]): string {
  const rows = events.map((e, n) => `(${n}, '${e.type}', ${e.data}, ${e.accountId})`).join(',\n      ');
  return `insert into events (type, data, account_id, traceparent, created_at, txid)
    select e.type, e.data, e.account_id, ?::text, clock_timestamp(), ${CURRENT_TXID}
    from ${from} cross join lateral (values
      ${rows}) as e(n, type, data, account_id)
    order by e.n`;
}

/** PostgreSQL: this transaction's id (assigned if it has none yet), as a bigint. */
const CURRENT_TXID = 'pg_current_xact_id()::text::bigint';
/**
 * PostgreSQL: the horizon below which events may be read. The statement's snapshot lists the transactions
 * running when it was taken (`pg_snapshot_xip`); every transaction below the lowest of them has ended, and every
 * transaction that starts later gets a greater id, so the events below it are final: reading them in (txid, id)
 * order never passes over one that commits later. Transaction ids are the whole server's, so running
 * transactions of other databases on the same server are left out (one shown running in another database
 * cannot write this one's events; one no longer shown counts, to be safe); with none left, the snapshot's
 * xmax. This database's own long-running writing transaction holds every reader back until it ends.
 */
const HORIZON = `txid < (select coalesce(min(x.xid::text::bigint), pg_snapshot_xmax(pg_current_snapshot())::text::bigint)
  from pg_snapshot_xip(pg_current_snapshot()) as x(xid)
  where not exists (select 1 from pg_stat_get_activity(null) a
    where a.backend_xid = x.xid::xid and a.datid <> (select oid from pg_database where datname = current_database())))`;
const isSqlite = (em: EntityManager) => em.getPlatform() instanceof BaseSqlitePlatform;
/** ` where <the horizon>` on PostgreSQL, nothing on SQLite: for a query of `events` that reads only what may be read now. */
export const readableEvents = (em: EntityManager) => (isSqlite(em) ? '' : ` where ${HORIZON}`);

interface EventReadFilter {
  types?: readonly string[];
  viewer?: number;
  fields?: ReadonlyArray<keyof Event & string>;
}

/** Committed events after `after` that `filter` lets through, in the read order, final or not. */
function eventsAfterQuery(em: EntityManager, after: EventPosition, filter: EventReadFilter) {
  const qb = em.createQueryBuilder(Event).where('(txid, id) > (?, ?)', [after.txid, after.id]);
  if (filter.fields) qb.select([...filter.fields]);
  if (filter.types) qb.andWhere({ type: { $in: [...filter.types] } });
  if (filter.viewer !== undefined) qb.andWhere({ $or: [{ accountId: null }, { accountId: filter.viewer }] });
  return qb;
}

/** Events after `after`, in the read order, that may be read now (PostgreSQL: below the horizon). */
export async function readEvents(em: EntityManager, after: EventPosition, limit: number, filter: EventReadFilter = {}): Promise<Event[]> {
  const qb = eventsAfterQuery(em, after, filter);
  if (!isSqlite(em)) qb.andWhere(HORIZON);
  return qb.orderBy({ txid: 'asc', id: 'asc' }).limit(limit).getResult();
}

/**
 * Whether committed events after `after` that `filter` lets through wait for an older transaction to end before
 * they may be read (PostgreSQL; never on SQLite). Ask it after a `readEvents` that found less than its limit,
 * from the last position it read.
 */
export async function eventsWaiting(
  em: EntityManager,
  after: EventPosition,
  filter: Omit<EventReadFilter, 'fields'> = {},
): Promise<boolean> {
  if (isSqlite(em)) return false;
  const rows = await eventsAfterQuery(em, after, { ...filter, fields: ['id'] })
    .limit(1)
    .execute('all');
  return rows.length > 0;
}

/** The position of the newest event that may be read now: readers starting "from now" start there. */
export async function newestPosition(em: EntityManager): Promise<EventPosition> {
  const [row] = await em.execute<Array<{ txid: number | string; id: number | string }>>(
    `select txid, id from events${readableEvents(em)} order by txid desc, id desc limit 1`,
  );
  return row ? { txid: Number(row.txid), id: Number(row.id) } : OUTBOX_START;
}

/**
 * Where a reader that processed event `id` resumes: right after that event. An id no longer kept (or never
 * written) resumes after the kept event just below it, or from the oldest kept.
 */
async function positionAfterId(em: EntityManager, id: number): Promise<EventPosition> {
  if (id === 0) return OUTBOX_START;
  const [row] = await em.execute<Array<{ txid: number | string; id: number | string }>>(
    'select txid, id from events where id <= ? order by id desc limit 1',
    [id],
  );
  return row ? { txid: Number(row.txid), id: Number(row.id) } : OUTBOX_START;
}

export const positionOf = (e: Event): EventPosition => ({ txid: e.txid, id: e.id });

export const recordOrderEvent = (em: EntityManager, type: 'order.placed' | 'order.completed' | 'order.cancelled', order: OrderView) =>
  recordEvent(em, type, orderRepresentation(order), order.accountId);

export const recordPetEvent = (em: EntityManager, type: 'pet.created' | 'pet.updated' | 'pet.deleted', pet: PetView) =>
  recordEvent(em, type, pet);

export const recordCategoryEvent = (
  em: EntityManager,
  type: 'category.created' | 'category.updated' | 'category.deleted',
  category: CategoryView,
) => recordEvent(em, type, categoryRepresentation(category));

/** `inventory.changed` with the pet's stock and status as they stand in this transaction. */
export async function recordInventoryChanged(em: EntityManager, petId: number): Promise<void> {
  const [row] = await em.execute<Array<{ quantity: number | string; status: PetView['status'] }>>(
    'select i.quantity, p.status from inventory i join pets p on p.id = i.pet_id where i.pet_id = ?',
    [petId],
  );
  if (row)
    await recordEvent(em, 'inventory.changed', { petId, quantity: Number(row.quantity), status: row.status } satisfies InventoryView);
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
  /** Only events read after this one (the read order is not always the ids'); the cursor of an event is its id. */
  after?: unknown;
  types?: unknown;
}

/** The event feed and the outbox's upkeep. */
export class EventsService {
  constructor(private readonly em: EntityManager) {}

  /**
   * Events the caller may see, in the read order (commit order; mostly the ids'), after the event `after`;
   * the next page starts after the last one's id.
   */
  async listEvents(actor: Actor, filter: EventFilter, limit?: number): Promise<Page<EventView>> {
    const size = pageSize(limit);
    const after = parseAfter(filter.after);
    const types = parseEventTypes(filter.types);
    const seen = { types, viewer: isStaff(actor) ? undefined : actor.accountId };
    const from = await positionAfterId(this.em, after);
    // Read your writes on any instance: a page that is not full waits (a bounded while) for events already
    // committed behind an older transaction still running, rather than leaving out a change that has answered.
    const settleBy = Date.now() + FEED_SETTLE_MS;
    let rows = await readEvents(this.em, from, size + 1, seen);
    for (let pause = 2; rows.length <= size && Date.now() < settleBy; pause = Math.min(pause * 2, 50)) {
      if (!(await eventsWaiting(this.em, rows.length ? positionOf(rows.at(-1)!) : from, seen))) break;
      await setTimeout(pause);
      rows = await readEvents(this.em, from, size + 1, seen);
    }
    const items = rows.slice(0, size).map(toEventView);
    return { items, nextCursor: rows.length > size && items.length ? String(items.at(-1)!.id) : null };
  }

  /** One kept event the caller may see (another account's order event: NOT_FOUND, as if it did not exist). */
  async getEvent(actor: Actor, eventId: number): Promise<EventView> {
    const id = v.id(eventId, 'id');
    const event = await this.em.findOne(Event, { id });
    if (!event || !canSee(actor, event)) throw notFound('Event', id);
    return toEventView(event);
  }

  /**
   * Every event after `after`, in the read order, whoever may see it (for relays that filter per recipient), and
   * where they end; `waiting` when committed events after them wait for an older transaction to end (PostgreSQL).
   */
  async eventsAfter(
    after: EventPosition,
    limit: number,
  ): Promise<{ events: EventView[]; positions: EventPosition[]; next: EventPosition; waiting: boolean }> {
    const rows = await readEvents(this.em, after, limit);
    const next = rows.length ? positionOf(rows.at(-1)!) : after;
    const waiting = rows.length < limit && (await eventsWaiting(this.em, next));
    return { events: rows.map(toEventView), positions: rows.map(positionOf), next, waiting };
  }

  /**
   * Where a subscription of `actor` resuming after event `id` starts reading: right after that event. An id below
   * every kept event is past the retention (EVENT_EXPIRED); one never written, or one the actor may not see, is
   * VALIDATION_FAILED with the same message, so another account's event is not told from none.
   */
  async resumePosition(actor: Actor, id: number, path = 'after'): Promise<EventPosition> {
    const [row] = await this.em.execute<Array<{ txid: number | string; id: number | string; account_id: number | string | null }>>(
      'select txid, id, account_id from events where id = ?',
      [id],
    );
    if (row && canSee(actor, { accountId: row.account_id === null ? null : Number(row.account_id) }))
      return { txid: Number(row.txid), id: Number(row.id) };
    const [oldest] = await this.em.execute<Array<{ id: number | string | null }>>('select min(id) as id from events');
    if (!row && oldest?.id !== null && oldest?.id !== undefined && id < Number(oldest.id)) {
      throw new DomainError(
        'EVENT_EXPIRED',
        `Event ${id} is older than the ${EVENT_RETENTION_MS / 86_400_000}-day retention and no longer kept, nor are some after it: ` +
          'start again from the oldest kept event (the feed, GET /v1/events or GraphQL events, from its first page) and the current state.',
      );
    }
    throw validationFailed(`${path}: there is no event ${id} you may see.`, [{ path, message: 'must be the id of an event you may see' }]);
  }

  /**
   * One page of the events after `after` the actor may see, of `types`, that may be read now, in the read order,
   * with each one's position (a resuming subscription's back-fill).
   */
  async visibleAfter(
    actor: Actor,
    after: EventPosition,
    types: readonly string[] | undefined,
    limit: number,
  ): Promise<Array<{ event: EventView; position: EventPosition }>> {
    const rows = await readEvents(this.em, after, limit, { types, viewer: isStaff(actor) ? undefined : actor.accountId });
    return rows.map((row) => ({ event: toEventView(row), position: positionOf(row) }));
  }

  /** Where a reader that wants what commits from now on starts. */
  newestPosition(): Promise<EventPosition> {
    return newestPosition(this.em);
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
   * Events are stamped at their insert, with their id, so `createdAt` follows the id:
   * the events to drop are those below the first one within the period. `events` has no index on
   * `createdAt` (every order would write its page too): that first event is found by reading in id
   * order, through exactly the rows that go (an hour's worth at the hourly purge), and they go by id.
   * An instance whose clock is behind the others' can make an event go or stay a little early or late
   * (by the clocks' difference, on a 30-day horizon).
   */
  async purgeExpired(now = new Date()): Promise<number> {
    const horizon = new Date(now.getTime() - EVENT_RETENTION_MS);
    await this.em.nativeDelete(WebhookDelivery, { createdAt: { $lt: horizon }, status: { $ne: 'pending' } });
    // A deleted category is kept for the events that show pets in it, all older than its deletion (a category with
    // pets cannot be deleted): gone past the period, with a day's margin for the clocks of several instances.
    await this.em.nativeDelete(DeletedCategory, { deletedAt: { $lt: new Date(horizon.getTime() - DAY_MS) } });
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
  /**
   * Calls `listener` with each event committed from now on, and its place in the read order (a resuming
   * subscription drops what its back-fill already gave); returns the unsubscribe function.
   */
  subscribe(listener: (event: EventView, position: EventPosition) => void): Promise<() => void>;
  /** How many events a subscription may have waiting for its client; past it, it ends with SUBSCRIBER_TOO_SLOW. */
  readonly backlogMax: number;
}
