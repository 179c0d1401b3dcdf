/**
 * PostgreSQL only: how the instances tell each other that events committed, so their outbox readers (the
 * subscription relay and the webhook worker) look at once instead of at their next poll. One connection per
 * instance LISTENs on `petstore_events` and, after this process's commits, announces them with a `NOTIFY` of its
 * own: at once when it has been quiet, then at most once per `ANNOUNCE_GAP_MS` under load (one announcement stands
 * for every commit before it). Readers still read by position, so an announcement lost (a reconnect) costs latency,
 * never an event.
 *
 * Why not a `NOTIFY` inside each writing transaction: PostgreSQL serialises the commits of every transaction that
 * notifies (one lock held from before the commit until after its WAL flush), so every instance's writes would
 * commit one at a time; measured on a 10-client insert, 6,600 commits/s without it and 1,500–2,400 with it. The
 * announcement is a transaction of its own with `synchronous_commit` off (a lost notification costs only latency),
 * so it holds that lock for microseconds and no write waits on it. `pg` loads here, so an embedded (SQLite)
 * process never loads it.
 */
import type { Client, Notification } from 'pg';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL } from '../domain/events.service.js';
import { WorkLoop } from './work-loop.js';

/** Announcements start at least this far apart (the subscription relay's own wake gap): ≤ 100 NOTIFYs a second per instance. */
export const ANNOUNCE_GAP_MS = 10;

export interface OutboxNotifier {
  /** This process committed events: tell the other instances (coalesced). */
  announce(): void;
  close(): Promise<void>;
}

export function listenForEvents(url: string, logger: Logger, wake: () => void): OutboxNotifier {
  let client: Client | undefined;
  /** Set once the connection LISTENs; announcements before that (or during a reconnect) are dropped. */
  let listening: Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const { default: pg } = await import('pg');
    if (closed) return;
    const c = new pg.Client({ connectionString: url, application_name: 'petstore-events' });
    client = c;
    // This instance's own announcements come back too: its readers were woken at its commit already.
    c.on('notification', (message: Notification) => {
      if (message.processId !== (c as Client & { processID?: number }).processID) wake();
    });
    c.on('error', (err) => {
      listening = undefined;
      logger.warn({ err }, 'events: the LISTEN connection failed; reconnecting (until then the outbox is polled)');
      c.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void connect(), 1000);
    });
    try {
      await c.connect();
      await c.query(`set synchronous_commit to off; listen ${EVENTS_CHANNEL}`);
      if (!closed) listening = c;
    } catch (err) {
      c.emit('error', err);
    }
  };
  void connect();

  const announcer = new WorkLoop(
    async () => {
      await listening?.query(`notify ${EVENTS_CHANNEL}`);
      return { found: true };
    },
    { minMs: ANNOUNCE_GAP_MS, maxMs: ANNOUNCE_GAP_MS, wakeGapMs: ANNOUNCE_GAP_MS, poll: false },
    // A failed announcement costs the other instances latency (they poll); the connection's own error handler reconnects.
    () => undefined,
  );
  announcer.start();

  return {
    announce: () => announcer.wake(),
    async close() {
      closed = true;
      clearTimeout(retry);
      await announcer.stop();
      listening = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
