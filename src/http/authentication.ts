import type { Socket } from 'node:net';
import { LRUCache } from 'lru-cache';
import type { Context, Middleware, Next } from 'koa';
import type { Actor, Domain } from '../domain/index.js';
import { hashApiKey, wellFormedKey } from '../domain/api-keys.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import { requestHeader, type AppState } from './context.js';
import { describeError, HttpError } from './errors.js';

const CACHE_LIMIT = 10_000;
/** How long a key's lookup stands in the cache (a revoked key or a changed plan takes effect within it on every instance). */
export const KEY_CACHE_TTL_MS = 1000;
/** How long the index of valid keys is trusted before it is read again in full (when next consulted). */
const INDEX_TTL_MS = 5000;
/**
 * A key missing from the index is looked for among the keys created since the index was read, less this
 * margin: a key whose transaction committed late, or made on an instance whose clock runs behind.
 */
const CATCH_UP_MARGIN_MS = 60_000;
/** Hex characters of a key's hash kept in the index: 64 bits, a collision only costs a lookup. */
const INDEX_HASH_CHARS = 16;

export interface KeyStore {
  /** Resolves a raw key (whose hash is `hash`) to its caller (`authenticateKey`, one plain-SQL read). */
  authenticate(rawKey: string, hash: string): Promise<Actor | null>;
  /** The hashes of every unrevoked key, or of those created since a moment (`accounts.activeKeyHashes`). */
  activeKeyHashes(createdSince?: Date): Promise<string[]>;
}

/**
 * Resolves API keys to callers with a short-lived cache: a hot key costs no query, and a revoked key
 * or a changed plan takes effect within `ttlMs` on every instance (at once on this one, see `forget`,
 * which the domain triggers after such a change).
 */
export class ApiKeyAuthenticator {
  /** The least recently used key goes when full. */
  private readonly cache = new LRUCache<string, { actor: Actor | null; expires: number }>({ max: CACHE_LIMIT });
  /** The lookups under way, by key hash: the requests that miss the cache together share one. */
  private readonly lookups = new Map<string, Promise<Actor | null>>();
  /** Moved on by `forget`: a lookup begun before it neither fills the cache nor is shared after it. */
  private generation = 0;
  /** Moves on at every `forget`: a key checked at an older epoch is checked again before a write (`recheckKey`). */
  get epoch(): number {
    return this.generation;
  }
  private index: { hashes: Set<string>; loadedAt: number } | null = null;
  private loading: Promise<Set<string>> | null = null;
  /** The catch-up read in progress (keys created since the index was read), and when it started. */
  private catchingUp: { startedAt: number; done: Promise<void> } | null = null;

  constructor(
    private readonly keys: KeyStore,
    private readonly ttlMs = KEY_CACHE_TTL_MS,
  ) {}

  /**
   * `id`: the key's hash, when the caller already has it. A key missing from the cache is looked up once however
   * many requests carry it at the same moment (when a hot key's entry expires, every request in flight would
   * send its own lookup, as the benchmark's PostgreSQL order scenario showed).
   */
  async authenticate(rawKey: string, id = hashApiKey(rawKey)): Promise<Actor | null> {
    const known = this.known(id);
    if (known !== undefined) return known;
    if (!wellFormedKey(rawKey)) {
      this.cache.set(id, { actor: null, expires: Date.now() + this.ttlMs });
      return null;
    }
    const shared = this.lookups.get(id);
    if (shared) return shared;
    const now = Date.now();
    const generation = this.generation;
    const lookup: Promise<Actor | null> = this.keys.authenticate(rawKey, id).then(
      (actor) => {
        if (generation === this.generation) this.cache.set(id, { actor, expires: now + this.ttlMs });
        this.settled(id, lookup);
        return actor;
      },
      (error: unknown) => {
        this.settled(id, lookup);
        throw error;
      },
    );
    this.lookups.set(id, lookup);
    return lookup;
  }

  private settled(id: string, lookup: Promise<Actor | null>): void {
    if (this.lookups.get(id) === lookup) this.lookups.delete(id);
  }

  /**
   * The caller of the key whose hash is `id` as this instance knew it a moment ago (null: unknown or revoked), or
   * undefined when it has to be looked up. Whatever the address, a known key's answer is this (`callerOf`).
   */
  known(id: string): Actor | null | undefined {
    const hit = this.cache.get(id);
    return hit && hit.expires > Date.now() ? hit.actor : undefined;
  }

  /**
   * Whether the key may be valid, answered without looking the key itself up: from the cache, or from an
   * index of the hashes of every unrevoked key (read at most every few seconds, and again after this
   * instance changes a key or an account). Consulted only for an address over the failed-authentication
   * limit. A key missing from the index may have been made a moment ago, here or on another instance:
   * the keys created since the index was read are read before it is refused — one such read at a time,
   * shared by every request that waits for it, so a flood of unknown keys costs one small query at a
   * time, never one per key. A valid key is never refused, however new.
   */
  async mayBeValid(rawKey: string, id = hashApiKey(rawKey)): Promise<boolean> {
    if (!wellFormedKey(rawKey)) return false;
    const hit = this.cache.get(id);
    if (hit && hit.expires > Date.now()) return hit.actor !== null;
    const short = id.slice(0, INDEX_HASH_CHARS);
    const arrived = Date.now();
    if ((await this.validHashes()).has(short)) return true;
    await this.catchUp(arrived);
    return this.index?.hashes.has(short) ?? false;
  }

  /**
   * Drops every cached key, the lookups under way (a request from now on looks its key up afresh) and the index:
   * called after this instance changes an account or a key.
   */
  readonly forget = (): void => {
    this.cache.clear();
    this.lookups.clear();
    this.generation++;
    this.index = null;
  };

  private async validHashes(): Promise<Set<string>> {
    if (this.index && Date.now() - this.index.loadedAt < INDEX_TTL_MS) return this.index.hashes;
    this.loading ??= (async () => {
      try {
        const loadedAt = Date.now();
        const hashes = new Set((await this.keys.activeKeyHashes()).map((h) => h.slice(0, INDEX_HASH_CHARS)));
        this.index = { hashes, loadedAt };
        return hashes;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  /** Adds the keys created since the index was read; resolves once a read that started at or after `arrived` is done. */
  private async catchUp(arrived: number): Promise<void> {
    for (;;) {
      const current = this.catchingUp;
      if (current && current.startedAt >= arrived) return current.done;
      if (current) {
        await current.done;
        continue;
      }
      const index = this.index;
      if (!index) return;
      const startedAt = Date.now();
      const done = (async () => {
        try {
          const recent = await this.keys.activeKeyHashes(new Date(index.loadedAt - CATCH_UP_MARGIN_MS));
          for (const hash of recent) index.hashes.add(hash.slice(0, INDEX_HASH_CHARS));
        } finally {
          this.catchingUp = null;
        }
      })();
      this.catchingUp = { startedAt, done };
      return done;
    }
  }
}

/**
 * Per request: the domain services, and who is calling (`state.actor`, or why not in
 * `state.authFailure`). Nothing is refused here: each facade decides once it knows the operation
 * (public operations and introspection need no key), and charges the per-address limiter.
 */
export function authentication({
  authenticator,
  gate,
  domain,
}: {
  authenticator: ApiKeyAuthenticator;
  gate: Pick<RateLimitGate, 'isAddressBlocked'>;
  domain: () => Domain;
}): Middleware {
  const settle = (state: AppState, actor: Actor | null, epoch: number) => {
    if (actor) {
      state.actor = actor;
      state.keys = { authenticator, epoch };
    } else state.authFailure = 'INVALID_API_KEY';
  };
  const lookUp = async (ctx: Context, state: AppState, key: string, id: string, next: Next) => {
    const epoch = authenticator.epoch;
    try {
      settle(state, await callerOf(authenticator, gate, ctx.request.ip, key, id), epoch);
    } catch (error) {
      // The database could not say (out of connections, restarting): the facade refuses with 503 and
      // the rate-limit headers of the address, like any request without a checked key.
      if (describeError(error)?.code !== 'UNAVAILABLE') throw error;
      state.authFailure = 'UNAVAILABLE';
    }
    return next();
  };
  return (ctx: Context, next: Next) => {
    const state = ctx.state as AppState;
    // Cheap to make: the services fork their EntityManager only when one first needs it. (Not a lazy getter
    // defined per request: defineProperty moves the state object off its fast shape.)
    state.domain = domain();
    const key = requestHeader(ctx, 'x-api-key');
    if (!key) {
      state.authFailure = 'UNAUTHENTICATED';
      return next();
    }
    const id = keyHash(ctx.req.socket, key);
    // A key known a moment ago is answered at once, as `callerOf` answers it; any other goes through `callerOf`
    // (from an address over the failed-authentication limit, an unknown key is refused without a database lookup).
    const known = authenticator.known(id);
    if (known === undefined) return lookUp(ctx, state, key, id, next);
    settle(state, known, authenticator.epoch);
    return next();
  };
}

/**
 * The one rule for a presented key, at every door (REST and GraphQL above, the WebSocket in
 * src/graphql/server/subscriptions.server.ts): a key this instance knew a moment ago is answered as it was
 * (`known`, which the HTTP door also reads by itself to answer without a wait); from an address over the
 * failed-authentication limit, a key that cannot be valid is refused without a lookup (a key made a moment
 * ago can: see `mayBeValid`); otherwise the key is looked up. Null: unknown or revoked.
 */
export async function callerOf(
  authenticator: Pick<ApiKeyAuthenticator, 'authenticate' | 'mayBeValid' | 'known'>,
  gate: Pick<RateLimitGate, 'isAddressBlocked'>,
  address: string,
  key: string,
  id = hashApiKey(key),
): Promise<Actor | null> {
  const known = authenticator.known(id);
  if (known !== undefined) return known;
  if (gate.isAddressBlocked(address) && !(await authenticator.mayBeValid(key, id))) return null;
  return authenticator.authenticate(key, id);
}

/**
 * Before a write begins (REST once the body is read, GraphQL once the document is): a key checked when the
 * headers arrived is checked again if any key or account changed since, on this instance or, announced, on
 * another (src/events/key-changes.ts): a key revoked meanwhile is `401 INVALID_API_KEY` and nothing runs.
 * Nothing changed (the usual case): no lookup.
 */
export function recheckKey(ctx: Context): Promise<void> | undefined {
  const state = ctx.state as AppState;
  const keys = state.keys;
  // Synchronous when nothing changed: the caller awaits only a real lookup (`await` of nothing still costs promises).
  if (!keys || keys.epoch === keys.authenticator.epoch) return undefined;
  return recheck(ctx, state, keys);
}

async function recheck(ctx: Context, state: AppState, keys: NonNullable<AppState['keys']>): Promise<void> {
  const epoch = keys.authenticator.epoch;
  const key = requestHeader(ctx, 'x-api-key');
  const actor = await keys.authenticator.authenticate(key, keyHash(ctx.req.socket, key));
  if (!actor) throw authError('INVALID_API_KEY');
  state.keys = { authenticator: keys.authenticator, epoch };
}

/**
 * The hash of a request's key, remembered on its connection: a keep-alive connection usually sends the
 * same key with every request, and the key stays in memory only as long as the connection does.
 */
const KEY_HASH = Symbol('apiKeyHash');
function keyHash(socket: Socket & { [KEY_HASH]?: { key: string; hash: string } }, key: string): string {
  const last = socket[KEY_HASH];
  if (last !== undefined && last.key === key) return last.hash;
  const hash = hashApiKey(key);
  socket[KEY_HASH] = { key, hash };
  return hash;
}

/**
 * Both facades' rule for a request without a valid key: refused when the operation needs a key, and also when
 * the key it sent could not be checked (database busy), public operation or not, since its owner expects its
 * own quota. Undefined: it goes on anonymously.
 */
export function keyRefusal(failure: AppState['authFailure'], needsKey: boolean): HttpError | undefined {
  return needsKey || failure === 'UNAVAILABLE' ? authError(failure) : undefined;
}

/** The refusal of a request that needs a key and has none that is valid (or whose key could not be checked). */
export function authError(failure: AppState['authFailure']): HttpError {
  if (failure === 'UNAVAILABLE')
    return new HttpError('UNAVAILABLE', 'Your API key could not be checked: the database is busy or unreachable; retry shortly.', {
      'Retry-After': '2',
    });
  return failure === 'INVALID_API_KEY'
    ? new HttpError('INVALID_API_KEY', 'The API key is unknown or revoked.')
    : new HttpError('UNAUTHENTICATED', 'Send your API key in the X-API-Key header.');
}
