import { raw } from '@mikro-orm/core';
import type { FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { InventoryItem, Order, Pet } from './entities/index.js';
import { aboutResource, forbidden, noSuch, notFound, type DomainError } from './errors.js';
import { isStaff, type Actor } from './actor.js';
import { decodeCursor, findPage, pageSize, toPage, type Page, type PageRequest } from './pagination.js';
import { IdempotencyService } from './idempotency.service.js';
import * as v from './validate.js';
import type { Id } from './validate.js';
import type { InventoryView, OrderView } from './views.js';
import { insertEvents, insertEventsFromRowsPg, recordInventoryChanged, recordOrderEvent } from './events.service.js';
import { currentTraceparent } from './trace-context.js';
import type { SqlReader } from './reader.js';
import type { SqlTransaction, SqlWriter } from './writer.js';
import { orderRepresentation } from './representations.js';
import { INVENTORY_BY_PET, INVENTORY_SELECT, inventoryRowToView, placeholders, type InventoryRow } from './rows.js';

export interface OrderFilter {
  complete?: boolean;
  petId?: number;
}

/** An order to place; typed for the facades' input types, checked value by value by the service. */
export interface OrderInput {
  petId: Id;
  quantity: number;
  shipDate?: Date | string | null;
}

export const MAX_ORDER_QUANTITY = 100;
export const MAX_STOCK = 1_000_000;

export const toOrderView = (o: Order): OrderView => ({
  id: o.id,
  petId: o.pet ? o.pet.id : null,
  quantity: o.quantity,
  shipDate: o.shipDate,
  complete: o.complete,
  accountId: o.account.id,
});

export interface PlacedOrder {
  order: OrderView;
  /** True when an Idempotency-Key replayed a stored outcome. */
  replayed: boolean;
}

/**
 * Orders and inventory: the state machine of docs/API.md, "States and rules". Every check-then-change is one transaction
 * whose first write is an atomic conditional UPDATE of the pet's inventory row, so that row is the
 * lock that serialises concurrent orders, cancellations, completions and stock changes of one pet,
 * on SQLite and on PostgreSQL alike: stock never goes below zero.
 */
export class StoreService {
  constructor(
    private readonly emOf: () => EntityManager,
    private readonly reader: SqlReader,
    private readonly writer: SqlWriter,
    /** How long an idempotency claim without an outcome blocks its key (the request timeout). */
    private readonly idempotencyClaimMs?: number,
    /** False only in the benchmark's variant that prices the outbox (bench/service-variant.ts): placing an order writes no events. */
    private readonly outbox = true,
  ) {}

  /** The request's EntityManager fork, made on first use: a read-only request never forks one. */
  private get em(): EntityManager {
    return this.emOf();
  }

  async listOrders(actor: Actor, filter: OrderFilter, page: PageRequest): Promise<Page<OrderView>> {
    const where: FilterQuery<Order> = {};
    if (!isStaff(actor)) where.account = actor.accountId;
    if (filter.complete !== undefined) where.complete = filter.complete;
    if (filter.petId !== undefined) where.pet = v.id(filter.petId, 'petId');
    return findPage(this.em, Order, where, page, toOrderView);
  }

  async getOrder(actor: Actor, id: number): Promise<OrderView> {
    return toOrderView(await this.visibleOrder(this.em, actor, v.id(id, 'orderId')));
  }

  /** Another account's order is reported exactly like a missing one (404, never 403). */
  private async visibleOrder(em: EntityManager, actor: Actor, orderId: number): Promise<Order> {
    const order = await em.findOne(Order, { id: orderId });
    if (!order || (!isStaff(actor) && order.account.id !== actor.accountId)) throw notFound('Order', orderId);
    return order;
  }

  /**
   * Places an order; with an idempotency key, a retry replays the first outcome (docs/API.md, "Idempotency keys"). The hottest
   * write, so plain SQL on prepared statements through the writer (no EntityManager, no unit of work):
   * the conditional stock update, the order's insert and its two events, as one transaction. On PostgreSQL
   * without a key that is one statement in autocommit: one message, one round trip.
   */
  async placeOrder(actor: Actor, input: OrderInput, idempotencyKey?: string): Promise<PlacedOrder> {
    const petId = v.id(input.petId, 'petId');
    const quantity = v.intInRange(input.quantity, 'quantity', 1, MAX_ORDER_QUANTITY);
    const shipDate = input.shipDate === undefined || input.shipDate === null ? null : v.dateTime(input.shipDate, 'shipDate');
    if (idempotencyKey === undefined) {
      const order =
        this.writer.dialect === 'postgresql'
          ? await this.createOrderPg((sql, params) => this.writer.statement(sql, params), actor, petId, quantity, shipDate)
          : await this.writer.transaction((tx) => this.createOrder(tx, actor, petId, quantity, shipDate));
      return { order, replayed: false };
    }
    const payload = { petId, quantity, shipDate: shipDate?.toISOString() ?? null };
    // The order, its stock change and the key's outcome commit in one transaction (crash-safe).
    const idempotency = new IdempotencyService(this.writer, this.reader, this.idempotencyClaimMs);
    const outcome = await idempotency.run(actor.accountId, idempotencyKey, payload, async (tx) => {
      const order = await this.createOrder(tx, actor, petId, quantity, shipDate);
      return { ...order, shipDate: order.shipDate?.toISOString() ?? null };
    });
    const stored = outcome.value;
    return { order: { ...stored, shipDate: stored.shipDate ? new Date(stored.shipDate) : null }, replayed: outcome.replayed };
  }

  /**
   * Inside the caller's transaction. The conditional decrement is the first write: it takes the pet's
   * inventory row (the lock every stock and status change takes first) and never goes below zero. It
   * returns the stock left; the pet was available (the condition), and turns pending when none is left,
   * so the inventory event needs no read back.
   */
  private async createOrder(tx: SqlTransaction, actor: Actor, petId: number, quantity: number, shipDate: Date | null): Promise<OrderView> {
    if (tx.dialect === 'postgresql') return this.createOrderPg((sql, params) => tx.all(sql, params), actor, petId, quantity, shipDate);
    const [taken] = await tx.all<{ quantity: number | string }>(
      "update inventory set quantity = quantity - ? where pet_id = ? and quantity >= ? and exists (select 1 from pets p where p.id = inventory.pet_id and p.status = 'available') returning quantity",
      [quantity, petId, quantity],
    );
    if (!taken) throw await whyNotPlaceable((sql, params) => tx.all(sql, params), petId, quantity);
    const left = Number(taken.quantity);
    if (left === 0) await tx.run("update pets set status = 'pending' where id = ?", [petId]);
    const [row] = await tx.all<{ id: number | string }>(
      'insert into orders (pet_id, account_id, quantity, ship_date, complete, created_at) values (?, ?, ?, ?, ?, ?) returning id',
      [petId, actor.accountId, quantity, shipDate, false, new Date()],
    );
    const order: OrderView = { id: Number(row!.id), petId, quantity, shipDate, complete: false, accountId: actor.accountId };
    if (this.outbox) {
      await insertEvents(tx, [
        { type: 'order.placed', data: orderRepresentation(order), accountId: order.accountId },
        { type: 'inventory.changed', data: inventoryAfterOrder(petId, left), accountId: null },
      ]);
    }
    return order;
  }

  /**
   * PostgreSQL: the order as one statement (PLACE_ORDER_PG): the decrement, the pet's status, the order's
   * insert and, with the outbox, its two events. The events' data is the same JSON
   * as on SQLite, rendered here around the numbers only the statement knows (the order's id, the stock left).
   */
  private async createOrderPg(all: SqlAll, actor: Actor, petId: number, quantity: number, shipDate: Date | null): Promise<OrderView> {
    const params: unknown[] = [petId, quantity, quantity, petId, petId, actor.accountId, quantity, shipDate, new Date()];
    if (this.outbox) {
      const template: OrderView = { id: HOLE, petId, quantity, shipDate, complete: false, accountId: actor.accountId };
      params.push(
        currentTraceparent(),
        ...around(JSON.stringify(orderRepresentation(template))),
        actor.accountId,
        JSON.stringify(inventoryAfterOrder(petId, 0)),
        ...around(JSON.stringify(inventoryAfterOrder(petId, HOLE))),
      );
    }
    const [placed] = await all<{ quantity: number | string; id: number | string }>(
      this.outbox ? PLACE_ORDER_PG : PLACE_ORDER_PG_NO_OUTBOX,
      params,
    );
    if (!placed) throw await whyNotPlaceable(all, petId, quantity);
    return { id: Number(placed.id), petId, quantity, shipDate, complete: false, accountId: actor.accountId };
  }

  async completeOrder(actor: Actor, id: number, shipDate?: unknown): Promise<OrderView> {
    if (!isStaff(actor)) throw forbidden('Only staff can fulfil orders.');
    const orderId = v.id(id, 'orderId');
    const when = shipDate === undefined || shipDate === null ? new Date() : v.dateTime(shipDate, 'shipDate');
    return this.em.transactional(async (em) => {
      const order = await this.visibleOrder(em, actor, orderId);
      if (order.pet) await this.lockStock(em, order.pet.id);
      const changed = await em.nativeUpdate(Order, { id: orderId, complete: false }, { complete: true, shipDate: when });
      if (!changed) throw this.orderNotOpen(orderId);
      if (order.pet) await this.settleStatus(em, order.pet.id);
      await em.refresh(order);
      if (this.outbox) await recordOrderEvent(em, 'order.completed', toOrderView(order));
      return toOrderView(order);
    });
  }

  async cancelOrder(actor: Actor, id: number): Promise<void> {
    const orderId = v.id(id, 'orderId');
    await this.em.transactional(async (em) => {
      const order = await this.visibleOrder(em, actor, orderId);
      if (order.pet) await this.lockStock(em, order.pet.id);
      // Deleting only an open order, and checking that one row went, makes a double cancel restock once.
      const deleted = await em.nativeDelete(Order, { id: orderId, complete: false });
      if (!deleted) throw this.orderNotOpen(orderId);
      if (order.pet) {
        await em.nativeUpdate(InventoryItem, { pet: order.pet.id }, { quantity: raw('quantity + ?', [order.quantity]) });
        await em.nativeUpdate(Pet, { id: order.pet.id }, { status: 'available' });
      }
      if (this.outbox) await recordOrderEvent(em, 'order.cancelled', toOrderView(order));
      if (order.pet && this.outbox) await recordInventoryChanged(em, order.pet.id);
    });
  }

  private orderNotOpen(orderId: number) {
    return aboutResource('ORDER_NOT_OPEN', 'Order', orderId, ' is already complete.');
  }

  /** Takes the pet's stock row lock (a no-op update) before reading what depends on it. */
  private async lockStock(em: EntityManager, petId: number) {
    await em.nativeUpdate(InventoryItem, { pet: petId }, { quantity: raw('quantity') });
  }

  /** After a completion: no stock and no open order left → sold. */
  private async settleStatus(em: EntityManager, petId: number) {
    const stock = await em.findOne(InventoryItem, { pet: petId }, { fields: ['quantity'] });
    if (stock && stock.quantity === 0 && !(await em.count(Order, { pet: petId, complete: false }))) {
      await em.nativeUpdate(Pet, { id: petId }, { status: 'sold' });
      if (this.outbox) await recordInventoryChanged(em, petId);
    }
  }

  async listInventory(actor: Actor, page: PageRequest): Promise<Page<InventoryView>> {
    if (!isStaff(actor)) throw forbidden('Only staff can list the inventory.');
    const limit = pageSize(page.limit);
    const rows = await this.reader.all<InventoryRow>(`${INVENTORY_SELECT} where i.pet_id > ? order by i.pet_id asc limit ?`, [
      decodeCursor(page.cursor),
      limit + 1,
    ]);
    return mapPage(
      toPage(
        rows.map((r) => ({ id: Number(r.pet_id), view: inventoryRowToView(r) })),
        limit,
      ),
    );
  }

  async getInventory(petId: number): Promise<InventoryView> {
    const id = v.id(petId, 'petId');
    const row = await this.reader.one<InventoryRow>(INVENTORY_BY_PET, [id]);
    if (!row) throw notFound('Inventory entry for pet', id);
    return inventoryRowToView(row);
  }

  /** For batching: the inventory entries of the given pets. */
  async inventoryByPetIds(petIds: readonly number[]): Promise<InventoryView[]> {
    if (petIds.length === 0) return [];
    const rows = await this.reader.all<InventoryRow>(`${INVENTORY_SELECT} where i.pet_id in (${placeholders(petIds.length)})`, petIds);
    return rows.map(inventoryRowToView);
  }

  async setInventory(actor: Actor, petId: number, quantity: unknown): Promise<InventoryView> {
    if (!isStaff(actor)) throw forbidden('Only staff can set the inventory.');
    const id = v.id(petId, 'petId');
    const n = v.intInRange(quantity, 'quantity', 0, MAX_STOCK);
    return this.em.transactional(async (em) => {
      const changed = await em.nativeUpdate(InventoryItem, { pet: id }, { quantity: n });
      if (!changed) throw notFound('Inventory entry for pet', id);
      const status = n > 0 ? 'available' : (await em.count(Order, { pet: id, complete: false })) ? 'pending' : 'sold';
      await em.nativeUpdate(Pet, { id }, { status });
      if (this.outbox) await recordInventoryChanged(em, id);
      return { petId: id, quantity: n, status };
    });
  }
}

type SqlAll = <Row>(sql: string, params: readonly unknown[]) => Promise<Row[]>;

/** Why an order the conditional decrement refused was refused: no such pet, not available, or too little stock. */
async function whyNotPlaceable(all: SqlAll, petId: number, quantity: number): Promise<DomainError> {
  const [pet] = await all<{ status: string }>('select status from pets where id = ?', [petId]);
  if (!pet) return noSuch('Pet', petId, 'petId');
  if (pet.status !== 'available') return aboutResource('PET_NOT_AVAILABLE', 'Pet', petId, ` is ${pet.status}, not available.`);
  const [stock] = await all<{ quantity: number | string }>('select quantity from inventory where pet_id = ?', [petId]);
  const left = stock ? Number(stock.quantity) : 0;
  return aboutResource('INSUFFICIENT_STOCK', 'Pet', petId, ` has only ${left} in stock; ${quantity} requested.`);
}

/** The pet's inventory entry after an order left `left` in stock: it turns pending with its last unit. */
const inventoryAfterOrder = (petId: number, left: number): InventoryView => ({
  petId,
  quantity: left,
  status: left === 0 ? 'pending' : 'available',
});

/** A number no id or stock takes, rendered into a JSON template where the statement puts its own number. */
const HOLE = -7_654_321;
/** A JSON text before and after HOLE, which it holds once. */
function around(json: string): [string, string] {
  const parts = json.split(String(HOLE));
  if (parts.length !== 2) throw new Error(`a JSON template holds its number ${parts.length - 1} times`);
  return [parts[0]!, parts[1]!];
}

/**
 * Placing an order on PostgreSQL in one statement: the pet's inventory row locked first (the lock every stock and
 * status change takes first), then the pet read as it is now (`for share`: a locking read sees the latest committed
 * version, where the statement's snapshot would show the pet as it was before a status change the order waited
 * for: an order must not sell a pet just marked sold; test/rest/order-status-race.test.ts), the conditional
 * decrement, the pet turned pending when it took the last unit, and the order's insert, which reads the
 * decrement's row, so nothing is inserted (and no row comes back) when the stock or the status refused it; with the
 * outbox, its two events (written from the same rows, so only with the order). The locks go in the order every
 * change takes them (inventory, then the pet), so
 * no deadlock. Parameters: pet, quantity, quantity, pet, pet, account, quantity, ship date, created at; with the
 * outbox, then: the traceparent; the order's data before and after its id, its account; the inventory's data when
 * sold out, and before and after the stock left otherwise.
 */
const placeOrderPg = (outbox: boolean) => `with locked as (
    select pet_id from inventory where pet_id = ?::bigint for update
  ), pet as (
    select p.id from locked cross join lateral (select id from pets where id = locked.pet_id and status = 'available' for share) p
  ), taken as (
    update inventory set quantity = quantity - ?::int where pet_id = (select id from pet) and quantity >= ?::int returning quantity
  ), sold_out as (
    update pets set status = 'pending' where id = ?::bigint and exists (select 1 from taken where quantity = 0)
  ), placed as (
    insert into orders (pet_id, account_id, quantity, ship_date, complete, created_at)
      select ?::bigint, ?::bigint, ?::int, ?::timestamptz, false, ?::timestamptz from taken returning id
  )${
    outbox
      ? `, recorded as (
    ${insertEventsFromRowsPg('taken cross join placed', [
      { type: 'order.placed', data: '?::text || placed.id || ?::text', accountId: '?::bigint' },
      {
        type: 'inventory.changed',
        data: 'case when taken.quantity = 0 then ?::text else ?::text || taken.quantity || ?::text end',
        accountId: 'null::bigint',
      },
    ])}
  )`
      : ''
  }
  select taken.quantity, placed.id from taken cross join placed`;
const PLACE_ORDER_PG = placeOrderPg(true);
/** Without the outbox's writes: the benchmark's variant that prices them (bench/service-variant.ts). */
const PLACE_ORDER_PG_NO_OUTBOX = placeOrderPg(false);

function mapPage(page: Page<{ id: number; view: InventoryView }>): Page<InventoryView> {
  return { items: page.items.map((r) => r.view), nextCursor: page.nextCursor };
}
