import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** A counter kept in the limiter store: `points` is informative only, the gate decides from the counts. */
export interface CounterSpec {
  name: string;
  points: number;
  /** Window length in whole seconds (≥ 1). */
  duration: number;
}

export interface StoreHealth {
  ok: boolean;
  store: 'memory' | 'redis';
  /** With Redis: whether it answers right now (when down, the insurance limiters serve). */
  redis?: 'up' | 'down';
}

/** Where the counters live: this process, or Redis shared by every instance. */
export interface LimiterStore {
  kind: 'memory' | 'redis';
  counter(spec: CounterSpec): RateLimiterAbstract;
  health(): Promise<StoreHealth>;
  close(): Promise<void>;
}

export interface StoreLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** A Redis call slower than this counts as an outage and goes to the insurance limiter. */
const REDIS_COMMAND_TIMEOUT_MS = 500;
/** At start, how long to wait for Redis before serving on the insurance limiters. */
const REDIS_CONNECT_WAIT_MS = 2000;

export function memoryStore(): LimiterStore {
  return {
    kind: 'memory',
    counter: ({ points, duration }) => new RateLimiterMemory({ points, duration }),
    health: async () => ({ ok: true, store: 'memory' }),
    close: async () => {},
  };
}

/**
 * Counters in Redis, each insured by an in-memory twin: when Redis is down or slow the twin answers,
 * so an outage degrades to per-instance limits instead of errors. No offline queue, and calls are
 * refused at once while the connection is not ready, so requests never wait for Redis to come back.
 */
export async function redisStore(url: string, keyPrefix: string, logger?: StoreLogger): Promise<LimiterStore> {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    connectTimeout: REDIS_CONNECT_WAIT_MS,
    lazyConnect: false,
    // A charge issues its commands (ban, minute, day) in one tick, and concurrent requests do too:
    // one write and one round trip for all of them instead of one each (README, "Performance").
    enableAutoPipelining: true,
  });
  let up = false;
  client.on('ready', () => {
    if (!up) logger?.info({ store: 'redis' }, 'rate limiter: Redis is ready');
    up = true;
  });
  client.on('error', (error: Error) => {
    if (up) logger?.warn({ store: 'redis', err: error.message }, 'rate limiter: Redis failed; serving on per-instance insurance limiters');
    up = false;
  });
  client.on('end', () => {
    up = false;
  });
  // Start exact when Redis is there; start degraded (not failed) when it is not.
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      client.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, REDIS_CONNECT_WAIT_MS);
    timer.unref();
    client.once('ready', done);
    client.once('error', done);
  });
  if (!up) logger?.warn({ store: 'redis' }, 'rate limiter: Redis is not reachable at start; serving on per-instance insurance limiters');
  return {
    kind: 'redis',
    counter: ({ name, points, duration }) =>
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix: `${keyPrefix}:${name}`,
        points,
        duration,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ keyPrefix: `insurance:${name}`, points, duration }),
      }),
    async health() {
      const answered = client.status === 'ready' && (await client.ping().then(() => true, () => false));
      // Degraded, not unready: the insurance limiters keep this instance serving.
      return { ok: true, store: 'redis', redis: answered ? 'up' : 'down' };
    },
    async close() {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}
