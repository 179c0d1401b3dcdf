export { Category } from './category.entity.js';
export { DeletedCategory } from './deleted-category.entity.js';
export { Pet, PET_STATUSES, type PetStatus } from './pet.entity.js';
export { InventoryItem } from './inventory-item.entity.js';
export { Account, ROLES, PLANS, type Role, type PlanName } from './account.entity.js';
export { ApiKey } from './api-key.entity.js';
export { Order } from './order.entity.js';
export { IdempotencyRecord } from './idempotency-record.entity.js';
export { Event } from './event.entity.js';
export { EventRelay } from './event-relay.entity.js';
export { WebhookEndpoint } from './webhook-endpoint.entity.js';
export { WebhookDelivery, DELIVERY_STATUSES, type DeliveryStatus } from './webhook-delivery.entity.js';

import { Category } from './category.entity.js';
import { DeletedCategory } from './deleted-category.entity.js';
import { Pet } from './pet.entity.js';
import { InventoryItem } from './inventory-item.entity.js';
import { Account } from './account.entity.js';
import { ApiKey } from './api-key.entity.js';
import { Order } from './order.entity.js';
import { IdempotencyRecord } from './idempotency-record.entity.js';
import { Event } from './event.entity.js';
import { EventRelay } from './event-relay.entity.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';
import { WebhookDelivery } from './webhook-delivery.entity.js';

export const ENTITIES = [
  Category,
  DeletedCategory,
  Pet,
  InventoryItem,
  Account,
  ApiKey,
  Order,
  IdempotencyRecord,
  Event,
  EventRelay,
  WebhookEndpoint,
  WebhookDelivery,
];
