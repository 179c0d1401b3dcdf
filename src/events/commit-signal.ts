/**
 * Tells the outbox's readers of this process that something committed, so they look at once instead
 * of at their next poll: after each ORM transaction (MikroORM's `afterTransactionCommit`) and, on
 * SQLite, after each commit of the plain-SQL writer (src/db/writer.ts), which announces every
 * statement as knex's `query` event and runs its COMMIT right after announcing it (knex's own
 * transactions carry a transaction id; the writer's announcements do not). On PostgreSQL the
 * writer's transactions always write events, whose NOTIFY wakes every instance, this one included.
 * The readers' own transactions (on a `readerFork`) signal nothing: a reader does not wake itself.
 */
import type { EntityManager } from '@mikro-orm/knex';
import { BaseSqlitePlatform } from '@mikro-orm/knex';
import type { TransactionEventArgs } from '@mikro-orm/core';
import type { Orm } from '../db/orm.js';

const READER = 'outboxReader';

/** An EntityManager for a reader's work: its commits wake nobody. */
export const readerFork = (orm: Orm): EntityManager => orm.em.fork({ loggerContext: { [READER]: true } }) as EntityManager;

export function onCommit(orm: Orm, listener: () => void): () => void {
  let closed = false;
  const signal = () => {
    if (!closed) listener();
  };
  orm.em.getEventManager().registerSubscriber({
    afterTransactionCommit(args: TransactionEventArgs) {
      if (!args.em.getLoggerContext()[READER]) signal();
    },
  });
  let stopKnex = () => undefined as void;
  if (orm.em.getPlatform() instanceof BaseSqlitePlatform) {
    const client = orm.em.getConnection().getKnex().client as NodeJS.EventEmitter;
    const onQuery = (query: { sql?: string; __knexTxId?: string }) => {
      // The COMMIT runs synchronously right after its announcement: the signal goes out after it.
      if (query.sql === 'COMMIT;' && query.__knexTxId === undefined) setImmediate(signal);
    };
    client.on('query', onQuery);
    stopKnex = () => void client.off('query', onQuery);
  }
  return () => {
    closed = true;
    stopKnex();
  };
}
