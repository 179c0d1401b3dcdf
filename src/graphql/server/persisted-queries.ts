import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import { KeyvAdapter } from '@apollo/utils.keyvadapter';
import KeyvRedis from '@keyv/redis';
import Keyv from 'keyv';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';

/** Query texts an instance keeps for automatic persisted queries without Redis, in characters. */
const IN_MEMORY_CHARS = 8 * 1024 * 1024;

/**
 * Where Apollo keeps the query texts of automatic persisted queries (by their SHA-256): this process's bounded
 * LRU cache, or Redis when `REDIS_URL` is set, through Apollo's Keyv adapter, so that a query one instance
 * registered is found by every other (keys under `<RATE_LIMIT_KEY_PREFIX>:apq`). Entries in Redis live as long
 * as Apollo's persisted-query TTL says; a Redis that fails makes a hash unknown (the client sends the text again).
 */
export function persistedQueryCache(config: Pick<Config, 'redisUrl' | 'rateLimitKeyPrefix'>, logger: Logger): { cache: KeyValueCache<string>; close(): Promise<void> } {
  if (!config.redisUrl) {
    return { cache: new InMemoryLRUCache<string>({ maxSize: IN_MEMORY_CHARS, sizeCalculation: (text) => Math.max(1, text.length) }), close: async () => {} };
  }
  const store = new KeyvRedis(config.redisUrl, { throwOnConnectError: false, throwOnErrors: false });
  const keyv = new Keyv<string>({ store, namespace: `${config.rateLimitKeyPrefix}:apq` });
  keyv.on('error', (err: unknown) => logger.warn({ err }, 'persisted-query store unavailable'));
  return {
    // The same Keyv class, declared twice (the adapter's CommonJS types and this module's ESM ones).
    cache: new KeyvAdapter(keyv as unknown as ConstructorParameters<typeof KeyvAdapter<string>>[0]),
    close: () => store.disconnect().catch(() => undefined),
  };
}
