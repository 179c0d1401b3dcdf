import diagnostics_channel from 'node:diagnostics_channel';
import type { Orm } from './orm.js';

/** A statement the plain-SQL reader or writer sent, and the ORM of the app it belongs to (a process may hold several). */
export interface SqlStatementMessage {
  sql: string;
  orm: Orm;
}

/**
 * The plain-SQL reader's and writer's statements, on a Node diagnostics channel: whoever counts SQL (tests, the
 * benchmark) subscribes here and to knex's `query` event (the ORM's own statements). Nothing is published without
 * a subscriber.
 */
export const sqlStatements = diagnostics_channel.channel('petstore:sql');

/** Announces `sql` when someone listens. */
export function announceSql(orm: Orm, sql: string): void {
  if (sqlStatements.hasSubscribers) sqlStatements.publish({ sql, orm } satisfies SqlStatementMessage);
}
