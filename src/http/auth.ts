import type { Orm } from '../db/orm.js';
import { AccountsService, hashApiKey, KEY_PREFIX } from '../domain/accounts.service.js';
import type { Actor } from '../domain/index.js';

const CACHE_LIMIT = 10_000;
/** How long the index of valid keys is trusted before it is read again (when next consulted). */
const INDEX_TTL_MS = 5000;
/** Hex characters of a key's hash kept in the index: 64 bits, a collision only costs a lookup. */
const INDEX_HASH_CHARS = 16;

const wellFormed = (rawKey: string) => rawKey.startsWith(KEY_PREFIX) && rawKey.length <= 200;

/**
 * Resolves API keys to callers with a short-lived cache: a hot key costs no query, and a revoked key
 * or a changed plan takes effect within `ttlMs` on every instance (at once on this one, see `forget`).
 */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { actor: Actor | null; expires: number }>();
  private index: { hashes: Set<string>; loadedAt: number } | null = null;
  private loading: Promise<Set<string>> | null = null;

  constructor(
    private readonly orm: Orm,
    private readonly ttlMs = 1000,
  ) {}

  async authenticate(rawKey: string): Promise<Actor | null> {
    const id = hashApiKey(rawKey);
    const now = Date.now();
    const hit = this.cache.get(id);
    if (hit && hit.expires > now) return hit.actor;
    const actor = wellFormed(rawKey) ? await new AccountsService(this.orm.em.fork()).authenticate(rawKey) : null;
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(id, { actor, expires: now + this.ttlMs });
    return actor;
  }

  /**
   * Whether the key may be valid, answered without looking the key up: from the cache, or from an
   * index of the hashes of every unrevoked key (read at most every few seconds, and again after this
   * instance changes a key or an account). Consulted only for an address over the failed-authentication
   * limit (SPEC §5): a key not in the index is refused without a database lookup, a valid key is served,
   * even one this instance has never seen.
   */
  async mayBeValid(rawKey: string): Promise<boolean> {
    if (!wellFormed(rawKey)) return false;
    const id = hashApiKey(rawKey);
    const hit = this.cache.get(id);
    if (hit && hit.expires > Date.now()) return hit.actor !== null;
    return (await this.validHashes()).has(id.slice(0, INDEX_HASH_CHARS));
  }

  /** Drops every cached key and the index: called after this instance changes an account or a key. */
  forget(): void {
    this.cache.clear();
    this.index = null;
  }

  private async validHashes(): Promise<Set<string>> {
    if (this.index && Date.now() - this.index.loadedAt < INDEX_TTL_MS) return this.index.hashes;
    this.loading ??= (async () => {
      try {
        const loadedAt = Date.now();
        const hashes = new Set((await new AccountsService(this.orm.em.fork()).activeKeyHashes()).map((h) => h.slice(0, INDEX_HASH_CHARS)));
        this.index = { hashes, loadedAt };
        return hashes;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }
}
