import type { PlanName } from './entities/index.js';
import type { Limits } from './views.js';

/** SPEC §6. Enterprise accounts carry their own quotas. */
export const PLAN_LIMITS: Record<Exclude<PlanName, 'enterprise'>, Limits> = {
  free: { perMinute: 60, perDay: 1000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1000, perDay: 100_000 },
};

export function limitsFor(plan: PlanName, custom: Limits | null): Limits {
  if (plan === 'enterprise') {
    if (!custom) throw new Error('An enterprise account has no limits set.');
    return custom;
  }
  return PLAN_LIMITS[plan];
}
