/**
 * How every instance learns at once that a key was revoked or banned (or an account changed): this process's own
 * changes are told to its listeners directly; on PostgreSQL each instance also LISTENs on `petstore_keys` and,
 * after a change it committed, NOTIFYs it, so the other instances' listeners run within milliseconds. Listeners
 * then forget their cached keys (`ApiKeyAuthenticator.forget`): a write that begins afterwards checks its key
 * again (src/http/authentication.ts `recheckKey`), and the subscription server ends the subscriptions of a key
 * that no longer stands. A notification missed while the connection was down is made up for when it is back
 * (every listener runs). SQLite serves one instance: its own changes are all there is.
 */
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { listenOn } from './pg-listen.js';

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
  const connection =
    database.kind === 'postgresql'
      ? listenOn({
          url: database.url,
          channel: KEYS_CHANNEL,
          applicationName: 'petstore-keys',
          logger,
          failure: 'keys: the LISTEN connection for key changes failed; reconnecting',
          // The other instances' changes; this instance's listeners ran at its own change already.
          onNotified: changed,
          // What may have gone unheard while there was no connection.
          onListening: changed,
        })
      : undefined;

  return {
    announce() {
      changed();
      connection
        ?.listening()
        ?.query(`notify ${KEYS_CHANNEL}`)
        .catch((err: unknown) => logger.warn({ err }, 'keys: announcing a key change to the other instances failed'));
    },
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      await connection?.end();
    },
  };
}
