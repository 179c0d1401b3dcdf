import type { EntityManager } from '@mikro-orm/knex';
import { AccountsService, type AccountsDeps, type BanRegistry } from './accounts.service.js';
import { authenticateKey } from './api-keys.js';
import { PetsService } from './pets.service.js';
import { CategoriesService } from './categories.service.js';
import type { SqlReader } from './reader.js';
import type { SqlWriter } from './writer.js';
import { StoreService } from './store.service.js';
import { EventsService } from './events.service.js';
import { WebhooksService, type WebhookPolicy, type WebhookInput } from './webhook-endpoints.service.js';

export { DomainError, ReplayedDomainError, DOMAIN_ERROR_CODES, type DomainErrorCode, type ErrorDetail } from './errors.js';
export { OPERATOR, type Actor } from './actor.js';
export type { Page, PageRequest } from './pagination.js';
export { MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE } from './pagination.js';
export { MAX_IDS, idCount } from './validate.js';
export type * from './views.js';
export { PLAN_LIMITS, limitsFor } from './plans.js';
export {
  PetsService,
  CategoriesService,
  AccountsService,
  StoreService,
  EventsService,
  WebhooksService,
  type AccountsDeps,
  type BanRegistry,
  type WebhookPolicy,
  type WebhookInput,
};
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
   * False only in the benchmark's variant that prices the outbox (bench/service-variant.ts):
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
  return new RequestDomain(em, deps);
}

/**
 * A class, not an object literal with getters: a literal's accessors are made anew each time it is
 * evaluated, per request, a class's live once on its prototype.
 */
class RequestDomain implements Domain {
  readonly pets: PetsService;
  readonly categories: CategoriesService;
  readonly store: StoreService;
  private readonly emOf: () => EntityManager;
  private forked: EntityManager | undefined;
  private accountsService: AccountsService | undefined;
  private eventsService: EventsService | undefined;
  private webhooksService: WebhooksService | undefined;

  constructor(
    em: EntityManager | (() => EntityManager),
    private readonly deps: DomainDeps,
  ) {
    this.emOf = typeof em === 'function' ? () => (this.forked ??= em()) : () => em;
    this.pets = new PetsService(this.emOf, deps.reader);
    this.categories = new CategoriesService(this.emOf, deps.reader);
    this.store = new StoreService(this.emOf, deps.reader, deps.writer, deps.idempotencyClaimMs, deps.outbox ?? true);
  }

  get accounts(): AccountsService {
    return (this.accountsService ??= new AccountsService(this.emOf(), this.deps));
  }

  get events(): EventsService {
    return (this.eventsService ??= new EventsService(this.emOf()));
  }

  get webhooks(): WebhooksService {
    return (this.webhooksService ??= new WebhooksService(this.emOf(), this.deps.webhooks ?? { allowPrivate: false }));
  }
}

/** The factory of per-request services: each gets its own EntityManager fork (its own identity map), when it first needs one. */
export const domainFactory =
  (em: EntityManager, deps: DomainDeps): (() => Domain) =>
  () =>
    createDomain(() => em.fork(), deps);

/**
 * The accounts outside any request, for the edge's key checks and the limiter's bans: a key is resolved by one
 * plain-SQL read (`authenticateKey`), the rest on a fresh EntityManager fork per call.
 */
export function keyRegistry(em: EntityManager, reader: SqlReader, deps: AccountsDeps = {}) {
  const accounts = () => new AccountsService(em.fork(), deps);
  return {
    authenticate: (rawKey: string, hash?: string) => authenticateKey(reader, rawKey, { hash }),
    activeKeyHashes: (createdSince?: Date) => accounts().activeKeyHashes(createdSince),
    recordBan: (keyId: number, until: Date) => accounts().recordBan(keyId, until),
  };
}
