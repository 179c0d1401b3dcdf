import type { PlanName, Role } from './entities/index.js';

/** Who is calling: resolved from the API key once per request by the shared auth middleware. */
export interface Actor {
  accountId: number;
  accountName: string;
  role: Role;
  plan: PlanName;
  /** Custom quotas (enterprise only). */
  limits: { perMinute: number; perDay: number } | null;
  keyId: number;
  keyPrefix: string;
  keyCreatedAt: Date;
  /** Epoch ms until which the key is banned, as the database records it (null: not banned). */
  bannedUntil?: number | null;
}

export const isStaff = (actor: Actor) => actor.role === 'staff';
