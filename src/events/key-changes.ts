/**
 * How every instance learns at once that a key was revoked or banned (or an account changed): this process's own
 * changes are told to its listeners directly; on PostgreSQL each instance also LISTENs on `petstore_keys` and,
 * after a change it committed, NOTIFYs it, so the other instances' listeners run within milliseconds. Listeners
 * then forget their cached keys (`ApiKeyAuthenticator.forget`): a write that begins afterwards checks its key
 * again (src/http/authentication.ts `recheckKey`), and the subscription server ends the subscriptions of a key
 * that no longer stands. A notification missed while the connection was down is made up for when it is back
 * (every listener runs). SQLite serves one instance: its own changes are all there is.
 */
import type { Client, Notification } from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config.js';

export const KEYS_CHANNEL = 'petstore_keys';

export interface KeyChanges {
  /** This process committed a change to a key or an account: its listeners run now, the other instances' shortly. */
  announce(): void;
  /** Calls `listener` after any instance's change (and when the connection comes back). */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}

export function keyChanges(database: Config['database'], logger: Logger): KeyChanges {
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const listener of listeners) listener();
  };
  let closed = false;
  let client: Client | undefined;
  let listening: Client | undefined;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed || database.kind !== 'postgresql') return;
    const { default: pg } = await import('pg');
    if (closed) return;
    const c = new pg.Client({ connectionString: database.url, application_name: 'petstore-keys' });
    client = c;
    c.on('notification', (message: Notification) => {
      // This instance's own announcements come back too: its listeners ran at its change already.
      if (message.processId !== (c as Client & { processID?: number }).processID) changed();
    });
    let failed = false;
    const fail = (err: unknown) => {
      if (failed || client !== c) return;
      failed = true;
      if (listening === c) listening = undefined;
      logger.warn({ err }, 'keys: the LISTEN connection for key changes failed; reconnecting');
      c.end().catch(() => undefined);
      if (!closed) retry = setTimeout(() => void connect(), 1000);
    };
    c.on('error', fail);
    try {
      await c.connect();
      await c.query(`set synchronous_commit to off; listen ${KEYS_CHANNEL}`);
    } catch (err) {
      fail(err);
      return;
    }
    if (closed || failed) return;
    listening = c;
    // What may have gone unheard while there was no connection.
    changed();
  };
  void connect();

  return {
    announce() {
      changed();
      listening
        ?.query(`notify ${KEYS_CHANNEL}`)
        .catch((err: unknown) => logger.warn({ err }, 'keys: announcing a key change to the other instances failed'));
    },
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      listening = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
