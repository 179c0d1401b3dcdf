import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import { EventsService } from '../domain/events.service.js';
import { purgeExpiredIdempotencyRecords } from '../domain/idempotency.service.js';

/**
 * Drops events past their 30 days and every account's expired idempotency records (in bounded batches), at
 * start and then every `intervalMs` (default hourly). Every instance may run it: the deletes are idempotent.
 * Returns a stop function.
 */
export function startOutboxUpkeep(orm: Orm, logger: Logger, intervalMs = 3_600_000): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const purge = () => {
    // One after the other: SQLite has one writer.
    running = new EventsService(orm.em.fork())
      .purgeExpired()
      .then((count) => count && logger.info({ count }, 'events: purged events older than 30 days'))
      .catch((err: unknown) => logger.warn({ err }, 'events: purge failed; retried at the next interval'))
      .then(() => purgeExpiredIdempotencyRecords(orm.em.fork()))
      .then((count) => count && logger.info({ count }, 'idempotency: purged expired idempotency records'))
      .catch((err: unknown) => logger.warn({ err }, 'idempotency: purge failed; retried at the next interval'));
  };
  purge();
  const timer = setInterval(purge, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
