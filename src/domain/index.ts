import type { EntityManager } from '@mikro-orm/knex';
import { AccountsService, type AccountsDeps, type BanRegistry } from './accounts.service.js';
import { PetsService } from './pets.service.js';
import { CategoriesService } from './categories.service.js';
import type { SqlReader } from './reader.js';
import type { SqlWriter } from './writer.js';
import { StoreService } from './store.service.js';
import { EventsService } from './events.service.js';
import { WebhooksService, type WebhookPolicy, type WebhookInput } from './webhooks.service.js';

export { DomainError, ReplayedDomainError, DOMAIN_ERROR_CODES, type DomainErrorCode, type ErrorDetail } from './errors.js';
export { OPERATOR, type Actor } from './actor.js';
export type { Page, PageRequest } from './pagination.js';
export { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from './pagination.js';
export type * from './views.js';
export { PLAN_LIMITS, limitsFor } from './plans.js';
export { PetsService, CategoriesService, AccountsService, StoreService, EventsService, WebhooksService, type AccountsDeps, type BanRegistry, type WebhookPolicy, type WebhookInput };
export { validationFailed } from './errors.js';
export { EVENT_TYPES, type EventType, type EventSubscriptions, canSee, parseEventTypes } from './events.service.js';

/** The services of one request, sharing its EntityManager fork (its own identity map). */
export interface Domain {
  pets: PetsService;
  categories: CategoriesService;
  store: StoreService;
  accounts: AccountsService;
  events: EventsService;
  webhooks: WebhooksService;
}

/** What the domain needs from outside, given once by the composition root. */
export type DomainDeps = AccountsDeps & {
  /** Plain-SQL reads of the hottest queries (src/db/reader.ts). */
  reader: SqlReader;
  /** Plain-SQL writes of the hottest write, placing an order (src/db/writer.ts). */
  writer: SqlWriter;
  /**
   * False only in the benchmark's variant that prices the outbox (bench/service-without-outbox.ts):
   * the store (orders, inventory) then writes no events. No configuration of the service reaches it.
   */
  outbox?: boolean;
  /** How long an idempotency claim whose request died blocks its key: the request timeout. */
  idempotencyClaimMs?: number;
  /** Which webhook URLs may be registered (https and public addresses unless private ones are allowed). */
  webhooks?: WebhookPolicy;
};

/**
 * The services of one request. Their EntityManager fork is made on first use (`em` given as a
 * factory), so a request that only reads through the `SqlReader` never forks one.
 */
export function createDomain(em: EntityManager | (() => EntityManager), deps: DomainDeps): Domain {
  let forked: EntityManager | undefined;
  const emOf = typeof em === 'function' ? () => (forked ??= em()) : () => em;
  let accounts: AccountsService | undefined;
  let events: EventsService | undefined;
  let webhooks: WebhooksService | undefined;
  return {
    pets: new PetsService(emOf, deps.reader),
    categories: new CategoriesService(emOf, deps.reader),
    store: new StoreService(emOf, deps.reader, deps.writer, deps.idempotencyClaimMs, deps.outbox ?? true),
    get accounts() {
      return (accounts ??= new AccountsService(emOf(), deps));
    },
    get events() {
      return (events ??= new EventsService(emOf()));
    },
    get webhooks() {
      return (webhooks ??= new WebhooksService(emOf(), deps.webhooks ?? { allowPrivate: false }));
    },
  };
}

/** The factory of per-request services: each gets its own EntityManager fork (its own identity map), when it first needs one. */
export const domainFactory =
  (em: EntityManager, deps: DomainDeps): (() => Domain) =>
  () =>
    createDomain(() => em.fork(), deps);
