import type { Actor, BanRegistry, Limits } from '../domain/index.js';

/** Usage of one window, as `GET /rate_limit` and the `rateLimit` query report it. */
export interface WindowUsage {
  limit: number;
  used: number;
  remaining: number;
  /** Unix seconds when the window resets. */
  reset: number;
  windowSeconds: number;
}

export interface RateLimitStatus {
  plan: Actor['plan'];
  resources: { minute: WindowUsage; day: WindowUsage };
  /** The end of the calling key's ban (bans are the key's, windows the account's); null when it is not banned. */
  bannedUntil: Date | null;
}

/**
 * The one guard in front of both facades (docs/RATE-LIMITS.md). Each facade computes the cost of a request and
 * calls `charge`; the gate answers with the headers to send, or throws a RateLimitRefusal (429
 * RATE_LIMITED / API_KEY_BANNED) that carries them, Retry-After included.
 */
export interface ChargeOptions {
  /**
   * false: the request is admitted or refused (and counted toward a ban) exactly as one of `cost`
   * would be, but an admitted one consumes nothing: a conditional GET answered 304 (docs/RATE-LIMITS.md, "Conditional requests").
   */
  consume?: boolean;
  /**
   * With a cost of 0: the request is one of the free ones a client sends (the rate-limit status, introspection,
   * the API documents), counted against the key's own budget of them (`FREE_READS_PER_MINUTE`) and refused
   * (429 RATE_LIMITED) past it. Without it a cost of 0 only reads the windows (the headers of a free answer).
   */
  free?: boolean;
  /**
   * The service's own work for a subscription (an answer it pushes, a page it back-fills), not a request the client
   * sent: refused like any charge, but the refusal never counts toward a ban (the client did not retry anything).
   */
  pushed?: boolean;
}

/** The options of one of the key's free requests. */
export const FREE: ChargeOptions = Object.freeze({ free: true });

export interface RateLimitGate {
  /**
   * Charges `cost` to the actor's account; returns the rate-limit headers. A cost of 0 (a free
   * operation) reads the windows, and with `free` takes one of the key's free requests.
   */
  charge(actor: Actor, cost: number, options?: ChargeOptions): Promise<Record<string, string>>;
  /**
   * For a request without a valid key: the per-address limiter's headers. `failedAuth` counts a
   * failure, and past `AUTH_FAILURES_PER_MINUTE` throws a 429 RATE_LIMITED RateLimitRefusal.
   */
  anonymous(address: string, failedAuth: boolean): Promise<Record<string, string>>;
  /**
   * Throws the key's 429 API_KEY_BANNED refusal when this process knows it is banned (remembered, or read with the key),
   * at once and without the store: a facade refuses a banned key before it reads and parses what it sent.
   */
  refuseKnownBan(actor: Actor): void;
  /** The per-address limiter's headers, read only and at once: for the answers the HTTP server writes itself. */
  addressHeaders(address: string): Record<string, string>;
  /**
   * True while the address has no failed authentication left in this window: an unknown key from it
   * is refused (429) without a database lookup, while its valid keys are still served. Memory only.
   */
  isAddressBlocked(address: string): boolean;
  /** How many client addresses the failed-authentication limiter tracks (bounded by `AUTH_FAILURES_MAX_ADDRESSES`). */
  trackedAddresses(): number;
  /** Both windows, for `GET /rate_limit` and `rateLimit`; costs nothing. */
  status(actor: Actor): Promise<RateLimitStatus>;
  bans: BanRegistry;
  /**
   * Readiness of the limiter store. A Redis outage is reported (`redis: 'down'`) but stays `ok`:
   * the insurance limiters keep the instance serving, so it must not leave the load balancer.
   */
  ready(): Promise<{ ok: boolean; store: 'memory' | 'redis'; redis?: 'up' | 'down'; degraded?: boolean }>;
  close(): Promise<void>;
}

export type { Limits };
