/**
 * The PostgreSQL notifier (src/events/outbox-notifier.ts) on a real server: the announcements it owes are not lost
 * when it closes with one still waiting for its turn, nor while its LISTEN connection is down. Another session
 * LISTENs on the channel and counts what the notifier's own connection sends.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Client } from 'pg';
import { listenForEvents, type OutboxNotifier } from '../../src/events/outbox-notifier.js';
import { EVENTS_CHANNEL } from '../../src/domain/events.service.js';
import { onOwnPostgres } from '../helpers/services.js';
import { eventually } from './support.js';

describe('the outbox notifier on PostgreSQL (a database of its own: no other instance announces on it)', async () => {
  let url: string;
  let listener: Client;
  /** The backend process id of each NOTIFY heard on the channel, in order. */
  const heard: number[] = [];
  const skip = await onOwnPostgres('notifier', {
    setup: async (own) => {
      url = own;
      const { default: pg } = await import('pg');
      listener = new pg.Client({ connectionString: url });
      await listener.connect();
      listener.on('notification', (message) => heard.push(message.processId));
      await listener.query(`listen ${EVENTS_CHANNEL}`);
    },
    teardown: async () => {
      // Every notifier made here closes before its database is dropped (one left open would retry its connection forever).
      await Promise.all([...notifiers].map((notifier) => notifier.close()));
      await listener?.end();
    },
  });
  const notifiers = new Set<OutboxNotifier>();

  /** The backend process ids of the notifiers' LISTEN connections now open. */
  const notifierPids = async () =>
    new Set(
      (
        await listener.query<{ pid: number }>(
          "select pid from pg_stat_activity where application_name = 'petstore-events' and datname = current_database()",
        )
      ).rows.map((r) => r.pid),
    );

  /** A notifier whose LISTEN connection is up, and that connection's backend process id (the one its NOTIFYs come from). */
  async function listeningNotifier() {
    const notifier = listenForEvents(url, pino({ level: 'silent' }));
    notifiers.add(notifier);
    // Its connection is up once an announcement of its own is heard.
    const pid = await eventually('the notifier listening', async () => {
      notifier.announce();
      await new Promise((r) => setTimeout(r, 20));
      return heard[0];
    });
    return { notifier, pid };
  }

  it('when commits wait for their turn as it closes, then their announcement goes out before the connection ends', { skip }, async () => {
    heard.length = 0;
    const { notifier, pid } = await listeningNotifier();
    // The announcements made while waiting for it to listen have all arrived once none has for a while.
    let count = -1;
    await eventually(
      'the announcements so far heard',
      () => {
        const settled = heard.length === count;
        count = heard.length;
        return settled;
      },
      100,
    );
    heard.length = 0;
    notifier.announce();
    await eventually('the first announcement', () => heard.includes(pid));
    // Under way or due within the announcement gap: this one waits for its turn when the close begins.
    notifier.announce();
    await notifier.close();
    await eventually('the last announcement', () => heard.length >= 2, 50, 40);
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(heard, [pid, pid], 'the commits announced just before the close are announced too');
    assert.equal((await notifierPids()).has(pid), false, 'its connection has ended');
  });

  it('when its connection is cut, then the commits announced meanwhile are announced once it is back, and its readers are woken for what they missed', {
    skip,
  }, async () => {
    heard.length = 0;
    const { notifier, pid } = await listeningNotifier();
    let woken = 0;
    notifier.onHeard(() => woken++);
    await listener.query('select pg_terminate_backend($1)', [pid]);
    // Down: its backend is gone, and it reconnects a second after it notices.
    await eventually('the connection cut', async () => !(await notifierPids()).has(pid));
    heard.length = 0;
    notifier.announce();
    const back = await eventually('an announcement from its new connection', () => heard.find((p) => p !== pid), 100, 60);
    assert.deepEqual([...(await notifierPids())], [back], 'announced by the notifier on its new LISTEN connection');
    // Nothing else announces on this database: the one wake is the reconnection's, for what went unheard meanwhile.
    assert.equal(woken, 1, 'its readers were told once to look for what they missed while it was down');
    await notifier.close();
  });
});
