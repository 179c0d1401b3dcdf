/**
 * Concurrent-subscription slots per account, for the plan caps. In memory on one instance (the
 * embedded default); with `REDIS_URL`, one Redis sorted set per account holds every instance's open
 * subscriptions, so a cap holds across instances. Each member is a lease (its score is when it
 * expires): the instance that holds it renews it every third of `SUBSCRIPTION_LEASE_MS`, so the slots
 * of an instance that died without closing its sockets (SIGKILL, a lost machine) come back within one
 * lease. Taking a slot is one Lua script (drop expired leases, count, add), atomic in Redis, timed by
 * Redis's clock so instances' clocks do not matter.
 *
 * If Redis fails, the slots are counted among this instance's own (logged): the cap then holds per instance, as
 * the rate limits do during an outage, and subscriptions are never refused for it. A slot taken then is one of this
 * instance's leases like any other: the heartbeat's renewal writes it into Redis once Redis answers, and from then on
 * it counts on every instance again.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { failFastRedisOptions, redisReady, REDIS_CONNECT_WAIT_MS } from './store.js';

export interface SubscriptionSlot {
  /** Gives the slot back (idempotent). */
  release(): void;
}

export interface SubscriptionSlots {
  /** One of the account's `cap` slots, or null when all are taken. */
  acquire(accountId: number, cap: number): Promise<SubscriptionSlot | null>;
  close(): Promise<void>;
}

export interface SlotOptions {
  redisUrl?: string;
  /** Prefix of the Redis keys (RATE_LIMIT_KEY_PREFIX): instances of one deployment share it. */
  keyPrefix: string;
  leaseMs: number;
  /** A Redis command unanswered after this long fails, and the slot is counted in memory (REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs: number;
  logger: Logger;
}

/** Slots counted in this process only. */
export function memorySlots(): SubscriptionSlots {
  const held = new Map<number, number>();
  return {
    async acquire(accountId, cap) {
      const count = held.get(accountId) ?? 0;
      if (count >= cap) return null;
      held.set(accountId, count + 1);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          const left = (held.get(accountId) ?? 1) - 1;
          if (left > 0) held.set(accountId, left);
          else held.delete(accountId);
        },
      };
    },
    async close() {},
  };
}

// KEYS[1]: the account's set; ARGV: lease ms, cap, member. Returns 1 when the slot was taken.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

// KEYS[1]: the account's set; ARGV: lease ms, members. Renews (or restores, after an outage) the leases of open subscriptions.
const RENEW = `
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], expires, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 0`;

type SlotsClient = Redis & {
  acquireSlot(key: string, leaseMs: number, cap: number, member: string): Promise<number>;
  renewSlots(key: string, leaseMs: number, ...members: string[]): Promise<number>;
};

/** Slots in Redis when `redisUrl` is set, else in memory. */
export async function createSubscriptionSlots(options: SlotOptions): Promise<SubscriptionSlots> {
  if (!options.redisUrl) return memorySlots();
  const { Redis } = await import('ioredis');
  const client = new Redis(options.redisUrl, failFastRedisOptions(options.commandTimeoutMs)) as SlotsClient;
  client.defineCommand('acquireSlot', { numberOfKeys: 1, lua: ACQUIRE });
  client.defineCommand('renewSlots', { numberOfKeys: 1, lua: RENEW });
  client.on('error', () => undefined); // each failed call is handled (and logged) where it fails
  // Without an offline queue a command before the connection is ready fails: wait for it (bounded), as the limiter does.
  await redisReady(client, REDIS_CONNECT_WAIT_MS);
  if (client.status !== 'ready')
    options.logger.warn('subscription slots: Redis is not reachable at start; counting this instance’s subscriptions only until it is');

  const { leaseMs, logger } = options;
  const instance = randomUUID();
  let sequence = 0;
  const keyOf = (accountId: number) => `${options.keyPrefix}:subscriptions:${accountId}`;
  /** This instance's members in Redis, per account, renewed by the heartbeat. */
  const held = new Map<number, Set<string>>();
  let degraded = false;
  const failed = (err: unknown) => {
    if (!degraded)
      logger.warn({ err: (err as Error).message }, 'subscription slots: Redis failed; counting this instance’s subscriptions only');
    degraded = true;
  };
  const recovered = () => {
    if (degraded) logger.info('subscription slots: Redis answers again');
    degraded = false;
  };

  const heartbeat = setInterval(
    () => {
      for (const [accountId, members] of held) {
        client.renewSlots(keyOf(accountId), leaseMs, ...members).then(recovered, failed);
      }
    },
    Math.max(100, Math.floor(leaseMs / 3)),
  );
  heartbeat.unref();

  return {
    async acquire(accountId, cap) {
      const member = `${instance}:${++sequence}`;
      try {
        if (!(await client.acquireSlot(keyOf(accountId), leaseMs, cap, member))) return null;
        recovered();
      } catch (err) {
        failed(err);
        // This instance's leases, those taken before the outage included.
        if ((held.get(accountId)?.size ?? 0) >= cap) return null;
      }
      let members = held.get(accountId);
      if (!members) held.set(accountId, (members = new Set()));
      members.add(member);
      return {
        release() {
          if (!members.delete(member)) return;
          if (members.size === 0 && held.get(accountId) === members) held.delete(accountId);
          // If this fails, the lease runs out by itself.
          client.zrem(keyOf(accountId), member).catch(() => undefined);
        },
      };
    },
    async close() {
      clearInterval(heartbeat);
      // Give back what this instance holds: a graceful stop frees its slots at once, not after a lease.
      const pending = [...held].map(([accountId, members]) => client.zrem(keyOf(accountId), ...members).catch(() => undefined));
      held.clear();
      await Promise.all(pending);
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };
}
