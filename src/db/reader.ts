import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import type { SqlReader } from '../domain/reader.js';
import type { Config } from '../config.js';
import type { Orm } from './orm.js';
import { namedStatement } from './pg-statements.js';
import { announceSql } from './sql-statements.js';
import { sqliteSpan, tracingOn } from '../observability/tracing.js';

/** Statements kept per connection: the domain has a few dozen read shapes (an `in` list per length). */
const MAX_STATEMENTS = 500;

/**
 * The reader for the configured database.
 * - SQLite: its own read-only libsql connection on the same file. In WAL mode a reader sees every
 *   committed write and never waits for the writer; each SQL text is prepared once and kept.
 * - PostgreSQL: a pooled connection per read, each SQL text a named prepared statement (`pg` prepares
 *   it once per connection and then only binds values).
 */
export async function createReader(orm: Orm, database: Config['database']): Promise<SqlReader & { close(): void }> {
  const reader = database.kind === 'sqlite' ? await sqliteReader(database.path) : postgresReader(orm.em.getConnection().getKnex());
  // Each statement announced on the `sqlStatements` channel (for whoever counts SQL); one property read without a subscriber.
  return {
    ...reader,
    all: (sql, params) => {
      announceSql(orm, sql);
      return reader.all(sql, params);
    },
    one: (sql, params) => {
      announceSql(orm, sql);
      return reader.one(sql, params);
    },
  };
}

async function sqliteReader(path: string): Promise<SqlReader & { close(): void }> {
  const { default: Database } = await import('libsql');
  const db = new Database(path, { readonly: true });
  // A reader waits briefly for a checkpoint, never for a writer (WAL).
  db.pragma('busy_timeout = 100');
  // The least recently used statement goes when the cache is full (a statement needs no finalising).
  const statements = new LRUCache<string, ReturnType<typeof db.prepare>>({ max: MAX_STATEMENTS });
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  // A statement that failed is not reused (libsql has no reset): the next use prepares it afresh.
  const step = <Result>(sql: string, params: readonly unknown[], method: 'all' | 'get'): Result => {
    const statement = prepared(sql);
    try {
      return (statement[method] as (...values: unknown[]) => Result)(...params);
    } catch (error) {
      statements.delete(sql);
      throw error;
    }
  };
  const all = <Row>(sql: string, params: readonly unknown[]): Row[] => step<Row[]>(sql, params, 'all');
  const one = <Row>(sql: string, params: readonly unknown[]): Row | undefined => step<Row | undefined>(sql, params, 'get');
  // libsql has no OpenTelemetry instrumentation: with tracing on, each statement is a span (its text, not its values).
  const traced = tracingOn();
  return {
    dialect: 'sqlite',
    async all<Row>(sql: string, params: readonly unknown[]): Promise<Row[]> {
      if (!traced) return all<Row>(sql, params);
      return sqliteSpan(sql, () => all<Row>(sql, params));
    },
    async one<Row>(sql: string, params: readonly unknown[]): Promise<Row | undefined> {
      if (!traced) return one<Row>(sql, params);
      return sqliteSpan(sql, () => one<Row>(sql, params));
    },
    close: () => void db.close(),
  };
}

interface PgConnection {
  query(config: { name: string; text: string; values: readonly unknown[] }): Promise<{ rows: unknown[] }>;
}

function postgresReader(knex: Knex): SqlReader & { close(): void } {
  const all = async <Row>(sql: string, params: readonly unknown[]): Promise<Row[]> => {
    const { name, text } = namedStatement(sql);
    const connection = (await knex.client.acquireConnection()) as PgConnection;
    try {
      return (await connection.query({ name, text, values: params })).rows as Row[];
    } finally {
      await knex.client.releaseConnection(connection);
    }
  };
  return {
    dialect: 'postgresql',
    all,
    one: async <Row>(sql: string, params: readonly unknown[]) => (await all<Row>(sql, params))[0],
    close: () => undefined,
  };
}
