// The package's index (it loads every store it supports, about 30 ms once at start).
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/** What the gate uses of a counter: it only counts (`penalty`/`reward`), reads, blocks and deletes. */
export type Counter = Pick<RateLimiterAbstract, 'get' | 'penalty' | 'reward' | 'block' | 'delete'>;

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
  /** With Redis: true while the per-instance insurance limiters serve instead (Redis down, hung or slow). */
  degraded?: boolean;
}

/** Where the counters live: this process, or Redis shared by every instance. */
export interface LimiterStore {
  kind: 'memory' | 'redis';
  counter(spec: CounterSpec): Counter;
  health(): Promise<StoreHealth>;
  close(): Promise<void>;
}

export interface StoreLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** At start, how long to wait for Redis before serving on the insurance limiters. */
export const REDIS_CONNECT_WAIT_MS = 2000;

/**
 * The options of every Redis client of this service (the limiter's, the subscription slots'): fail fast instead of
 * waiting. No offline queue and no retries, so a call while Redis is away fails at once; a call unanswered after
 * `commandTimeoutMs` (REDIS_COMMAND_TIMEOUT_MS) fails too, and the caller's in-memory fallback answers.
 */
export const failFastRedisOptions = (commandTimeoutMs: number) => ({
  enableOfflineQueue: false,
  commandTimeout: commandTimeoutMs,
  maxRetriesPerRequest: 0,
  connectTimeout: REDIS_CONNECT_WAIT_MS,
});
/** Consecutive failed Redis calls that open the circuit: from then on the insurance limiters answer at once. */
const FAILURES_TO_OPEN = 3;
/** While the circuit is open, how often a background PING asks whether Redis answers again. */
const PROBE_INTERVAL_MS = 1000;

export function memoryStore(): LimiterStore {
  return {
    kind: 'memory',
    counter: ({ points, duration }) => new RateLimiterMemory({ points, duration }),
    health: async () => ({ ok: true, store: 'memory' }),
    close: async () => {},
  };
}

/** A Redis client's connection events (ioredis's and node-redis's alike). */
interface ConnectionEvents {
  once(event: 'ready' | 'error', listener: () => void): unknown;
  off(event: 'ready' | 'error', listener: () => void): unknown;
}

/** Resolves once the client is ready, fails to connect, or `waitMs` passed, whichever comes first. */
export function redisReady(client: ConnectionEvents, waitMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      client.off('error', done);
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    timer.unref();
    client.once('ready', done);
    client.once('error', done);
  });
}

/**
 * Counters in Redis, each insured by an in-memory twin: when Redis is down or slow the twin answers,
 * so an outage degrades to per-instance limits instead of errors. No offline queue, and calls are
 * refused at once while the connection is not ready, so requests never wait for Redis to come back.
 */
export async function redisStore(
  url: string,
  keyPrefix: string,
  options: { logger?: StoreLogger; commandTimeoutMs: number },
): Promise<LimiterStore> {
  const { logger, commandTimeoutMs } = options;
  // Loaded only when Redis is configured: the embedded default never holds the client in memory.
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    ...failFastRedisOptions(commandTimeoutMs),
    lazyConnect: false,
    // A charge issues its commands (ban, minute, day) in one tick, and concurrent requests do too:
    // one write and one round trip for all of them instead of one each (the bench's Redis rows).
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
  await redisReady(client, REDIS_CONNECT_WAIT_MS);
  if (!up) logger?.warn({ store: 'redis' }, 'rate limiter: Redis is not reachable at start; serving on per-instance insurance limiters');
  const breaker = new CircuitBreaker(() => client.ping().then(() => undefined), logger);
  return {
    kind: 'redis',
    counter: ({ name, points, duration }) =>
      guarded(
        new RateLimiterRedis({ storeClient: client, keyPrefix: `${keyPrefix}:${name}`, points, duration, rejectIfRedisNotReady: true }),
        new RateLimiterMemory({ keyPrefix: `insurance:${name}`, points, duration }),
        breaker,
      ),
    async health() {
      // While the circuit is open Redis is known not to answer: no PING that would wait for its timeout.
      const answered =
        !breaker.isOpen &&
        client.status === 'ready' &&
        (await client.ping().then(
          () => true,
          () => false,
        ));
      // Degraded, not unready: the insurance limiters keep this instance serving.
      return { ok: true, store: 'redis', redis: answered ? 'up' : 'down', degraded: !answered };
    },
    async close() {
      breaker.stop();
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}

/**
 * A Redis counter behind the circuit breaker, insured by an in-memory twin: while the circuit is
 * closed a call goes to Redis and, if it fails (down, or no answer within the command timeout),
 * is answered by the twin; once the circuit is open every call goes to the twin at once, so a hung
 * Redis costs nothing per request instead of the command timeout.
 */
function guarded(redis: RateLimiterRedis, insurance: RateLimiterMemory, breaker: CircuitBreaker): Counter {
  const call = async <T>(use: (limiter: Counter) => Promise<T>): Promise<T> => {
    if (breaker.isOpen) return use(insurance);
    try {
      const result = await use(redis);
      breaker.succeeded();
      return result;
    } catch (error) {
      if (error instanceof RateLimiterRes) throw error;
      breaker.failed();
      return use(insurance);
    }
  };
  return {
    get: (key, options) => call((l) => l.get(key, options)),
    penalty: (key, points, options) => call((l) => l.penalty(key, points, options)),
    reward: (key, points, options) => call((l) => l.reward(key, points, options)),
    block: (key, seconds, options) => call((l) => l.block(key, seconds, options)),
    delete: (key, options) => call((l) => l.delete(key, options)),
  };
}

/**
 * Opens after `FAILURES_TO_OPEN` consecutive failures; while open, probes every `PROBE_INTERVAL_MS`
 * in the background and closes on the first probe that succeeds (Redis answers again).
 */
class CircuitBreaker {
  private failures = 0;
  private probe: NodeJS.Timeout | undefined;
  private probing = false;

  constructor(
    private readonly ping: () => Promise<void>,
    private readonly logger?: StoreLogger,
  ) {}

  get isOpen(): boolean {
    return this.probe !== undefined;
  }

  succeeded(): void {
    this.failures = 0;
  }

  failed(): void {
    this.failures += 1;
    if (this.failures < FAILURES_TO_OPEN || this.isOpen) return;
    this.logger?.warn(
      { store: 'redis', failures: this.failures },
      'rate limiter: Redis keeps failing; circuit open, serving on per-instance insurance limiters',
    );
    this.probe = setInterval(() => void this.tryClose(), PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  stop(): void {
    clearInterval(this.probe);
    this.probe = undefined;
  }

  private async tryClose(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await this.ping();
      this.stop();
      this.failures = 0;
      this.logger?.info({ store: 'redis' }, 'rate limiter: Redis answers again; circuit closed');
    } catch {
      // Still down: the next probe tries again.
    } finally {
      this.probing = false;
    }
  }
}
