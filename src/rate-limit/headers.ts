import type { Actor } from '../domain/index.js';
import type { ChargeOptions, RateLimitGate, WindowUsage } from './gate.js';

export type Resource = 'minute' | 'day';

/** One window of an account after this request, as the gate saw it. */
export interface WindowState {
  resource: Resource;
  limit: number;
  used: number;
  /** Epoch milliseconds at which the window resets. */
  resetAt: number;
  windowSeconds: number;
}

export const remainingOf = (w: WindowState) => Math.max(0, w.limit - w.used);

/** Whole seconds until `at`, rounded up and at least 1 (Retry-After, RateLimit `t`). */
export const secondsUntil = (at: number, now = Date.now()) => Math.max(1, Math.ceil((at - now) / 1000));

/** The window nearest exhaustion: fewest requests left; on a tie the one that resets last (waiting it out clears both). */
export function nearestExhaustion(windows: WindowState[]): WindowState {
  return windows.reduce((a, b) => {
    const ra = remainingOf(a);
    const rb = remainingOf(b);
    if (ra !== rb) return ra < rb ? a : b;
    return b.resetAt > a.resetAt ? b : a;
  });
}

/** Every header the gate sets, keyed or not (for CORS). */
export const RATE_LIMIT_HEADER_NAMES = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Resource',
  'RateLimit-Policy',
  'RateLimit',
] as const;

/** The headers of a keyed response, describing `shown` among the account's `windows` (names in lower case: src/http/headers.ts). */
export function keyedHeaders(windows: WindowState[], shown: WindowState, now = Date.now()): Record<string, string> {
  const remaining = remainingOf(shown);
  return {
    'x-ratelimit-limit': String(shown.limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(Math.ceil(shown.resetAt / 1000)),
    'x-ratelimit-resource': shown.resource,
    'ratelimit-policy': policyOf(windows),
    ratelimit: `"${shown.resource}";r=${remaining};t=${secondsUntil(shown.resetAt, now)}`,
  };
}

/**
 * `RateLimit-Policy`: each window's quota and length (`"minute";q=1000;w=60, "day";q=100000;w=86400`). Concatenated
 * in one loop, without an array of parts, a closure and a join per request.
 */
function policyOf(windows: readonly WindowState[]): string {
  let policy = '';
  for (const w of windows) policy += `${policy ? ', ' : ''}"${w.resource}";q=${w.limit};w=${w.windowSeconds}`;
  return policy;
}

/** The headers of a request without a valid key: the per-address authentication limiter. */
export function addressHeaders(limit: number, used: number, resetAt: number): Record<string, string> {
  return {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(Math.max(0, limit - used)),
    'x-ratelimit-reset': String(Math.ceil(resetAt / 1000)),
  };
}

export function toUsage(w: WindowState): WindowUsage {
  return {
    limit: w.limit,
    used: Math.max(0, w.used),
    remaining: remainingOf(w),
    reset: Math.ceil(w.resetAt / 1000),
    windowSeconds: w.windowSeconds,
  };
}

/** Who is asking, as authentication left it: a valid key's actor, or why there is none. */
export interface RateLimitCaller {
  actor?: Actor;
  authFailure?: 'UNAUTHENTICATED' | 'INVALID_API_KEY' | 'UNAVAILABLE';
}

/**
 * The rate-limit headers of a request, for both facades: a caller with a valid key is charged `cost` (0
 * reads its windows), a caller without one goes through the per-address limiter, which counts an
 * unknown key as a failed authentication. A refusal is thrown (`RateLimitRefusal`, its headers on it).
 */
export function rateLimitHeaders(
  gate: Pick<RateLimitGate, 'charge' | 'anonymous'>,
  caller: RateLimitCaller,
  address: string,
  cost: number,
  options?: ChargeOptions,
): Promise<Record<string, string>> {
  return caller.actor ? gate.charge(caller.actor, cost, options) : gate.anonymous(address, caller.authFailure === 'INVALID_API_KEY');
}
