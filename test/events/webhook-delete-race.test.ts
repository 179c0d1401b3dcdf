/**
 * An endpoint deleted while its worker records a failed attempt: on PostgreSQL the two must take the endpoint's
 * and the delivery's row locks in one order. In the other order they deadlocked (the delete held the endpoint and
 * waited for the delivery; the attempt's record held the delivery and waited for the endpoint to insert the retry),
 * PostgreSQL broke the tie after a second, and the DELETE answered 503.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { setTimeout } from 'node:timers/promises';
import { startApp, type TestApp } from '../helpers/app.js';
import { onOwnPostgres } from '../helpers/services.js';
import { startReceiver, type Receiver } from './support.js';

describe('webhooks on PostgreSQL: an endpoint deleted while an attempt fails', async () => {
  let t: TestApp;
  let receiver: Receiver;
  const skip = await onOwnPostgres('hookdel', {
    setup: async (url) => {
      receiver = await startReceiver();
      // Attempts are picked up at once and a failure schedules its retry (a new delivery row) in the same transaction.
      t = await startApp({ databaseUrl: url, env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '10', WEBHOOK_RETRY_SCALE: '0.001' } });
    },
    teardown: async () => {
      await t?.close();
      await receiver?.close();
    },
  });

  it('when the receiver answers 500 and the endpoint is deleted at that moment, then the DELETE is 204 every time, never 503', {
    skip,
  }, async () => {
    const statuses: number[] = [];
    // The DELETE lands at a sweep of moments around the worker's record of the failure (its few statements).
    for (let i = 0; i < 24; i++) {
      const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
      const held = new Promise<ServerResponse>((resolve) => (receiver.answer = (_n, res) => resolve(res)));
      assert.equal((await t.admin.post('/v1/categories', { name: `Race ${i} ${randomBytes(3).toString('hex')}` })).status, 201);
      const res = await Promise.race([held, setTimeout(10_000).then(() => assert.fail('no attempt within 10 s'))]);
      res.statusCode = 500;
      res.end('no');
      await setTimeout(i % 8);
      statuses.push((await t.admin.delete(`/v1/webhooks/${hook.id}`)).status);
    }
    assert.deepEqual(
      statuses.filter((s) => s !== 204),
      [],
      `DELETE statuses: ${statuses.join(' ')}`,
    );
  });
});
