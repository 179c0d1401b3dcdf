/**
 * One PostgreSQL connection that LISTENs on a channel, for the instances' announcements (commits, key changes):
 * it reconnects a second after a failure, calls `onListening` each time it listens again (what went unheard while
 * it was down is the caller's to make up for), and ignores this process's own notifications, which come back too.
 * `pg` loads here, so an embedded (SQLite) process never loads it.
 */
import type { Client, Notification } from 'pg';
import type { Logger } from 'pino';

export interface ListenOptions {
  url: string;
  channel: string;
  applicationName: string;
  logger: Logger;
  /** The warning logged when the connection fails (it then reconnects). */
  failure: string;
  /** Another instance notified on the channel. */
  onNotified(): void;
  /** The connection listens (again). */
  onListening(): void;
}

export interface PgListener {
  /** The connection while it listens, to NOTIFY on; undefined while it is down. */
  listening(): Client | undefined;
  /** No reconnection from now on (the connection stays until `end`). */
  stopReconnecting(): void;
  end(): Promise<void>;
}

export function listenOn({ url, channel, applicationName, logger, failure, onNotified, onListening }: ListenOptions): PgListener {
  let closed = false;
  let client: Client | undefined;
  let listening: Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const { default: pg } = await import('pg');
    if (closed) return;
    const c = new pg.Client({ connectionString: url, application_name: applicationName });
    client = c;
    // This connection's backend, read once it is up: its own notifications carry that process id.
    let ownPid: number | undefined;
    c.on('notification', (message: Notification) => {
      if (message.processId !== ownPid) onNotified();
    });
    let failed = false;
    const fail = (err: unknown) => {
      // Once per connection, and only for the current one (pg may report a failure twice, a late one after a reconnect).
      if (failed || client !== c) return;
      failed = true;
      if (listening === c) listening = undefined;
      logger.warn({ err }, failure);
      c.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void connect(), 1000);
    };
    c.on('error', fail);
    try {
      await c.connect();
      ownPid = (await c.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid;
      await c.query(`set synchronous_commit to off; listen ${channel}`);
    } catch (err) {
      fail(err);
      return;
    }
    if (closed || failed) return;
    listening = c;
    onListening();
  };
  void connect();

  const stopReconnecting = () => {
    closed = true;
    clearTimeout(retry);
  };
  return {
    listening: () => listening,
    stopReconnecting,
    async end() {
      stopReconnecting();
      listening = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
