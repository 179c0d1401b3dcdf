import { createHash } from 'node:crypto';
import type { Orm } from '../db/orm.js';
import { AccountsService } from '../domain/accounts.service.js';
import type { Actor } from '../domain/index.js';

const CACHE_LIMIT = 10_000;

/**
 * Resolves API keys to callers with a short-lived cache: a hot key costs no query, and a revoked key
 * or a changed plan takes effect within `ttlMs` on every instance (at once on this one, see `forget`).
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { actor: Actor | null; expires: number }>();

  constructor(
    private readonly orm: Orm,
    private readonly ttlMs = 1000,
  ) {}

  async authenticate(rawKey: string): Promise<Actor | null> {
    const id = createHash('sha256').update(rawKey).digest('base64');
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && hit.expires > now) return hit.actor;
    const actor = await new AccountsService(this.orm.em.fork()).authenticate(rawKey);
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(id, { actor, expires: now + this.ttlMs });
    return actor;
  }

  /** Drops every cached key: called after this instance changes an account or a key. */
  forget(): void {
    this.cache.clear();
  }
}
