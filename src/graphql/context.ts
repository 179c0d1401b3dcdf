import type { Actor, Domain, EventSubscriptions } from '../domain/index.js';
import { authError } from '../http/authentication.js';
import type { AppState } from '../http/context.js';
import type { Loaders } from './schema/data.loaders.js';
import type { OperationCost } from './server/request-preparation.js';

/**
 * What every resolver and plugin receives: transport-neutral (no Koa context), built once per request
 * by the facade from what the HTTP pipeline resolved.
 */
export interface GraphQLContext {
  /** The domain services over the request's own EntityManager fork (created on first use). */
  readonly domain: Domain;
  /** The caller, when the request carried a valid API key. */
  readonly actor?: Actor;
  /** Why there is no actor: no key, a key that is unknown or revoked, or a key that could not be checked (database busy). */
  readonly authFailure?: AppState['authFailure'];
  readonly loaders: Loaders;
  /** The client's address, as the HTTP pipeline determined it (per-address limiter). */
  readonly clientAddress: string;
  readonly requestId: string;
  /** What the facade reports back to the request log and metrics, and the operation's cost once it is charged (HTTP). */
  readonly observed: {
    operationName?: string;
    operation?: string;
    errorCode?: string;
    /** The cost of an operation that ran. */
    cost?: OperationCost;
    /** The cost of one the rate limit refused (nothing charged). */
    refusedCost?: OperationCost;
  };
  /** Committed events as they happen: set on subscription operations (over graphql-ws) only. */
  readonly events?: EventSubscriptions;
  /**
   * Subscriptions only: the caller as its key stands now (null once the key is revoked or banned), so a
   * subscription that outlives a revocation or a demotion stops receiving what the key may no longer see.
   */
  readonly currentActor?: () => Promise<Actor | null>;
  /** Subscriptions only: takes `cost` points from the caller's budget (a resuming subscription's back-fill pages); throws the refusal. */
  readonly charge?: (cost: number) => Promise<void>;
}

export const domainOf = (ctx: GraphQLContext): Domain => ctx.domain;

/**
 * The caller. The request preparation refuses keyless operations before any resolver runs, so this
 * only throws if a field was somehow reached without a key.
 */
export function actorOf(ctx: GraphQLContext): Actor {
  if (!ctx.actor) throw authError(ctx.authFailure);
  return ctx.actor;
}
