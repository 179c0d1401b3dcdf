import { Entity, Index, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';

/**
 * One row of the transactional outbox: written in the same transaction as the change it describes,
 * read by the event feed, the webhook dispatcher and the subscription relay. Kept 30 days. Every
 * read is in (transaction id, id) order or by id; no index on `createdAt` (every order would write its page too):
 * the purge finds the oldest event it keeps by id (EventsService.purgeExpired).
 */
@Entity({ tableName: 'events' })
@Index({ name: 'events_txid_id_index', properties: ['txid', 'id'] })
export class Event {
  /** Assigned at insert: two transactions can commit in the other order than their ids (see `txid`). */
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  /**
   * PostgreSQL: the writing transaction's id (`pg_current_xact_id()`); readers read in (txid, id) order and only
   * below the snapshot's horizon, where nothing can still commit (src/domain/events.service.ts). SQLite, one writer at
   * a time: 0, so the order is the id's. Events written before this column existed: 0 (they committed in id order).
   */
  @Property({ type: new BigIntType('number'), default: 0 })
  txid: number = 0;

  @Property({ type: 'string', length: 64 })
  type: string;

  /** The resource as `GET /v1/…` shows it (JSON text); a deleted resource's last state. */
  @Property({ type: 'text' })
  data: string;

  /**
   * The account whose order the event is about; null for catalogue and inventory events, which
   * every account may see. Not a foreign key: the event outlives a deleted account's rows.
   */
  @Property({ type: new BigIntType('number'), nullable: true })
  accountId: number | null;

  /** Set at the insert, with the id: it follows the id (up to the clocks of the instances and concurrent inserts' microseconds). */
  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  /**
   * The W3C `traceparent` of the change that wrote the event, when tracing is on: its webhook deliveries
   * and subscription pushes link their spans to it. Never shown to clients.
   */
  @Property({ type: 'string', length: 64, nullable: true })
  traceparent: string | null = null;

  constructor(type: string, data: string, accountId: number | null) {
    this.type = type;
    this.data = data;
    this.accountId = accountId;
  }
}
