/**
 * PostgreSQL only: a connection that LISTENs for `petstore_events`, which every transaction that
 * records an event NOTIFYs at commit (recordEvent). It only wakes the readers of the outbox (the
 * subscription relay and the webhook worker) sooner than their next poll: they still read by id,
 * so a notification lost during a reconnect costs latency, never an event. `pg` loads here, so an
 * embedded (SQLite) process never loads it.
 */
import type { Client } from 'pg';
import type { Logger } from 'pino';
import { EVENTS_CHANNEL } from '../domain/events.service.js';

export interface OutboxNotifier {
  close(): Promise<void>;
}

export function listenForEvents(url: string, logger: Logger, wake: () => void): OutboxNotifier {
  let client: Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const { default: pg } = await import('pg');
    if (closed) return;
    const c = new pg.Client({ connectionString: url, application_name: 'petstore-events' });
    client = c;
    c.on('notification', () => wake());
    c.on('error', (err) => {
      logger.warn({ err }, 'events: the LISTEN connection failed; reconnecting (until then the outbox is polled)');
      c.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void connect(), 1000);
    });
    try {
      await c.connect();
      await c.query(`listen ${EVENTS_CHANNEL}`);
    } catch (err) {
      c.emit('error', err);
    }
  };
  void connect();

  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
