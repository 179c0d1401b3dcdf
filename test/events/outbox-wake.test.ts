/**
 * When the outbox's readers (the webhook worker, the subscription feed) look for work: at once when
 * something commits in this process, with polls for other processes' writes that back off while
 * nothing happens (the schedule itself under node:test's mocked timers), and still reach what another
 * process wrote into the same SQLite file.
 */
import { describe, it, mock } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client, startApp } from '../helpers/app.js';
import { HELD_RETRY_MS, WorkLoop } from '../../src/events/work-loop.js';
import { eventually, startReceiver, subscribe, verified, wsClient } from './support.js';

describe('outbox readers: a commit in this process wakes them', () => {
  it('when polls are a minute apart, then an order (the plain-SQL writer) and a category (the ORM) still reach the webhook and the subscriber at once', async () => {
    const t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '60000', SUBSCRIPTION_POLL_MS: '60000' } });
    const receiver = await startReceiver();
    const { client } = wsClient(t.url, t.adminKey);
    try {
      const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['order.placed', 'category.created'] })).body;
      const sub = await subscribe(client, 'subscription { events(types: ["order.placed", "category.created"]) { type } }');
      const category = (await t.admin.post('/v1/categories', { name: `Woken ${randomBytes(3).toString('hex')}` })).body;
      const pet = (await t.admin.post('/v1/pets', { name: 'Wake', categoryId: category.id })).body;
      await t.admin.put(`/v1/store/inventory/${pet.id}`, { quantity: 5 });
      const buyer = await t.admin.post('/v1/accounts', { name: 'Woken buyer', role: 'customer', plan: 'pro' });
      const order = await new Client(t.url, buyer.body.apiKey.key).post('/v1/store/orders', { petId: pet.id, quantity: 1 });
      assert.equal(order.status, 201, order.text);
      await eventually('both webhooks', () => receiver.received.length >= 2);
      assert.deepEqual(receiver.received.map((r) => verified(hook.secret, r).type).sort(), ['category.created', 'order.placed']);
      await eventually('both events pushed', () => sub.results.length >= 2);
      assert.deepEqual(sub.results.map((r) => r.data.events.type).sort(), ['category.created', 'order.placed']);
      sub.dispose();
    } finally {
      await client.dispose();
      await t.close();
      await receiver.close();
    }
  });

  it('when another process commits to the same SQLite file, then a subscriber here still gets the event from the backed-off poll', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-wake-'));
    const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
    const env = {
      SUBSCRIPTION_POLL_MS: '20',
      SUBSCRIPTION_POLL_MAX_MS: '300',
      ADMIN_API_KEY: `psk_${randomBytes(24).toString('base64url')}`,
    };
    const a = await startApp({ databaseUrl, env });
    const b = await startApp({ databaseUrl, env });
    const { client } = wsClient(a.url, a.adminKey);
    try {
      const sub = await subscribe(client, 'subscription { events(types: ["category.created"]) { data { ... on Category { name } } } }');
      // Let A's poll back off to its ceiling first.
      await new Promise((r) => setTimeout(r, 800));
      await b.admin.post('/v1/categories', { name: 'From B' });
      await eventually('the event written by B', () => sub.results.length >= 1);
      assert.equal(sub.results[0].data.events.data.name, 'From B');
      sub.dispose();
    } finally {
      await client.dispose();
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('outbox readers: the poll schedule (mocked timers)', () => {
  it('when runs find nothing, then the interval doubles up to its ceiling; when one finds work or is woken, then the next comes sooner', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      let now = 0;
      const runs: number[] = [];
      let found = false;
      let dueAt: number | null = null;
      let held = false;
      const loop = new WorkLoop(
        async () => {
          runs.push(now);
          return { found, dueAt, held };
        },
        { minMs: 100, maxMs: 1000, wakeGapMs: 0 },
        (err) => assert.fail(String(err)),
      );
      const advance = async (ms: number) => {
        for (let i = 0; i < ms / 10; i++) {
          now += 10;
          mock.timers.tick(10);
          // Let the run's promise settle and schedule the next one.
          await new Promise((r) => setImmediate(r));
          await new Promise((r) => setImmediate(r));
        }
      };
      loop.start();
      await advance(6000);
      const gaps = runs.slice(1).map((at, i) => at - runs[i]!);
      assert.equal(runs[0], 100);
      assert.deepEqual(gaps.slice(0, 6), [200, 400, 800, 1000, 1000, 1000]);

      // Work found: the next poll comes after the shortest interval again.
      found = true;
      const before = runs.length;
      await advance(1000);
      found = false;
      const afterWork = runs.slice(before);
      assert.ok(afterWork.length >= 2, `polled again soon after work was found (${afterWork.join(', ')})`);
      assert.equal(afterWork[1]! - afterWork[0]!, 100);

      // Let it back off, then wake it: it runs at once, not at the ceiling.
      await advance(5000);
      const wokeAt = now;
      loop.wake();
      await advance(10);
      assert.equal(runs.at(-1), wokeAt + 10, 'the wake ran it at once');

      // A known due time (a scheduled retry) brings the next run forward.
      await advance(3000);
      dueAt = Date.now() + 300;
      loop.wake();
      await advance(10);
      dueAt = null;
      const woken = runs.at(-1)!;
      await advance(400);
      assert.ok(
        runs.some((at) => at > woken && at <= woken + 310),
        `ran by the due time (${runs.slice(-3).join(', ')})`,
      );

      // Work held behind an older transaction: looked at again every HELD_RETRY_MS, not at the backed-off interval.
      await advance(5000);
      held = true;
      loop.wake();
      await advance(10);
      const heldAt = runs.at(-1)!;
      await advance(200);
      held = false;
      const retries = runs.filter((at) => at > heldAt);
      assert.deepEqual(
        retries.slice(0, 3).map((at, i) => at - (i ? retries[i - 1]! : heldAt)),
        [HELD_RETRY_MS, HELD_RETRY_MS, HELD_RETRY_MS],
      );
      await loop.stop();
    } finally {
      mock.timers.reset();
    }
  });
});

describe('outbox readers: a loop that runs only when woken (real timers)', () => {
  it('when a loop runs only when woken (the announcer), then it never polls, runs at once after a quiet spell, and wakes within the gap make one run after it', async () => {
    // Real timers: the wake gap is measured on performance.now(), which node:test's mocked timers do not move.
    const runs: number[] = [];
    const loop = new WorkLoop(
      async () => {
        runs.push(performance.now());
        return { found: true };
      },
      { minMs: 10, maxMs: 10, wakeGapMs: 100, poll: false },
      (err) => assert.fail(String(err)),
    );
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    loop.start();
    await sleep(150);
    assert.equal(runs.length, 0, 'no run without a wake');
    const wokeAt = performance.now();
    loop.wake();
    await sleep(20);
    assert.equal(runs.length, 1, 'a wake after a quiet spell runs at once');
    assert.ok(runs[0]! - wokeAt < 50, `ran ${runs[0]! - wokeAt} ms after the wake`);
    for (let i = 0; i < 5; i++) {
      loop.wake();
      await sleep(5);
    }
    await sleep(400);
    assert.equal(runs.length, 2, 'five wakes within the gap: one run after it');
    // Node's timers count from a loop clock cut to whole milliseconds: a timer may fire a millisecond early.
    assert.ok(runs[1]! - runs[0]! >= 90, `the second run ${runs[1]! - runs[0]!} ms after the first`);
    await loop.stop();
  });
});
