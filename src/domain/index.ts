import type { EntityManager } from '@mikro-orm/knex';
import { AccountsService, type AccountsDeps, type BanRegistry } from './accounts.service.js';
import { CatalogService } from './catalog.service.js';
import { StoreService } from './store.service.js';
import { EventsService } from './events.service.js';
import { WebhooksService, type WebhookPolicy, type WebhookInput } from './webhooks.service.js';

export { DomainError, ReplayedDomainError, DOMAIN_ERROR_CODES, type DomainErrorCode, type ErrorDetail } from './errors.js';
export { OPERATOR, type Actor } from './actor.js';
export type { Page, PageRequest } from './pagination.js';
export { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from './pagination.js';
export type * from './views.js';
export { PLAN_LIMITS, limitsFor } from './plans.js';
export { CatalogService, AccountsService, StoreService, EventsService, WebhooksService, type AccountsDeps, type BanRegistry, type WebhookPolicy, type WebhookInput };
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

/** What the domain needs from outside, given once by the composition root. */
export type DomainDeps = AccountsDeps & {
  /** How long an idempotency claim whose request died blocks its key: the request timeout. */
  idempotencyClaimMs?: number;
  /** Which webhook URLs may be registered (https and public addresses unless private ones are allowed). */
  webhooks?: WebhookPolicy;
};

export function createDomain(em: EntityManager, deps: DomainDeps = {}): Domain {
  return {
    catalog: new CatalogService(em),
    store: new StoreService(em, deps.idempotencyClaimMs),
    accounts: new AccountsService(em, deps),
    events: new EventsService(em),
    webhooks: new WebhooksService(em, deps.webhooks ?? { allowPrivate: false }),
  };
}

/** The factory of per-request services: each call gets its own EntityManager fork (its own identity map). */
export const domainFactory =
  (em: EntityManager, deps: DomainDeps = {}): (() => Domain) =>
  () =>
    createDomain(em.fork(), deps);
