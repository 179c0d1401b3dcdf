import type { EntityManager } from '@mikro-orm/knex';
import { AccountsService, type BanRegistry } from './accounts.service.js';
import { CatalogService } from './catalog.service.js';
import { StoreService } from './store.service.js';
import { EventsService } from './events.service.js';
import { WebhooksService, type WebhookPolicy, type WebhookInput } from './webhooks.service.js';

export { DomainError, ReplayedDomainError, ERROR_CODES, type ErrorCode, type ErrorDetail } from './errors.js';
export type { Actor } from './actor.js';
export type { Page, PageRequest } from './pagination.js';
export { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from './pagination.js';
export type * from './views.js';
export { PLAN_LIMITS, limitsFor } from './plans.js';
export { CatalogService, AccountsService, StoreService, EventsService, WebhooksService, type BanRegistry, type WebhookPolicy, type WebhookInput };
export { validationFailed } from './errors.js';
export { EVENT_TYPES, type EventType, type EventSubscriptions, canSee, parseEventTypes } from './events.service.js';

/** The services of one request, sharing its EntityManager fork (its own identity map). */
export interface Domain {
  catalog: CatalogService;
  store: StoreService;
  accounts: AccountsService;
  events: EventsService;
  webhooks: WebhooksService;
}

export function createDomain(em: EntityManager, bans?: BanRegistry, webhooks: WebhookPolicy = { allowPrivate: false }): Domain {
  return {
    catalog: new CatalogService(em),
    store: new StoreService(em),
    accounts: new AccountsService(em, bans),
    events: new EventsService(em),
    webhooks: new WebhooksService(em, webhooks),
  };
}
