import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createSubscriptionSlots, type SlotOptions } from '../../src/rate-limit/subscription-slots.js';
import { redisUrl, skipUnless } from '../helpers/services.js';
import { freshPrefix } from './support.js';
import { freePort, startRedis, stopRedis, waitFor } from './redis-server.js';

/** The plan caps' slots across instances when Redis goes away and comes back. */
const skip = skipUnless(await redisUrl(), 'Redis');

describe('subscription slots across a Redis outage (a private redis-server)', { skip }, () => {
  it('when an instance takes slots while Redis is down, then its cap counts its slots from before, and once Redis answers they are written back and another instance counts them', async () => {
    const port = await freePort();
    let server: ChildProcess = await startRedis(port);
    const options: SlotOptions = {
      redisUrl: `redis://127.0.0.1:${port}`,
      keyPrefix: freshPrefix(),
      leaseMs: 900,
      commandTimeoutMs: 200,
      logger: pino({ level: 'silent' }),
    };
    const key = `${options.keyPrefix}:subscriptions:1`;
    const a = await createSubscriptionSlots(options);
    const opened = [a];
    try {
      const before = await a.acquire(1, 2);
      assert.ok(before);
      await stopRedis(server);
      const during = [before, await a.acquire(1, 2)];
      assert.ok(during[1], 'a subscription is never refused because Redis is away');
      assert.equal(await a.acquire(1, 2), null, 'meanwhile the cap holds on this instance, counting the slot taken before the outage');
      server = await startRedis(port);
      const store = new Redis(options.redisUrl!);
      try {
        // The holder's heartbeat writes its two leases back (it renews every third of the lease).
        await waitFor(async () => (await store.zcard(key)) === 2);
      } finally {
        store.disconnect();
      }
      const b = await createSubscriptionSlots(options);
      opened.push(b);
      assert.equal(await b.acquire(1, 2), null, 'another instance counts the slots of the outage');
      during[1]!.release();
      await waitFor(async () => {
        const slot = await b.acquire(1, 2);
        slot?.release();
        return slot !== null;
      });
    } finally {
      for (const slots of opened) await slots.close();
      if (server.exitCode === null) await stopRedis(server);
    }
  });
});
