import { mkdirSync, readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { MikroORM, type Options } from '@mikro-orm/core';
import { BaseSqlitePlatform, type AbstractSqlDriver } from '@mikro-orm/knex';
import { ENTITIES } from '../domain/entities/index.js';
import type { Config } from '../config.js';
import { registerSqliteState, resilientSqliteDriver, SQLITE_ATTEMPT_BUSY_MS, sqliteState, sqliteWritable } from './sqlite-resilience.js';

const DEFAULT_BUSY_BUDGET_MS = 2000;

export type Orm = MikroORM<AbstractSqlDriver>;

/** SQLite pragmas set on every pooled connection (knex reopens file connections every 10 s). */
const sqlitePragmas = (busyTimeoutMs: number) => [
  'pragma journal_mode = wal',
  'pragma synchronous = normal',
  'pragma foreign_keys = on',
  // SQLite's own wait for another connection's lock blocks the event loop (the driver is synchronous):
  // keep it tiny; the wait up to DB_BUSY_TIMEOUT_MS is asynchronous retries (sqlite-resilience.ts).
  `pragma busy_timeout = ${Math.trunc(Math.min(busyTimeoutMs, SQLITE_ATTEMPT_BUSY_MS))}`,
];

type OrmConfig = Pick<Config, 'database' | 'dbPoolMax' | 'dbStatementTimeoutMs'> &
  Partial<Pick<Config, 'dbBusyTimeoutMs' | 'databaseCreate'>>;

/**
 * MikroORM's options for the configured database. Only that database's driver is loaded (the
 * PostgreSQL driver and `pg` stay out of an embedded SQLite process, libsql out of a PostgreSQL one).
 * The migrator and the migrations load in `migrate`, only when one is pending (`loadMigrator`).
 */
export async function ormOptions(config: OrmConfig): Promise<Options> {
  const common = {
    entities: ENTITIES,
    allowGlobalContext: false,
    // Reads never need a flush first; writes flush explicitly inside their transaction.
    flushMode: 'commit' as const,
    debug: false,
    discovery: { disableDynamicFileAccess: true, requireEntitiesArray: true },
    forceUtcTimezone: true,
    ignoreUndefinedInQuery: true,
  };
  if (config.database.kind === 'sqlite') {
    const { LibSqlDriver } = await import('@mikro-orm/libsql');
    mkdirSync(dirname(config.database.path), { recursive: true });
    return {
      ...common,
      driver: LibSqlDriver,
      dbName: config.database.path,
      migrations: { transactional: true, snapshot: false, silent: true },
      pool: {
        afterCreate: (conn: { exec(sql: string): void }, done: (err: Error | null, conn: unknown) => void) => {
          try {
            for (const pragma of sqlitePragmas(config.dbBusyTimeoutMs ?? DEFAULT_BUSY_BUDGET_MS)) conn.exec(pragma);
            done(null, conn);
          } catch (error) {
            done(error as Error, conn);
          }
        },
      },
    } as Options;
  }
  const { PostgreSqlDriver } = await import('@mikro-orm/postgresql');
  return {
    ...common,
    driver: PostgreSqlDriver,
    clientUrl: config.database.url,
    // A missing database is refused or created by `createOrm` (ensureDatabase in pg-admin.ts), never silently made here.
    ensureDatabase: false,
    migrations: { transactional: true, snapshot: false, silent: true },
    pool: { min: 0, max: config.dbPoolMax },
    driverOptions: {
      connection: { statement_timeout: config.dbStatementTimeoutMs || undefined, application_name: 'petstore' },
    },
  } as Options;
}

/**
 * Opens the configured database. A PostgreSQL database that does not exist is refused with how to create
 * it (`MissingDatabaseError`), unless `databaseCreate` (DATABASE_CREATE=true, `npm run migrate -- --create`).
 */
export async function createOrm(config: OrmConfig): Promise<Orm> {
  if (config.database.kind === 'postgresql') {
    const { ensureDatabase } = await import('./pg-admin.js');
    await ensureDatabase(config.database.url, config.databaseCreate ?? false);
  }
  const options = await ormOptions(config);
  const sqlite =
    config.database.kind === 'sqlite' ? sqliteState(config.database.path, config.dbBusyTimeoutMs ?? DEFAULT_BUSY_BUDGET_MS) : undefined;
  if (sqlite) options.driver = await resilientSqliteDriver(sqlite);
  const orm = (await MikroORM.init(options)) as unknown as Orm;
  if (sqlite) registerSqliteState(orm, sqlite);
  return orm;
}

/** A fixed key for PostgreSQL's advisory lock, so two instances starting at once migrate one at a time. */
const MIGRATION_LOCK = 727_274_001;

/**
 * Applies pending migrations, then runs `afterMigrate` (first-start bootstrap) under the same lock, and
 * returns the names of the migrations it applied (none on an up-to-date database).
 * On PostgreSQL a session advisory lock serialises instances; SQLite is one file with one writer.
 */
export async function migrate(orm: Orm, afterMigrate?: () => Promise<void>): Promise<string[]> {
  const connection = orm.em.getConnection();
  const pg = !(orm.em.getPlatform() instanceof BaseSqlitePlatform);
  // A restart on an up-to-date database (the usual start) needs neither the migrator nor the migrations.
  const pending = await hasPendingMigrations(orm, pg ? 'postgresql' : 'sqlite');
  if (pending) await loadMigrator(orm, pg ? 'postgresql' : 'sqlite');
  const up = async () => (pending ? (await orm.getMigrator().up()).map((migration) => migration.name) : []);
  if (!pg) {
    const applied = await up();
    await afterMigrate?.();
    return applied;
  }
  const knex = (connection as unknown as { getKnex(): import('knex').Knex }).getKnex();
  // Advisory locks belong to a session: take and release it on one pinned connection.
  const conn = await knex.client.acquireConnection();
  try {
    await conn.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const applied = await up();
      await afterMigrate?.();
      return applied;
    } finally {
      await conn.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await knex.client.releaseConnection(conn);
  }
}

/**
 * Whether a migration of this build is not yet recorded in the database (or the migrations table does not
 * exist). The names are the compiled migration files beside `migrations/<dialect>/index.js`, which lists
 * the same ones (a stale extra file only makes this say "pending", and the migrator then decides).
 */
async function hasPendingMigrations(orm: Orm, dialect: 'sqlite' | 'postgresql'): Promise<boolean> {
  let names: string[];
  try {
    names = readdirSync(new URL(`./migrations/${dialect}/`, import.meta.url))
      .filter((file) => /^Migration\w+\.js$/.test(file))
      .map((file) => file.slice(0, -'.js'.length));
  } catch {
    return true; // no such directory (a bundled build): the migrator decides
  }
  const table = orm.config.get('migrations').tableName ?? 'mikro_orm_migrations';
  let rows: Array<{ name: string }>;
  try {
    rows = await orm.em.getConnection().execute<Array<{ name: string }>>(`select name from ${table}`);
  } catch {
    return true; // no migrations table yet: a new database
  }
  const executed = new Set(rows.map((row) => row.name.replace(/\.(js|ts)$/, '')));
  return names.length === 0 || names.some((name) => !executed.has(name));
}

/**
 * Loads @mikro-orm/migrations (umzug and its dependencies, several MB a start without pending migrations need not hold) and this
 * dialect's migrations, and registers the migrator: `orm.getMigrator()` works from then on.
 */
export async function loadMigrator(orm: Orm, dialect: 'sqlite' | 'postgresql'): Promise<void> {
  const options = orm.config.get('migrations');
  if (options.migrationsList) return;
  const [{ Migrator }, { migrationsFor }] = await Promise.all([import('@mikro-orm/migrations'), import('./migrations/index.js')]);
  options.migrationsList = migrationsFor(dialect);
  Migrator.register(orm);
}

/** Readiness: whether the database answers a trivial query and (SQLite after a full disk) could write again. */
export const databaseReadiness = (orm: Orm) => async (): Promise<boolean> => {
  await orm.em.getConnection().execute('select 1');
  return sqliteWritable(orm);
};

/** The knex (tarn) pool behind the ORM, for the metrics; undefined if the driver has none. */
export function poolState(orm: Orm) {
  const pool = (orm.em.getConnection() as unknown as { getKnex?(): { client?: { pool?: TarnPool } } }).getKnex?.().client?.pool;
  return pool ? { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() } : undefined;
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}
