/**
 * Plain-SQL reads for the hottest queries, outside the ORM's unit of work: one prepared statement
 * per SQL text, cached by the driver connection, with `?` placeholders. Implemented in `src/db`
 * (SQLite: a read-only connection of its own; PostgreSQL: named prepared statements). The domain
 * writes its SQL once, in the columns of its entities; writes keep the ORM, except placing an order
 * (the writer, src/domain/writer.ts).
 */
export interface SqlReader {
  /** The SQL dialect, for the few conditions written differently (a case-insensitive name search). */
  readonly dialect: 'sqlite' | 'postgresql';
  all<Row>(sql: string, params: readonly unknown[]): Promise<Row[]>;
  /** The first row, or undefined: for a read by a unique key (on SQLite, one step of the statement instead of a row list). */
  one<Row>(sql: string, params: readonly unknown[]): Promise<Row | undefined>;
}
