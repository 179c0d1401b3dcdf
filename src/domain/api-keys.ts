/**
 * API keys as the edge meets them: their form, their hash (the only thing stored) and the lookup that resolves a raw
 * key to its caller on every request. Issuing and revoking keys is account administration (accounts.service.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { PlanName, Role } from './entities/index.js';
import type { Actor } from './actor.js';
import { customLimits } from './plans.js';
import type { SqlReader } from './reader.js';
import { timeOf } from './rows.js';

export const KEY_PREFIX = 'psk_';
/** Characters of a key shown in lists: `psk_` and 4 more (24 bits), enough to tell keys apart, nothing worth guessing. */
export const SHOWN_PREFIX_LENGTH = 8;

/** 192 random bits, url-safe, prefixed so that secret scanners recognise a leaked key. */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(24).toString('base64url');
}

/** Whether a raw key can be a key at all (its prefix, a sane length): anything else is refused without a lookup. */
export const wellFormedKey = (rawKey: string) => rawKey.startsWith(KEY_PREFIX) && rawKey.length <= 200;

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

/** Whether a ban recorded until `until` (epoch ms) still lasts. */
export const banLasts = (until: number | null | undefined, now = Date.now()): until is number => typeof until === 'number' && until > now;

/** A key and its account as `authenticateKey` reads them (ids and datetimes are strings on PostgreSQL). */
interface KeyRow {
  id: number | string;
  prefix: string;
  created_at: number | string | Date;
  banned_until: number | string | Date | null;
  account_id: number | string;
  name: string;
  role: Role;
  plan: PlanName;
  per_minute: number | null;
  per_day: number | null;
  webhook_endpoint_cap: number | null;
  subscription_cap: number | null;
}

const KEY_SELECT = `select k.id, k.prefix, k.created_at, k.banned_until, a.id as account_id, a.name, a.role, a.plan, a.per_minute, a.per_day,
  a.webhook_endpoint_cap, a.subscription_cap from api_keys k join accounts a on a.id = k.account_id where k.hash = ? and k.revoked_at is null`;

/**
 * Resolves a raw key to the caller, or null for an unknown or revoked key: one prepared statement on the plain-SQL
 * reader (a key is looked up on every cache miss of every instance, so never through the ORM's unit of work).
 * `hash`: the key's hash when the caller has it already (the key cache is keyed by it); `now`: for the ban's end.
 */
export async function authenticateKey(
  reader: SqlReader,
  rawKey: string,
  given: { hash?: string; now?: number } = {},
): Promise<Actor | null> {
  if (!wellFormedKey(rawKey)) return null;
  const row = await reader.one<KeyRow>(KEY_SELECT, [given.hash ?? hashApiKey(rawKey)]);
  const now = given.now ?? Date.now();
  if (!row) return null;
  const bannedUntil = row.banned_until === null ? null : timeOf(row.banned_until);
  return {
    accountId: Number(row.account_id),
    accountName: row.name,
    role: row.role,
    plan: row.plan,
    limits: customLimits({
      perMinute: row.per_minute,
      perDay: row.per_day,
      webhookEndpointCap: row.webhook_endpoint_cap,
      subscriptionCap: row.subscription_cap,
    }),
    keyId: Number(row.id),
    keyPrefix: row.prefix,
    keyCreatedAt: new Date(timeOf(row.created_at)),
    bannedUntil: banLasts(bannedUntil, now) ? bannedUntil : null,
  };
}
