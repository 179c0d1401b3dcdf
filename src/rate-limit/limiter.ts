import type { RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../config.js';
import type { Actor } from '../domain/index.js';
import { PLANS, type PlanName } from '../domain/entities/index.js';
import { ENTERPRISE_BOUNDS, limitsFor, PLAN_LIMITS } from '../domain/plans.js';
import { RateLimitRefusal } from './refusal.js';
import type { RateLimitGate } from './gate.js';
import { KeyBans } from './bans.js';
import { AddressLimiter } from './address-limiter.js';
import { addressHeaders, keyedHeaders, nearestExhaustion, secondsUntil, toUsage, type Resource, type WindowState } from './headers.js';
import { memoryStore, redisStore, type Counter, type LimiterStore, type StoreLogger } from './store.js';

export interface GateOptions {
  /** Store transitions (Redis lost / back) are logged here. */
  logger?: StoreLogger;
  /** Called when a refusal bans a key (metrics). */
  onBan?: (plan: PlanName) => void;
  /** Window lengths in seconds (default 60 and 86,400); only tests shorten them. */
  windows?: { minute: number; day: number };
  /**
   * Records a ban durably (on the key in the database), so it outlives the store: the gate also
   * refuses a key whose `actor.bannedUntil` (read with the key) is in the future.
   */
  recordBan?: (keyId: number, until: Date) => Promise<void>;
}

const REFUND_MIN_MS = 100;

interface PlanLimiter {
  minute: Counter;
  day: Counter;
}

/**
 * The gate in front of both facades (docs/RATE-LIMITS.md): per plan one limiter of two windows (minute and day)
 * counting per **account**, bans per **key**, failed authentication per client address.
 *
 * Both windows are charged at once and a refused request is refunded in both, so it consumes
 * nothing; the counters only count (`penalty`/`reward`), and the decision is made here against the
 * caller's limits, which is what lets an enterprise account's new quotas apply on its next request.
 */
export async function createRateLimitGate(config: Config, options: GateOptions = {}): Promise<RateLimitGate> {
  const store: LimiterStore = config.redisUrl
    ? await redisStore(config.redisUrl, config.rateLimitKeyPrefix, {
        logger: options.logger,
        commandTimeoutMs: config.redisCommandTimeoutMs,
      })
    : memoryStore();
  const { minute: minuteSeconds, day: daySeconds } = options.windows ?? { minute: 60, day: 86_400 };

  const plans = Object.fromEntries(
    PLANS.map((plan) => {
      // An enterprise account's own quotas are at most the domain's bounds for them.
      const ceiling = plan === 'enterprise' ? ENTERPRISE_BOUNDS : PLAN_LIMITS[plan];
      const limiter: PlanLimiter = {
        minute: store.counter({ name: `quota:${plan}:minute`, points: ceiling.perMinute, duration: minuteSeconds }),
        day: store.counter({ name: `quota:${plan}:day`, points: ceiling.perDay, duration: daySeconds }),
      };
      return [plan, limiter];
    }),
  ) as Record<PlanName, PlanLimiter>;

  // Free requests are free of the account's budget, not of bounds: each key has a budget of its own for them.
  const freeReads = store.counter({ name: 'free-reads', points: config.freeReadsPerMinute, duration: minuteSeconds });

  const bans = new KeyBans(store, config.banThreshold, config.banSeconds, minuteSeconds);
  const addresses = new AddressLimiter(config.authFailuresPerMinute, minuteSeconds * 1000, config.authFailuresMaxAddresses);

  const windowsOf = (actor: Actor, minute: RateLimiterRes | null, day: RateLimiterRes | null, now: number): WindowState[] => {
    const limits = limitsFor(actor.plan, actor.limits);
    return [windowState('minute', limits.perMinute, minuteSeconds, minute, now), windowState('day', limits.perDay, daySeconds, day, now)];
  };

  /** The headers of a banned key, computed without the store: nothing left until the ban ends. */
  const banHeaders = (actor: Actor, until: number) => {
    const limits = limitsFor(actor.plan, actor.limits);
    const policy: WindowState[] = [
      { resource: 'minute', limit: limits.perMinute, used: limits.perMinute, resetAt: until, windowSeconds: minuteSeconds },
      { resource: 'day', limit: limits.perDay, used: limits.perDay, resetAt: until, windowSeconds: daySeconds },
    ];
    return keyedHeaders(policy, policy[0]!);
  };
  const bannedError = (actor: Actor, until: number) => {
    const wait = secondsUntil(until);
    return new RateLimitRefusal(
      'API_KEY_BANNED',
      `This API key kept sending requests while rate limited and is banned; retry in ${wait} seconds.`,
      { ...banHeaders(actor, until), 'Retry-After': String(wait) },
    );
  };
  /** The ban's end as this process knows it (remembered, or read with the key), without the store; null when none. */
  const knownBan = (actor: Actor): number | null =>
    bans.remembered(actor.keyId) ?? (actor.bannedUntil && actor.bannedUntil > Date.now() ? actor.bannedUntil : null);
  /**
   * Counts a refusal of the key toward a ban; when it crosses the threshold, records the ban and returns its refusal
   * (API_KEY_BANNED) to throw instead.
   */
  const countRefusal = async (actor: Actor, resetAt: number): Promise<RateLimitRefusal | null> => {
    const bannedUntil = await bans.refused(actor.keyId, resetAt);
    if (!bannedUntil) return null;
    options.onBan?.(actor.plan);
    // Best effort: the store and this process already hold the ban; a failed write is logged, not answered.
    await options
      .recordBan?.(actor.keyId, new Date(bannedUntil))
      .catch((error: Error) =>
        options.logger?.warn({ keyId: actor.keyId, err: error.message }, 'rate limiter: could not record a ban in the database'),
      );
    return bannedError(actor, bannedUntil);
  };
  /** The address's window of failed authentications as headers, counting nothing. */
  const peekAddress = (address: string) => {
    const window = addresses.peek(address);
    return addressHeaders(addresses.limit, window.used, window.resetAt);
  };
  /** The key's ban's end (epoch ms): as remembered or read with the key, else from a shared store; null when none. */
  const banOf = (actor: Actor): number | null | Promise<number | null> => knownBan(actor) ?? bans.check(actor.keyId);

  return {
    async charge(actor, cost, { consume = true, free = false, pushed = false } = {}) {
      const account = String(actor.accountId);
      const limiter = plans[actor.plan];
      if (cost <= 0) {
        // Free operations read the windows, and are refused (not even for a banned key, whose headers say the ban) only
        // past the key's free budget.
        const [minute, day, reads, banned] = await Promise.all([
          limiter.minute.get(account),
          limiter.day.get(account),
          free ? freeReads.penalty(String(actor.keyId), 1) : null,
          banOf(actor),
        ]);
        const now = Date.now();
        const windows = windowsOf(actor, minute, day, now);
        const headers = banned ? banHeaders(actor, banned) : keyedHeaders(windows, nearestExhaustion(windows), now);
        if (!reads || reads.consumedPoints <= config.freeReadsPerMinute) return headers;
        // Past the free budget a refusal counts toward a ban, as any (a key honouring Retry-After collects one a minute).
        const banRefusal = banned ? null : await countRefusal(actor, now + reads.msBeforeNext);
        if (banRefusal) throw banRefusal;
        const wait = secondsUntil(now + reads.msBeforeNext, now);
        throw new RateLimitRefusal(
          'RATE_LIMITED',
          `Free requests (the rate-limit status, introspection, the API documents) are limited to ${config.freeReadsPerMinute} per minute per key; retry in ${wait} seconds.`,
          { ...headers, 'Retry-After': String(wait) },
        );
      }

      const remembered = knownBan(actor);
      if (remembered) throw bannedError(actor, remembered);

      // A request that is not to consume reads the windows and is judged as if it had been charged. The ban is
      // asked of the store only when it is shared (null at once otherwise: left out of Promise.all, two promises fewer).
      const ban = bans.check(actor.keyId);
      const windowsRead = [
        consume ? limiter.minute.penalty(account, cost) : limiter.minute.get(account),
        consume ? limiter.day.penalty(account, cost) : limiter.day.get(account),
      ] as const;
      const [banUntil, minute, day] = ban === null ? [null, ...(await Promise.all(windowsRead))] : await Promise.all([ban, ...windowsRead]);
      const now = Date.now();
      const windows = windowsOf(actor, minute, day, now);
      if (!consume) for (const w of windows) w.used += cost;
      const refused = windows.filter((w) => w.used > w.limit);
      if (!banUntil && refused.length === 0) {
        if (!consume) for (const w of windows) w.used -= cost;
        return keyedHeaders(windows, nearestExhaustion(windows), now);
      }

      // Refused: give the cost back to both windows, so the request consumed nothing. A window about
      // to expire is left alone: its count vanishes anyway, and a refund landing after the expiry
      // would open the next window in credit.
      if (consume) {
        await Promise.all([
          minute!.msBeforeNext > REFUND_MIN_MS ? limiter.minute.reward(account, cost) : null,
          day!.msBeforeNext > REFUND_MIN_MS ? limiter.day.reward(account, cost) : null,
        ]);
      }
      if (banUntil) throw bannedError(actor, banUntil);
      for (const w of windows) w.used -= cost;

      // A request bigger than a whole window: that window (the smallest such) is the one to name. Otherwise the window
      // that refused; if both did, the later one, since only its reset lets the request through.
      const tooSmall = windows.filter((w) => cost > w.limit);
      const hopeless = tooSmall.length > 0;
      const shown = hopeless
        ? tooSmall.reduce((a, b) => (b.limit < a.limit ? b : a))
        : refused.reduce((a, b) => (b.resetAt > a.resetAt ? b : a));
      // A request bigger than a whole window counts toward a ban as any refusal does (else a key could send them without
      // bound); one sent once per window, as its Retry-After asks, never adds up. The service's own push never counts.
      const banRefusal = pushed ? null : await countRefusal(actor, shown.resetAt);
      if (banRefusal) throw banRefusal;
      const wait = secondsUntil(shown.resetAt, now);
      const message = hopeless
        ? `This request costs ${cost}, more than the ${shown.resource} limit of ${shown.limit}; split it into smaller requests.`
        : `Rate limit exceeded (${shown.limit} per ${shown.resource}); retry in ${wait} seconds.`;
      throw new RateLimitRefusal('RATE_LIMITED', message, { ...keyedHeaders(windows, shown, now), 'Retry-After': String(wait) });
    },

    async anonymous(address, failedAuth) {
      if (!failedAuth) return peekAddress(address);
      const now = Date.now();
      const window = addresses.fail(address, now);
      const headers = addressHeaders(addresses.limit, window.used, window.resetAt);
      if (window.used <= addresses.limit) return headers;
      const wait = secondsUntil(window.resetAt, now);
      throw new RateLimitRefusal('RATE_LIMITED', `Too many failed authentications from your address; retry in ${wait} seconds.`, {
        ...headers,
        'Retry-After': String(wait),
      });
    },

    refuseKnownBan(actor) {
      const until = knownBan(actor);
      if (until) throw bannedError(actor, until);
    },

    addressHeaders: peekAddress,
    isAddressBlocked: (address) => addresses.exhausted(address),
    trackedAddresses: () => addresses.size,

    async status(actor) {
      const account = String(actor.accountId);
      const limiter = plans[actor.plan];
      const [minute, day, banned] = await Promise.all([limiter.minute.get(account), limiter.day.get(account), banOf(actor)]);
      const [m, d] = windowsOf(actor, minute, day, Date.now());
      return { plan: actor.plan, resources: { minute: toUsage(m!), day: toUsage(d!) }, bannedUntil: banned ? new Date(banned) : null };
    },

    bans,
    ready: () => store.health(),
    close: () => store.close(),
  };
}

function resetAt(res: RateLimiterRes | null, windowSeconds: number, now: number): number {
  return res && res.msBeforeNext > 0 ? now + res.msBeforeNext : now + windowSeconds * 1000;
}

/** A window without a live entry has nothing used and would start with the next request. */
function windowState(resource: Resource, limit: number, windowSeconds: number, res: RateLimiterRes | null, now: number): WindowState {
  const live = res && res.msBeforeNext > 0 ? res : null;
  return { resource, limit, used: live?.consumedPoints ?? 0, resetAt: resetAt(live, windowSeconds, now), windowSeconds };
}
