/**
 * Plain-SQL writes for the hottest write, placing an order: one transaction of a few prepared
 * statements outside the ORM's unit of work, on the ORM's own connection pool (so SQLite keeps one
 * writer per process and PostgreSQL the ORM's pool). Implemented in `src/db/writer.ts`. SQL uses `?`
 * placeholders; a `Date` parameter is stored as the ORM stores it (SQLite: milliseconds since the
 * epoch; PostgreSQL: timestamptz). PostgreSQL returns bigint columns as strings: read ids with Number().
 */
export interface SqlTransaction {
  readonly dialect: 'sqlite' | 'postgresql';
  /** A statement that returns rows (a select, or a write with `returning`). */
  all<Row>(sql: string, params: readonly unknown[]): Promise<Row[]>;
  /** A write; resolves with the number of rows it changed. */
  run(sql: string, params: readonly unknown[]): Promise<number>;
  /**
   * A write that must be the transaction's last (the outbox's events). PostgreSQL sends these
   * writes and the COMMIT together, as one message (their parameters inlined as quoted literals): no round
   * trip of their own; a failure among them rolls the whole transaction back. SQLite runs the write at once.
   * (PostgreSQL also sends the BEGIN with the transaction's first statement, as one message.)
   */
  runLast(sql: string, params: readonly unknown[]): Promise<void>;
}

export interface SqlWriter {
  readonly dialect: 'sqlite' | 'postgresql';
  /**
   * One statement as a transaction of its own, for a write that one statement does whole. PostgreSQL: in
   * autocommit, a named prepared statement, one message and one round trip (no BEGIN, no COMMIT); SQLite:
   * `BEGIN IMMEDIATE`, the statement, `COMMIT`. Errors as `transaction`'s.
   */
  statement<Row>(sql: string, params: readonly unknown[]): Promise<Row[]>;
  /**
   * Runs `work` in one transaction (SQLite: `BEGIN IMMEDIATE`, waiting for another process's write
   * lock as the ORM's transactions do) and commits; rolls back if it throws. Errors from the database
   * are the ORM's exceptions (a unique violation is a `UniqueConstraintViolationException`).
   */
  transaction<T>(work: (tx: SqlTransaction) => Promise<T>): Promise<T>;
}
