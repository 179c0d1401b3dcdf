import { Entity, Index, ManyToOne, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';
import { Account } from './account.entity.js';
import type { EventPosition } from '../event-position.js';

/** Where an account wants its events pushed (a webhook), with the secret that signs each delivery. */
@Entity({ tableName: 'webhook_endpoints' })
export class WebhookEndpoint {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Index({ name: 'webhook_endpoints_account_id_index' })
  @ManyToOne({ entity: () => Account, deleteRule: 'cascade' })
  account: Account;

  @Property({ type: 'string', length: 2048 })
  url: string;

  /** The event types it receives (JSON array); families such as `order.*` are stored expanded. */
  @Property({ type: 'text' })
  events: string;

  /** `whsec_…`: kept in full, since signing needs it; shown to the client only at creation and rotation. */
  @Property({ type: 'string', length: 100 })
  secret: string;

  /** The secret before the last rotation, still signing deliveries until `previousSecretExpiresAt`. */
  @Property({ type: 'string', length: 100, nullable: true })
  previousSecret: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  previousSecretExpiresAt: Date | null = null;

  @Property({ type: 'boolean' })
  enabled: boolean = true;

  /** Why the service disabled it (its deliveries kept failing); null while enabled. */
  @Property({ type: 'text', nullable: true })
  disabledReason: string | null = null;

  /** Whether the endpoint's last attempt failed: its account's other endpoints are given a place first. */
  @Property({ type: 'boolean', default: false })
  failing: boolean = false;

  /**
   * Which instance's worker holds the endpoint's delivery queue, and until when (renewed at each
   * attempt): one attempt at a time per endpoint across every instance; another instance takes the
   * queue over when the lease ends (its holder died).
   */
  @Property({ type: 'string', length: 64, nullable: true })
  leaseOwner: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  leaseUntil: Date | null = null;

  /**
   * Only events after this position, (transaction id, event id) in the order events are read, are delivered: an
   * endpoint gets what happens after it is created.
   */
  @Property({ type: new BigIntType('number'), default: 0 })
  startAfterTxid: number = 0;

  @Property({ type: new BigIntType('number') })
  startAfterEventId: number;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(account: Account, url: string, events: string, secret: string, start: EventPosition) {
    this.account = account;
    this.url = url;
    this.events = events;
    this.secret = secret;
    this.startAfterTxid = start.txid;
    this.startAfterEventId = start.id;
  }
}
