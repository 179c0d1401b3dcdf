import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type StartOptions, type TestApp, type TestResponse } from '../helpers/app.js';

export type StoreKind = 'memory' | 'redis';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh Redis key prefix, so parallel test files and apps never share counters by accident. */
export const freshPrefix = () => `petstore-rl-test-${randomBytes(6).toString('hex')}`;

/**
 * For apps on the shared test Redis whose tests assert exact counts: a command timeout long enough
 * that a machine under load (event loop starved) never sends a call to the per-instance insurance
 * limiter, which would let more through than the shared count allows. The outage tests keep short ones.
 */
export const PATIENT_REDIS = { REDIS_COMMAND_TIMEOUT_MS: '5000' } as const;

/**
 * Starts the app on the given limiter store: memory (REDIS_URL forced off, even in the CI pass that
 * puts every app on Redis) or Redis with its own key prefix and a patient command timeout.
 */
export function startOn(
  store: StoreKind,
  redis: string | undefined,
  options: { env?: Record<string, string>; windows?: { minute: number; day: number }; prefix?: string; databaseUrl?: string } = {},
): Promise<TestApp> {
  const storeEnv: Record<string, string> =
    store === 'redis' ? { REDIS_URL: redis!, RATE_LIMIT_KEY_PREFIX: options.prefix ?? freshPrefix(), ...PATIENT_REDIS } : { REDIS_URL: '' };
  const start: StartOptions = { env: { ...storeEnv, ...options.env }, databaseUrl: options.databaseUrl };
  if (options.windows) start.windows = options.windows;
  return startApp(start);
}

/** Counts responses by status, e.g. `{ 200: 60, 429: 10 }`. */
export function statusCounts(responses: TestResponse[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

const num = (res: TestResponse, name: string) => {
  const value = res.headers.get(name);
  assert.ok(value !== null, `${name} header is missing (status ${res.status})`);
  assert.match(value, /^\d+$/, `${name} is not a whole number: ${value}`);
  return Number(value);
};

export interface RateHeaders {
  limit: number;
  remaining: number;
  reset: number;
  resource: string | null;
  policy: string | null;
  rateLimit: string | null;
  retryAfter: number | null;
}

/** The rate-limit headers of a response, checked for shape (docs/RATE-LIMITS.md, "Headers"). */
export function rateHeaders(res: TestResponse): RateHeaders {
  const retry = res.headers.get('retry-after');
  const reset = num(res, 'x-ratelimit-reset');
  const now = Math.floor(Date.now() / 1000);
  assert.ok(reset >= now - 1, `X-RateLimit-Reset ${reset} is in the past (now ${now})`);
  return {
    limit: num(res, 'x-ratelimit-limit'),
    remaining: num(res, 'x-ratelimit-remaining'),
    reset,
    resource: res.headers.get('x-ratelimit-resource'),
    policy: res.headers.get('ratelimit-policy'),
    rateLimit: res.headers.get('ratelimit'),
    retryAfter: retry === null ? null : Number(retry),
  };
}

/** Asserts a keyed response's headers: the window shown, what is left, and the IETF fields agreeing with them. */
export function assertKeyed(
  res: TestResponse,
  expected: { resource: 'minute' | 'day'; limit: number; remaining: number; policy?: string },
) {
  const h = rateHeaders(res);
  assert.equal(h.resource, expected.resource, `X-RateLimit-Resource (status ${res.status})`);
  assert.equal(h.limit, expected.limit, 'X-RateLimit-Limit');
  assert.equal(h.remaining, expected.remaining, 'X-RateLimit-Remaining');
  if (expected.policy) assert.equal(h.policy, expected.policy, 'RateLimit-Policy');
  const m = /^"(minute|day)";r=(\d+);t=(\d+)$/.exec(h.rateLimit ?? '');
  assert.ok(m, `RateLimit header malformed: ${h.rateLimit}`);
  assert.equal(m[1], expected.resource);
  assert.equal(Number(m[2]), expected.remaining);
  assert.ok(Number(m[3]) >= 1, 'RateLimit t is at least 1');
  return h;
}

/** Asserts a 429 with a whole, positive Retry-After no later than the window shown resets. */
export function assert429(res: TestResponse, code: 'RATE_LIMITED' | 'API_KEY_BANNED') {
  assert.equal(res.status, 429, `expected 429 ${code}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body?.code, code, res.text.slice(0, 300));
  const h = rateHeaders(res);
  assert.ok(h.retryAfter !== null && Number.isInteger(h.retryAfter) && h.retryAfter >= 1, `Retry-After: ${h.retryAfter}`);
  assert.equal(h.remaining, 0, 'a refused request shows nothing left in the window it names');
  return h;
}
