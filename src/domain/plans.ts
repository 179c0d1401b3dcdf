import type { PlanName } from './entities/index.js';
import type { Limits } from './views.js';

/**
 * Each plan's quotas and caps. Enterprise accounts carry their own quotas, and may carry their own
 * caps: those they do not set are the business plan's.
 */
export const PLAN_LIMITS: Record<Exclude<PlanName, 'enterprise'>, Limits> = {
  free: { perMinute: 60, perDay: 1000, webhookEndpoints: 1, subscriptions: 2 },
  pro: { perMinute: 300, perDay: 10_000, webhookEndpoints: 5, subscriptions: 10 },
  business: { perMinute: 1000, perDay: 100_000, webhookEndpoints: 20, subscriptions: 50 },
};

/**
 * What an enterprise account may be given, at most: the accounts service validates its quotas and caps
 * against these, and the rate limiter sizes the enterprise plan's counters from them.
 */
export const ENTERPRISE_BOUNDS = { perMinute: 1_000_000, perDay: 100_000_000, webhookEndpoints: 1000, subscriptions: 10_000 } as const;

/** What an enterprise account stores: its quotas, and the caps it was given (null: the business plan's). */
export interface CustomLimits {
  perMinute: number;
  perDay: number;
  webhookEndpoints: number | null;
  subscriptions: number | null;
}

export function limitsFor(plan: PlanName, custom: CustomLimits | null): Limits {
  if (plan === 'enterprise') {
    if (!custom) throw new Error('An enterprise account has no limits set.');
    return {
      perMinute: custom.perMinute,
      perDay: custom.perDay,
      webhookEndpoints: custom.webhookEndpoints ?? PLAN_LIMITS.business.webhookEndpoints,
      subscriptions: custom.subscriptions ?? PLAN_LIMITS.business.subscriptions,
    };
  }
  return PLAN_LIMITS[plan];
}

/** An account's stored limits columns as `CustomLimits`; null when it stores no quotas (not an enterprise account). */
export const customLimits = (a: {
  perMinute: number | null;
  perDay: number | null;
  webhookEndpointCap: number | null;
  subscriptionCap: number | null;
}): CustomLimits | null =>
  a.perMinute !== null && a.perDay !== null
    ? { perMinute: a.perMinute, perDay: a.perDay, webhookEndpoints: a.webhookEndpointCap, subscriptions: a.subscriptionCap }
    : null;
