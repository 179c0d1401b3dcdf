import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import { KeyvAdapter } from '@apollo/utils.keyvadapter';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';

/** Query texts an instance keeps for automatic persisted queries without Redis, in characters. */
const IN_MEMORY_CHARS = 8 * 1024 * 1024;
/** How long a registered text is kept (in memory or in Redis); a client whose hash expired sends the text again. */
export const PERSISTED_QUERY_TTL_SECONDS = 300;
/**
 * The longest text that is kept. A longer one is answered but not kept (its hash alone is then unknown): with the
 * TTL, what one key can make the store hold is bounded by the requests its limits allow.
 */
export const PERSISTED_QUERY_MAX_CHARS = 16 * 1024;

/** `cache`, keeping no text longer than PERSISTED_QUERY_MAX_CHARS. */
function capped(cache: KeyValueCache<string>): KeyValueCache<string> {
  return {
    get: (key) => cache.get(key),
    set: (key, text, options) => (text.length > PERSISTED_QUERY_MAX_CHARS ? Promise.resolve() : cache.set(key, text, options)),
    delete: (key) => cache.delete(key),
  };
}

/**
 * Where Apollo keeps the query texts of automatic persisted queries (by their SHA-256): this process's bounded
 * LRU cache, or Redis when `REDIS_URL` is set, through Apollo's Keyv adapter, so that a query one instance
 * registered is found by every other (keys `<RATE_LIMIT_KEY_PREFIX>:apq:<sha256>`). Entries live
 * PERSISTED_QUERY_TTL_SECONDS (Apollo passes its `ttl` option to every `set`; without one Redis would keep them
 * forever); a Redis that fails makes a hash unknown (the client sends the text again).
 */
export function persistedQueryCache(
  config: Pick<Config, 'redisUrl' | 'rateLimitKeyPrefix' | 'redisCommandTimeoutMs'>,
  logger: Logger,
): { cache: KeyValueCache<string>; close(): Promise<void> } {
  if (!config.redisUrl) {
    return {
      cache: capped(new InMemoryLRUCache<string>({ maxSize: IN_MEMORY_CHARS, sizeCalculation: (text) => Math.max(1, text.length) })),
      close: async () => {},
    };
  }
  // As every Redis client of the service, fail fast: no offline queue, no retry loop inside a call (the next call
  // connects again), a connection or a call unanswered after REDIS_COMMAND_TIMEOUT_MS fails; the hash is then
  // unknown for that request and the client sends the text.
  const wait = config.redisCommandTimeoutMs;
  const store = new KeyvRedis(
    {
      url: config.redisUrl,
      disableOfflineQueue: true,
      commandOptions: { timeout: wait },
      socket: { connectTimeout: wait, reconnectStrategy: false },
    },
    { throwOnConnectError: false, throwOnErrors: false, connectionTimeout: wait, keyPrefixSeparator: ':' },
  );
  // Keys `<prefix>:apq:<sha256>`: Apollo's own `apq:` after the namespace, which the store alone applies (Keyv's
  // prefix off, as @keyv/redis documents: with both on, each would add it).
  const keyv = new Keyv<string>({ store, namespace: config.rateLimitKeyPrefix, useKeyPrefix: false });
  // One warning per outage minute, not one per reconnection attempt.
  let warnedAt = 0;
  keyv.on('error', (err: unknown) => {
    if (Date.now() - warnedAt < 60_000) return;
    warnedAt = Date.now();
    logger.warn(
      { err: (err as Error)?.message },
      'persisted-query store: Redis unavailable; unknown hashes are asked for their query text',
    );
  });
  return {
    // The same Keyv class, declared twice (the adapter's CommonJS types and this module's ESM ones).
    cache: capped(new KeyvAdapter(keyv as unknown as ConstructorParameters<typeof KeyvAdapter<string>>[0])),
    close: () => store.disconnect().catch(() => undefined),
  };
}
