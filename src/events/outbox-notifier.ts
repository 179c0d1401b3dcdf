/**
 * PostgreSQL only: how the instances tell each other that events committed, so their outbox readers (the
 * subscription relay and the webhook worker) look at once instead of at their next poll. One connection per
 * instance LISTENs on `petstore_events` and, after this process's commits, announces them with a `NOTIFY` of its
 * own: at once when it has been quiet, then at most once per `ANNOUNCE_GAP_MS` under load (one announcement stands
 * for every commit before it). Readers still read by position, so an announcement lost costs latency, never an
 * event; one that could not go out (the connection down) goes out once it is back, and at close the last one goes
 * out before the connection ends (the notifier closes after the HTTP drain, so the last requests' commits count).
 *
 * Why not a `NOTIFY` inside each writing transaction: PostgreSQL serialises the commits of every transaction that
 * notifies (one lock held from before the commit until after its WAL flush), so every instance's writes would
 * commit one at a time. The announcement is a transaction of its own with
 * `synchronous_commit` off (a lost notification costs only latency), so it holds that lock for microseconds and no
 * write waits on it. The connection is `pg-listen.ts`'s.
 */
import type { Logger } from 'pino';
import { EVENTS_CHANNEL } from '../domain/events.service.js';
import { WorkLoop } from './work-loop.js';
import { listenOn } from './pg-listen.js';
import type { Orm } from '../db/orm.js';
import type { Config } from '../config.js';
import { commitsOf, type Commits } from './commit-signal.js';

/** Announcements start at least this far apart (the subscription relay's own wake gap): ≤ 100 NOTIFYs a second per instance. */
export const ANNOUNCE_GAP_MS = 10;
/** At close, how long the last announcement may take before the connection ends regardless. */
const LAST_ANNOUNCEMENT_MS = 1000;
const NOTIFY = `notify ${EVENTS_CHANNEL}`;

export interface OutboxNotifier {
  /** This process committed: tell the other instances (coalesced). */
  announce(): void;
  /** Calls `listener` when another instance announces commits, or when the connection is back (what was missed). */
  onHeard(listener: () => void): () => void;
  close(): Promise<void>;
}

/**
 * A process's commit signal (src/events/commit-signal.ts) and, on PostgreSQL, the notifier that announces its
 * commits to the other instances. The caller owns the notifier's close (after the HTTP drain).
 */
export function commitChannels(orm: Orm, database: Config['database'], logger: Logger): { commits: Commits; notifier?: OutboxNotifier } {
  const commits = commitsOf(orm);
  if (database.kind !== 'postgresql') return { commits };
  const notifier = listenForEvents(database.url, logger);
  commits.listen(notifier.announce);
  return { commits, notifier };
}

export function listenForEvents(url: string, logger: Logger): OutboxNotifier {
  /** Commits not yet announced (set by `announce`, cleared when a NOTIFY goes out). */
  let pending = false;
  let warned = false;
  const listeners = new Set<() => void>();
  const heard = () => {
    for (const listener of listeners) listener();
  };
  const connection = listenOn({
    url,
    channel: EVENTS_CHANNEL,
    applicationName: 'petstore-events',
    logger,
    failure: 'events: the LISTEN connection failed; reconnecting (until then the outbox is polled)',
    // Another instance's commits; this instance's readers were woken at its own commit already.
    onNotified: heard,
    onListening: () => {
      warned = false;
      // What went unheard or unannounced while there was no connection.
      heard();
      if (pending) announcer.wake();
    },
  });

  const announcer = new WorkLoop(
    async () => {
      const c = connection.listening();
      if (!c) return { found: false }; // Announced once the connection is back (`onListening`).
      pending = false;
      try {
        await c.query(NOTIFY);
      } catch (err) {
        pending = true;
        throw err;
      }
      return { found: true };
    },
    { minMs: ANNOUNCE_GAP_MS, maxMs: ANNOUNCE_GAP_MS, wakeGapMs: ANNOUNCE_GAP_MS, poll: false },
    (err) => {
      // A connection failure also reaches pg-listen.ts (which reconnects); anything else is worth one line per connection.
      if (!warned) logger.warn({ err }, 'events: announcing commits to the other instances failed (they poll meanwhile)');
      warned = true;
    },
  );
  announcer.start();

  return {
    announce() {
      pending = true;
      announcer.wake();
    },
    onHeard(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    async close() {
      connection.stopReconnecting();
      // The announcement under way, then the last one if commits wait for it; a hung connection gets a second.
      const last = (async () => {
        await announcer.stop();
        const c = connection.listening();
        if (c && pending) await c.query(NOTIFY).catch(() => undefined);
      })();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([last, new Promise<void>((resolve) => (timer = setTimeout(resolve, LAST_ANNOUNCEMENT_MS)))]);
      clearTimeout(timer);
      await connection.end();
    },
  };
}
