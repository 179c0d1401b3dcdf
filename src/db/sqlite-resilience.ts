/**
 * SQLite under a foreign write lock or a full disk. The libsql driver is synchronous: a statement that
 * waits for a lock (busy_timeout) blocks the whole event loop, so every request stalls behind one
 * waiting write. Instead the connection's busy_timeout is tiny and a statement or transaction that
 * finds the file locked is retried asynchronously, with backoff, until the budget (DB_BUSY_TIMEOUT_MS)
 * is spent; between attempts the connection goes back to the pool and reads (WAL: never blocked by a
 * writer) and /healthz carry on. A write that still cannot get the lock fails with SQLITE_BUSY, which
 * the db layer throws as `DatabaseUnavailable` (src/db/errors.ts): the error envelope answers it 503 UNAVAILABLE with
 * Retry-After.
 *
 * A full disk (SQLITE_FULL) is remembered: readiness then probes whether a write could allocate a
 * page again, and turns 503 until it can.
 */
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Configuration, MikroORM } from '@mikro-orm/core';
import type { AbstractSqlDriver, Knex } from '@mikro-orm/knex';
import { DatabaseUnavailable } from './errors.js';

/** The ORM (as `src/db/orm.ts` builds it; named here so the two modules do not import each other). */
type Orm = MikroORM<AbstractSqlDriver>;

/** How long one attempt may block the event loop waiting for the lock (SQLite's own busy wait). */
export const SQLITE_ATTEMPT_BUSY_MS = 10;
const MAX_BACKOFF_MS = 200;
/** Below this much free space on the database's file system, a database that reported full stays not ready. */
const MIN_FREE_BYTES = 1024 * 1024;

export interface SqliteState {
  path: string;
  /** Set by a SQLITE_FULL; cleared once a readiness probe finds room again. */
  full: boolean;
  budgetMs: number;
}
const states = new WeakMap<Orm, SqliteState>();

const codeOf = (error: unknown) => (error as { code?: string } | null)?.code ?? '';
/**
 * SQLite locked by another connection (also as MikroORM's lock-wait timeout): retried here while the budget lasts,
 * then thrown as `DatabaseUnavailable`.
 */
const isDatabaseBusy = (error: unknown) => {
  const code = codeOf(error);
  const name = (error as Error | null)?.name;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || name === 'LockWaitTimeoutException' || name === 'DeadlockException';
};
/** SQLite could not grow the file (disk or quota full). */
const isSqliteFull = (error: unknown) => codeOf(error) === 'SQLITE_FULL';

/** A busy or full database as the db layer throws it (`DatabaseUnavailable`); any other error as it is. */
const unavailableOr = (error: unknown): unknown =>
  error instanceof DatabaseUnavailable || !(error instanceof Error)
    ? error
    : isSqliteFull(error)
      ? new DatabaseUnavailable('full', error)
      : isDatabaseBusy(error)
        ? new DatabaseUnavailable('busy', error)
        : error;

/** The resilience of one SQLite database: its file, the wait budget, and whether it reported full. */
export const sqliteState = (path: string, budgetMs: number): SqliteState => ({ path, full: false, budgetMs });

/**
 * MikroORM's libsql driver whose connection retries top-level transactions and statements outside a transaction
 * while the file is locked by another connection, for at most the state's budget, and remembers a full disk for
 * readiness: the driver and connection classes as published, subclassed, and handed to MikroORM as its `driver`.
 */
export async function resilientSqliteDriver(state: SqliteState) {
  const [{ AbstractSqlDriver, LibSqlKnexDialect }, { LibSqlConnection, LibSqlPlatform }] = await Promise.all([
    import('@mikro-orm/knex'),
    import('@mikro-orm/libsql'),
  ]);
  /**
   * Transactions start as writers (`BEGIN IMMEDIATE`). knex sends a deferred `BEGIN;`, which in WAL mode reads
   * first and can then fail to become a writer with SQLITE_BUSY *without* waiting (another connection wrote in
   * between); `BEGIN IMMEDIATE` takes the write lock up front, where the retries below apply. Sent with `exec`,
   * not a prepared statement: libsql does not reset a statement that failed, and a failed `BEGIN` left behind
   * keeps every later COMMIT on the connection failing ("SQL statements in progress").
   */
  class WriterDialect extends LibSqlKnexDialect {
    query(connection: { exec(sql: string): void }, queryParam: unknown): Promise<unknown> {
      if (queryParam !== 'BEGIN;') return super.query(connection, queryParam);
      return new Promise((resolve) => {
        connection.exec('BEGIN IMMEDIATE');
        resolve(undefined);
      });
    }
  }
  const guarded = <T>(attempt: () => Promise<T>) =>
    whileBusy(attempt, state.budgetMs).catch((error: unknown) => {
      if (isSqliteFull(error)) state.full = true;
      throw unavailableOr(error);
    });
  const noteFull = (error: unknown): never => {
    if (isSqliteFull(error)) state.full = true;
    throw unavailableOr(error);
  };
  type Connection = InstanceType<typeof LibSqlConnection>;
  class ResilientConnection extends LibSqlConnection {
    // Inside a transaction the write lock is already held (BEGIN IMMEDIATE): only the outermost step waits.
    override begin(options: Parameters<Connection['begin']>[0] = {}): ReturnType<Connection['begin']> {
      if (options.ctx) return super.begin(options);
      return guarded(async () => {
        const trx = await super.begin(options);
        // knex hands out a transaction whose own BEGIN failed, already completed: its error is the begin's.
        if (trx.isCompleted()) await trx.executionPromise;
        return trx;
      });
    }
    override execute<T extends Awaited<ReturnType<Connection['execute']>>>(...args: Parameters<Connection['execute']>): Promise<T> {
      const ctx = args[3];
      return ctx ? super.execute<T>(...args).catch(noteFull) : guarded(() => super.execute<T>(...args));
    }
    // knex's Config names a dialect class by knex's own `Client` type; MikroORM types its dialects as `any`.
    protected override getKnexOptions(type: string): Knex.Config {
      return { ...super.getKnexOptions(type), client: WriterDialect as unknown as Knex.Config['client'] };
    }
    // In WAL mode a full disk can also surface when the commit writes the log.
    override commit(...args: Parameters<Connection['commit']>): Promise<void> {
      return super.commit(...args).catch(noteFull);
    }
  }
  return class ResilientSqliteDriver extends AbstractSqlDriver<ResilientConnection> {
    constructor(config: Configuration) {
      super(config, new LibSqlPlatform(), ResilientConnection, ['knex', 'libsql']);
    }
  };
}

/** Registers the ORM whose driver `resilientSqliteDriver` made with `state`, for readiness and the plain-SQL writer. */
export function registerSqliteState(orm: Orm, state: SqliteState): void {
  states.set(orm, state);
}

/**
 * The same policy for writes that bypass the ORM (src/db/writer.ts): `guarded` retries a step (the
 * `BEGIN IMMEDIATE`) while the file is locked, within the budget; `failed` remembers a SQLITE_FULL
 * for readiness and gives the error to throw (`DatabaseUnavailable` for a busy or full database).
 */
export function sqliteWriteGuard(orm: Orm) {
  const state = states.get(orm);
  const failed = (error: unknown): unknown => {
    if (state && isSqliteFull(error)) state.full = true;
    return unavailableOr(error);
  };
  return {
    guarded: <T>(attempt: () => Promise<T>): Promise<T> =>
      (state ? whileBusy(attempt, state.budgetMs) : attempt()).catch((error: unknown) => {
        throw failed(error);
      }),
    failed,
  };
}

async function whileBusy<T>(attempt: () => Promise<T>, budgetMs: number): Promise<T> {
  const deadline = Date.now() + budgetMs;
  for (let delay = 5; ; delay = Math.min(delay * 2, MAX_BACKOFF_MS)) {
    try {
      return await attempt();
    } catch (error) {
      const left = deadline - Date.now();
      if (!isDatabaseBusy(error) || left <= 0) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    }
  }
}

class ProbeDone extends Error {}

/**
 * Readiness of the database for writes: false after a SQLITE_FULL until a probe transaction can
 * allocate a page again (it creates a table and rolls back) and the file system has room.
 */
export async function sqliteWritable(orm: Orm): Promise<boolean> {
  const state = states.get(orm);
  if (!state?.full) return true;
  const fs = await statfs(dirname(state.path)).catch(() => undefined);
  if (fs && fs.bavail * fs.bsize < MIN_FREE_BYTES) return false;
  try {
    await orm.em.fork().transactional(async (em) => {
      await em.execute('create table readiness_probe (x integer)');
      throw new ProbeDone();
    });
  } catch (error) {
    if (!(error instanceof ProbeDone)) return false;
  }
  state.full = false;
  return true;
}
