import type { PlanName, Role } from './entities/index.js';
import type { CustomLimits } from './plans.js';

/** Who is calling: resolved from the API key once per request by the shared auth middleware. */
export interface Actor {
  accountId: number;
  accountName: string;
  role: Role;
  plan: PlanName;
  /** Custom quotas and caps (enterprise only); `limitsFor` gives the effective ones. */
  limits: CustomLimits | null;
  keyId: number;
  keyPrefix: string;
  keyCreatedAt: Date;
  /** Epoch ms until which the key is banned, as the database records it (null: not banned). */
  bannedUntil?: number | null;
}

export const isStaff = (actor: Actor) => actor.role === 'staff';

/**
 * Whoever runs `npm run admin` on the server reaches the database directly, so it acts as staff: the
 * way back in after the last staff key is lost. Never produced by an API key.
 */
export const OPERATOR: Actor = {
  accountId: 0,
  accountName: 'operator (npm run admin)',
  role: 'staff',
  plan: 'business',
  limits: null,
  keyId: 0,
  keyPrefix: '',
  keyCreatedAt: new Date(0),
};
