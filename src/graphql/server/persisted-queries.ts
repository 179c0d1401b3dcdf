import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import { KeyvAdapter } from '@apollo/utils.keyvadapter';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import { createClient } from '@redis/client';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { REDIS_CONNECT_WAIT_MS, redisReady } from '../../rate-limit/store.js';

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
export async function persistedQueryCache(
  config: Pick<Config, 'redisUrl' | 'rateLimitKeyPrefix' | 'redisCommandTimeoutMs'>,
  logger: Logger,
): Promise<{ cache: KeyValueCache<string>; close(): Promise<void> }> {
  if (!config.redisUrl) {
    return {
      cache: capped(new InMemoryLRUCache<string>({ maxSize: IN_MEMORY_CHARS, sizeCalculation: (text) => Math.max(1, text.length) })),
      close: async () => {},
    };
  }
  // The connection is node-redis's own, opened here and kept by its reconnect strategy (its default backoff) through
  // outages: @keyv/redis 5 connects on a call while the client is not open, and calls made during that connection
  // each connect again, which aborts the first (writes were lost while the first registrations of an instance ran
  // at once). As every Redis client of the service, fail fast: no offline queue, so a call while Redis is away fails
  // at once, and one unanswered after REDIS_COMMAND_TIMEOUT_MS fails too; the hash is then unknown for that request.
  const wait = config.redisCommandTimeoutMs;
  const client = createClient({
    url: config.redisUrl,
    disableOfflineQueue: true,
    commandOptions: { timeout: wait },
    socket: { connectTimeout: REDIS_CONNECT_WAIT_MS },
  });
  // One warning per outage minute, not one per reconnection attempt; one line when Redis is back.
  let warnedAt = 0;
  let down = false;
  client.on('ready', () => {
    if (down) logger.info('persisted-query store: Redis is back; hashes are kept and shared again');
    down = false;
  });
  const warn = (err: unknown) => {
    down = true;
    if (Date.now() - warnedAt < 60_000) return;
    warnedAt = Date.now();
    logger.warn(
      { err: (err as Error)?.message },
      'persisted-query store: Redis unavailable; unknown hashes are asked for their query text',
    );
  };
  client.on('error', warn);
  // Start with the connection when Redis is there (as the limiter does); without it, start and keep trying.
  client.connect().catch(() => undefined);
  await redisReady(client, REDIS_CONNECT_WAIT_MS);
  const store = new KeyvRedis(client, { throwOnConnectError: false, throwOnErrors: false, keyPrefixSeparator: ':' });
  // Keys `<prefix>:apq:<sha256>`: Apollo's own `apq:` after the namespace, which the store alone applies (Keyv's
  // prefix off, as @keyv/redis documents: with both on, each would add it).
  const keyv = new Keyv<string>({ store, namespace: config.rateLimitKeyPrefix, useKeyPrefix: false });
  keyv.on('error', warn);
  return {
    // The same Keyv class, declared twice (the adapter's CommonJS types and this module's ESM ones).
    cache: capped(new KeyvAdapter(keyv as unknown as ConstructorParameters<typeof KeyvAdapter<string>>[0])),
    // Stops the reconnection too: `destroy` closes a client that is open, connected or still trying.
    close: async () => {
      if (client.isOpen) client.destroy();
    },
  };
}
