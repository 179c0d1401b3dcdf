import type { Context } from 'koa';
import type { Actor, Domain, EventSubscriptions } from '../domain/index.js';
import { DomainError } from '../domain/errors.js';
import type { AppState } from '../http/context.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import type { Loaders } from './data.loaders.js';

/** What every resolver receives: the request's domain, caller and DataLoaders. */
export interface GraphQLContext {
  koa: Context;
  state: AppState;
  loaders: Loaders;
  gate: RateLimitGate;
  /** Called after a change to accounts or keys, so cached authentications are dropped. */
  onAccountsChanged: () => void;
  /** Set by the rate-limit plugin once the rate-limit headers are on the response. */
  rateLimitHeadersSet: boolean;
  /** Committed events as they happen: set on subscription operations (over graphql-ws) only. */
  events?: EventSubscriptions;
}

export const domainOf = (ctx: GraphQLContext): Domain => ctx.state.domain;

/**
 * The caller. The rate-limit plugin refuses keyless operations before any resolver runs, so this
 * only throws if a field was somehow reached without a key.
 */
export function actorOf(ctx: GraphQLContext): Actor {
  const actor = ctx.state.actor;
  if (!actor) throw new DomainError('UNAUTHENTICATED', 'Send your API key in the X-API-Key header.');
  return actor;
}

/**
 * An `ID` argument as the domain's number; anything that is not a decimal id becomes NaN, which the
 * domain refuses with VALIDATION_FAILED naming the argument (the same rule REST applies to paths).
 */
export const toId = (value: string): number => (/^\d{1,16}$/.test(value) ? Number(value) : Number.NaN);
export const toIdOrUndefined = (value: string | null | undefined): number | undefined =>
  value === undefined || value === null ? undefined : toId(value);
