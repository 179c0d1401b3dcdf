/**
 * This process's commits, told to whoever waits for them: the outbox's readers (they look at once instead of at
 * their next poll) and, on PostgreSQL, the announcer that tells the other instances (src/events/outbox-notifier.ts).
 * Two sources, one signal: every ORM transaction (MikroORM's `afterTransactionCommit`) and every commit of the
 * plain-SQL writer (src/db/writer.ts calls `committed()` after each). The readers' own transactions (on a
 * `readerFork`) signal nothing: a reader does not wake itself.
 */
import type { EntityManager } from '@mikro-orm/knex';
import type { TransactionEventArgs } from '@mikro-orm/core';
import type { Orm } from '../db/orm.js';

const READER = 'outboxReader';

/** An EntityManager for a reader's work: its commits wake nobody. */
export const readerFork = (orm: Orm): EntityManager => orm.em.fork({ loggerContext: { [READER]: true } }) as EntityManager;

export interface Commits {
  /** Something committed in this process (the plain-SQL writer calls it after each of its commits). */
  committed(): void;
  /** Calls `listener` after each commit from now on, until the returned function is called. */
  listen(listener: () => void): () => void;
}

/** The one commit signal of a process's ORM: make it once per ORM (each call registers a subscriber with it). */
export function commitsOf(orm: Orm): Commits {
  const listeners = new Set<() => void>();
  const committed = () => {
    for (const listener of listeners) {
      try {
        listener();
      } catch {
        // A listener only schedules work; its failure must never turn a committed write into an error.
      }
    }
  };
  orm.em.getEventManager().registerSubscriber({
    afterTransactionCommit(args: TransactionEventArgs) {
      if (!args.em.getLoggerContext()[READER]) committed();
    },
  });
  return {
    committed,
    listen(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
}
