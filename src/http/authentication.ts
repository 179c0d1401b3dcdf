import { createHash } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import type { Actor, Domain } from '../domain/index.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import type { AppState } from './context.js';
import { HttpError } from './errors.js';

const CACHE_LIMIT = 10_000;

/** Looks a raw key up: the domain's `accounts.authenticate`, over a fresh EntityManager. */
export type KeyLookup = (rawKey: string) => Promise<Actor | null>;

/**
 * Resolves API keys to callers with a short-lived cache: a hot key costs no query, and a revoked key
 * or a changed plan takes effect within `ttlMs` on every instance (at once on this one, see `forget`,
 * which the domain triggers after such a change).
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { actor: Actor | null; expires: number }>();

  constructor(
    private readonly lookup: KeyLookup,
    private readonly ttlMs = 1000,
  ) {}

  async authenticate(rawKey: string): Promise<Actor | null> {
    const id = createHash('sha256').update(rawKey).digest('base64');
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && hit.expires > now) return hit.actor;
    const actor = await this.lookup(rawKey);
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(id, { actor, expires: now + this.ttlMs });
    return actor;
  }

  /** Drops every cached key: called after this instance changes an account or a key. */
  forget(): void {
    this.cache.clear();
  }
}

/**
 * Per request: the lazily created domain services, and who is calling (`state.actor`, or why not in
 * `state.authFailure`). Nothing is refused here: each facade decides once it knows the operation
 * (public operations and introspection need no key), and charges the per-address limiter.
 */
export function authentication({ authenticator, gate, domain }: { authenticator: ApiKeyAuthenticator; gate: Pick<RateLimitGate, 'isAddressBlocked'>; domain: () => Domain }): Middleware {
  return async (ctx: Context, next: Next) => {
    const state = ctx.state as AppState;
    let services: Domain | undefined;
    Object.defineProperty(state, 'domain', { get: () => (services ??= domain()), configurable: true });
    const key = ctx.get('x-api-key');
    if (!key) state.authFailure = 'UNAUTHENTICATED';
    // An address refused for failed authentication gets no answer about any key, valid or not.
    else if (gate.isAddressBlocked(ctx.ip)) state.authFailure = 'INVALID_API_KEY';
    else {
      const actor = await authenticator.authenticate(key);
      if (actor) state.actor = actor;
      else state.authFailure = 'INVALID_API_KEY';
    }
    await next();
  };
}

/** The refusal of a request that needs a key and has none that is valid. */
export function authError(failure: AppState['authFailure']): HttpError {
  return failure === 'INVALID_API_KEY'
    ? new HttpError('INVALID_API_KEY', 'The API key is unknown or revoked.')
    : new HttpError('UNAUTHENTICATED', 'Send your API key in the X-API-Key header.');
}
