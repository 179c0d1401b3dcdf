import { DriverException } from '@mikro-orm/core';
import { LRUCache } from 'lru-cache';
import { BaseSqlitePlatform } from '@mikro-orm/knex';
import type { Knex } from 'knex';
import type { SqlTransaction, SqlWriter } from '../domain/writer.js';
import type { Orm } from './orm.js';
import { namedStatement } from './pg-statements.js';
import { sqliteWriteGuard } from './sqlite-resilience.js';
import { announceSql } from './sql-statements.js';
import { sqliteSpan, tracingOn } from '../observability/tracing.js';

/** Statements kept per connection (the writer has a handful of shapes). */
const MAX_STATEMENTS = 200;

/**
 * The plain-SQL writer (src/domain/writer.ts) on the ORM's own connection pool, so writes through it
 * and through the ORM share the same connections and locks (SQLite: the one pooled connection, whose
 * `BEGIN IMMEDIATE` makes it the writer; PostgreSQL: the ORM's pool and its settings).
 * - SQLite: each SQL text is prepared once per connection and kept; BEGIN/COMMIT/ROLLBACK go through
 *   `exec` (a failed prepared BEGIN would be left in progress, see src/db/sqlite-resilience.ts). A foreign write
 *   lock is waited out asynchronously and a full disk remembered, as for the ORM
 *   (src/db/sqlite-resilience.ts).
 * - PostgreSQL: the transaction's first statement goes with its BEGIN as one message, its last writes with the
 *   COMMIT (simple protocol, parameters inlined as literals); the statements between are named prepared
 *   statements (`pg` parses each once per connection). A `statement` of its own runs in autocommit as a named
 *   prepared statement: one message.
 * Every statement is announced on the `sqlStatements` diagnostics channel for whoever counts SQL
 * (tests, the benchmark). Database errors become the ORM's exceptions, as if the ORM had sent them.
 * After each commit the writer calls `committed` (the process's commit signal, src/events/commit-signal.ts).
 */
export function createWriter(orm: Orm, committed: () => void): SqlWriter {
  const knex = orm.em.getConnection().getKnex();
  const driver = orm.em.getDriver();
  const convert = (error: unknown): unknown =>
    error instanceof Error && !(error instanceof DriverException) ? driver.convertException(error) : error;
  const announce = (sql: string) => announceSql(orm, sql);
  return orm.em.getPlatform() instanceof BaseSqlitePlatform
    ? sqliteWriter(orm, knex, convert, announce, committed)
    : postgresWriter(knex, convert, announce, committed);
}

type Convert = (error: unknown) => unknown;
type Announce = (sql: string) => void;

interface LibsqlStatement {
  all(params: unknown[]): unknown[];
  run(params: unknown[]): { changes: number };
}
interface LibsqlConnection {
  prepare(sql: string): LibsqlStatement;
  exec(sql: string): void;
  readonly inTransaction: boolean;
}

/** As the ORM stores them on SQLite: dates as epoch milliseconds, booleans as 0/1. */
const sqliteValue = (value: unknown) =>
  value instanceof Date ? value.getTime() : typeof value === 'boolean' ? Number(value) : (value ?? null);

function sqliteWriter(orm: Orm, knex: Knex, convert: Convert, announce: Announce, committed: () => void): SqlWriter {
  const guard = sqliteWriteGuard(orm);
  // libsql has no OpenTelemetry instrumentation: with tracing on, each statement is a span (its text, not its values).
  const traced = tracingOn();
  const cache = new WeakMap<LibsqlConnection, LRUCache<string, LibsqlStatement>>();
  const statementOf = (conn: LibsqlConnection, sql: string) => {
    let statements = cache.get(conn);
    if (!statements) cache.set(conn, (statements = new LRUCache({ max: MAX_STATEMENTS })));
    let statement = statements.get(sql);
    if (!statement) {
      statement = conn.prepare(sql);
      statements.set(sql, statement);
    }
    return { statement, statements };
  };
  const step = <R>(
    conn: LibsqlConnection,
    sql: string,
    params: readonly unknown[],
    use: (s: LibsqlStatement, values: unknown[]) => R,
  ): R => (traced ? sqliteSpan(sql, () => untracedStep(conn, sql, params, use)) : untracedStep(conn, sql, params, use));
  const untracedStep = <R>(
    conn: LibsqlConnection,
    sql: string,
    params: readonly unknown[],
    use: (s: LibsqlStatement, values: unknown[]) => R,
  ): R => {
    announce(sql);
    let statements: LRUCache<string, LibsqlStatement> | undefined;
    try {
      const found = statementOf(conn, sql);
      statements = found.statements;
      return use(found.statement, params.map(sqliteValue));
    } catch (error) {
      // A statement that failed is not reused (libsql has no reset): the next use prepares it afresh.
      statements?.delete(sql);
      throw convert(error);
    }
  };
  const exec = (conn: LibsqlConnection, sql: string) => {
    try {
      if (traced) sqliteSpan(sql, () => conn.exec(sql));
      else conn.exec(sql);
    } catch (error) {
      throw convert(error);
    }
  };
  const client = knex.client as {
    acquireConnection(): Promise<LibsqlConnection>;
    releaseConnection(conn: LibsqlConnection): Promise<unknown>;
  };
  const writer: SqlWriter = {
    dialect: 'sqlite',
    statement: <Row>(sql: string, params: readonly unknown[]) => writer.transaction((tx) => tx.all<Row>(sql, params)),
    async transaction<T>(work: (tx: SqlTransaction) => Promise<T>): Promise<T> {
      // Only the BEGIN waits for another process's lock; between attempts the connection goes back to the pool.
      const conn = await guard.guarded(async () => {
        const acquired = await client.acquireConnection();
        try {
          exec(acquired, 'BEGIN IMMEDIATE');
          return acquired;
        } catch (error) {
          await client.releaseConnection(acquired);
          throw error;
        }
      });
      try {
        const result = await work({
          dialect: 'sqlite',
          all: async <Row>(sql: string, params: readonly unknown[]) => step(conn, sql, params, (s, values) => s.all(values) as Row[]),
          run: async (sql: string, params: readonly unknown[]) => step(conn, sql, params, (s, values) => s.run(values).changes),
          runLast: async (sql: string, params: readonly unknown[]) => void step(conn, sql, params, (s, values) => s.run(values)),
        });
        announce('COMMIT;');
        exec(conn, 'COMMIT');
        committed();
        return result;
      } catch (error) {
        const thrown = guard.failed(error);
        if (conn.inTransaction) {
          try {
            conn.exec('ROLLBACK');
          } catch {
            // Nothing more to undo: the connection is no longer in the transaction.
          }
        }
        throw thrown;
      } finally {
        await client.releaseConnection(conn);
      }
    },
  };
  return writer;
}

interface PgConnection {
  query(config: { name?: string; text: string; values?: readonly unknown[] }): Promise<{ rows: unknown[]; rowCount: number | null }>;
  /** pg's quoting of a string literal (doubles quotes; `E'…'` with doubled backslashes when there are any). */
  escapeLiteral(value: string): string;
}

/** A parameter as an SQL literal, for the writes sent with the COMMIT (simple protocol: no parameters). */
function pgLiteral(conn: PgConnection, value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return `${conn.escapeLiteral(value.toISOString())}::timestamptz`;
  if (typeof value === 'string') return conn.escapeLiteral(value);
  throw new TypeError(`cannot inline a ${typeof value} parameter`);
}

/** `?` placeholders replaced by the parameters as literals (the writer's SQL has no `?` elsewhere). */
function inline(conn: PgConnection, sql: string, params: readonly unknown[]): string {
  let n = 0;
  const text = sql.replace(/\?/g, () => pgLiteral(conn, params[n++]));
  if (n !== params.length) throw new TypeError(`${params.length} parameters for ${n} placeholders`);
  return text;
}

/** The SQL-level prepared statements (PREPARE) each connection holds, by name (see `first` below). */
const preparedOn = new WeakMap<PgConnection, Set<string>>();

/** A name of its own for SQL-level PREPARE (the protocol's named statements share the namespace): `?` become `$n`. */
function serverStatement(sql: string): { name: string; text: string } {
  const { name, text } = namedStatement(sql);
  return { name: `${name}_first`, text };
}

function postgresWriter(knex: Knex, convert: Convert, announce: Announce, committed: () => void): SqlWriter {
  const query = async (conn: PgConnection, sql: string, params: readonly unknown[]) => {
    announce(sql);
    try {
      return await conn.query({ ...namedStatement(sql), values: params.map((v) => v ?? null) });
    } catch (error) {
      throw convert(error);
    }
  };
  /** One message of several statements (simple protocol); the results of each. */
  const control = async (conn: PgConnection, statements: string[]) => {
    try {
      const results = await conn.query({ text: statements.join(';\n') });
      return (Array.isArray(results) ? results : [results]) as Array<{ rows: unknown[]; rowCount: number | null }>;
    } catch (error) {
      throw convert(error);
    }
  };
  const client = knex.client as { acquireConnection(): Promise<PgConnection>; releaseConnection(conn: PgConnection): Promise<unknown> };
  const acquire = async () => {
    try {
      return await client.acquireConnection();
    } catch (error) {
      throw convert(error);
    }
  };
  return {
    dialect: 'postgresql',
    async statement<Row>(sql: string, params: readonly unknown[]): Promise<Row[]> {
      const conn = await acquire();
      try {
        const { rows } = await query(conn, sql, params);
        committed();
        return rows as Row[];
      } finally {
        await client.releaseConnection(conn);
      }
    },
    async transaction<T>(work: (tx: SqlTransaction) => Promise<T>): Promise<T> {
      const conn = await acquire();
      // The BEGIN travels with the transaction's first statement, as one message (its parameters inlined): one
      // round trip fewer. Nothing sent, nothing to commit or roll back.
      let begun = false;
      const first = async (sql: string, params: readonly unknown[]) => {
        announce('begin');
        announce(sql);
        // The statement is prepared on the server once per connection (SQL PREPARE, its plan kept as a named
        // statement's is), then EXECUTEd with its parameters as literals, after the BEGIN in the same message.
        const { name, text } = serverStatement(sql);
        let prepared = preparedOn.get(conn);
        if (!prepared) preparedOn.set(conn, (prepared = new Set()));
        if (!prepared.has(name)) {
          await control(conn, [`prepare ${name} as ${text}`]);
          prepared.add(name);
        }
        const args = params.length ? `(${params.map((value) => pgLiteral(conn, value)).join(', ')})` : '';
        begun = true;
        return (await control(conn, ['begin', `execute ${name}${args}`]))[1]!;
      };
      const statement = (sql: string, params: readonly unknown[]) => (begun ? query(conn, sql, params) : first(sql, params));
      try {
        const last: string[] = [];
        const result = await work({
          dialect: 'postgresql',
          all: async <Row>(sql: string, params: readonly unknown[]) => (await statement(sql, params)).rows as Row[],
          run: async (sql: string, params: readonly unknown[]) => (await statement(sql, params)).rowCount ?? 0,
          runLast: async (sql: string, params: readonly unknown[]) => {
            announce(sql);
            last.push(inline(conn, sql, params));
          },
        });
        // One message: the last writes and the COMMIT run back to back in the server (simple protocol).
        if (begun || last.length) {
          if (!begun) announce('begin');
          announce('commit');
          const message = [...(begun ? [] : ['begin']), ...last, 'commit'];
          begun = true;
          await control(conn, message);
          committed();
        }
        return result;
      } catch (error) {
        if (begun) await conn.query({ text: 'rollback' }).catch(() => undefined);
        throw error;
      } finally {
        await client.releaseConnection(conn);
      }
    },
  };
}
