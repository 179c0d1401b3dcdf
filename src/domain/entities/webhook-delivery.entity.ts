import { Entity, Index, ManyToOne, PrimaryKey, Property, BigIntType } from '@mikro-orm/core';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One attempt to deliver one event to one endpoint. A failed attempt schedules the next one as a new
 * row, so the log shows every attempt; an instance claims a due attempt for a short lease, so each
 * attempt is made by one instance, and one that dies mid-delivery leaves it to another after the lease.
 */
@Entity({ tableName: 'webhook_deliveries' })
@Index({ name: 'webhook_deliveries_due_index', properties: ['status', 'scheduledAt'] })
export class WebhookDelivery {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Index({ name: 'webhook_deliveries_endpoint_id_index' })
  @ManyToOne({ entity: () => WebhookEndpoint, deleteRule: 'cascade' })
  endpoint: WebhookEndpoint;

  /** Not a foreign key: the delivery log outlives the event's 30 days. */
  @Property({ type: new BigIntType('number') })
  eventId: number;

  @Property({ type: 'string', length: 64 })
  eventType: string;

  /** 1 for the first attempt, then 2, 3, … (a manual redelivery starts again at 1). */
  @Property({ type: 'integer' })
  attempt: number;

  @Property({ type: 'string', length: 16 })
  status: DeliveryStatus = 'pending';

  @Property({ type: 'datetime' })
  scheduledAt: Date;

  /** Which instance holds the attempt, and until when; another may take it after that. */
  @Property({ type: 'string', length: 64, nullable: true })
  claimedBy: string | null = null;

  @Property({ type: 'datetime', nullable: true })
  claimedUntil: Date | null = null;

  @Property({ type: 'datetime', nullable: true })
  attemptedAt: Date | null = null;

  @Property({ type: 'integer', nullable: true })
  responseStatus: number | null = null;

  @Property({ type: 'integer', nullable: true })
  durationMs: number | null = null;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  constructor(endpoint: WebhookEndpoint, eventId: number, eventType: string, attempt: number, scheduledAt: Date) {
    this.endpoint = endpoint;
    this.eventId = eventId;
    this.eventType = eventType;
    this.attempt = attempt;
    this.scheduledAt = scheduledAt;
  }
}
