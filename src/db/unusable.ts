import type { Config } from '../config.js';
import { MissingDatabaseError } from './pg-admin.js';

/** Errors that mean the database cannot be reached or entered: refused, unknown host, timed out, bad password or role, no such database. */
const UNUSABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', '28P01', '28000', '3D000']);

/**
 * One line saying which database could not be used and why, for an error that means it cannot be reached or entered
 * (a PostgreSQL database that does not exist: how to create it); undefined for any other error. The password in
 * DATABASE_URL is never shown.
 */
export function unusableDatabase(error: unknown, database: Config['database']): string | undefined {
  if (error instanceof MissingDatabaseError) return error.message;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !UNUSABLE.has(code)) return undefined;
  const where = database.kind === 'sqlite' ? database.path : redact(database.url);
  // A host with several addresses (localhost: ::1 and 127.0.0.1) fails as an AggregateError, whose own message is empty.
  const message = (error as Error).message || (error as { errors?: Error[] }).errors?.[0]?.message || code;
  return `cannot use the database at ${where} (${code}: ${message}); check DATABASE_URL and that the server is running.`;
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'DATABASE_URL';
  }
}
