import { DomainError, type ErrorDetail } from '../domain/errors.js';
import { RateLimitRefusal } from '../rate-limit/refusal.js';
import { DatabaseUnavailable } from '../db/errors.js';
import { statusOf, type ErrorCode } from './error-status.js';

/**
 * An error raised at the HTTP edge (transport problems such as 405, 413 or 415, a sunset operation, a replayed refusal,
 * an unavailable database) that may carry response headers such as `Allow` or `Retry-After`.
 */
export class HttpError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** What any error a client may see comes down to, before a facade shapes it. */
export interface KnownError {
  code: ErrorCode;
  message: string;
  status: number;
  details?: ErrorDetail[];
  /** Headers the answer carries (`Retry-After`, `Allow`, the rate-limit headers of a refusal). */
  headers: Record<string, string>;
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
  requestId?: string;
  details?: ErrorDetail[];
}

const INTERNAL_MESSAGE = 'Something went wrong on our side. Quote the request id if you contact us.';

/**
 * Recognises every error a client can cause or wait out: domain errors, edge errors, the gate's
 * refusals, and a few infrastructure errors (a busy or unreachable database). Anything else is null:
 * a bug, answered as INTERNAL and logged.
 */
export function describeError(error: unknown): KnownError | null {
  if (error instanceof DomainError || error instanceof HttpError || error instanceof RateLimitRefusal) {
    const known: KnownError = {
      code: error.code,
      message: error.message,
      status: statusOf(error.code),
      headers: 'headers' in error ? error.headers : {},
    };
    const details = 'details' in error ? error.details : undefined;
    if (details?.length) known.details = details;
    return known;
  }
  const name = (error as { name?: string; code?: string } | null)?.name;
  const code = (error as { code?: string } | null)?.code;
  // The file could not grow (disk or quota full): nothing was written; retry once space is freed.
  if (error instanceof DatabaseUnavailable && error.reason === 'full') {
    return describeError(new HttpError('UNAVAILABLE', 'The database has no space left; retry later.', { 'Retry-After': '30' }));
  }
  // Still busy after the db layer's retries, or a lock timeout or deadlock (MikroORM's exceptions): retryable.
  if (error instanceof DatabaseUnavailable || name === 'LockWaitTimeoutException' || name === 'DeadlockException') {
    return describeError(new HttpError('UNAVAILABLE', 'The database is busy; retry shortly.', { 'Retry-After': '1' }));
  }
  if (name === 'ConnectionException') {
    return describeError(new HttpError('UNAVAILABLE', 'The database is unreachable; retry shortly.', { 'Retry-After': '5' }));
  }
  if (isDatabaseOverloaded(code, error)) {
    return describeError(new HttpError('UNAVAILABLE', 'The database is busy or restarting; retry shortly.', { 'Retry-After': '2' }));
  }
  return null;
}

/**
 * PostgreSQL refusing work it could do later (SQLSTATE classes 08 connection exception and 53
 * insufficient resources, e.g. 53300 too many connections; 57P01–57P03 shutting down or starting;
 * 57014 a statement cancelled by `statement_timeout`), the network to it failing, the connection dying
 * under a statement (before, during or after a transaction's COMMIT: node-postgres says so without a code),
 * or the pool's wait for a connection running out: the database is busy or away, not the request wrong.
 * Whether a COMMIT whose answer was lost took effect is the idempotency key's to tell on the retry.
 */
function isDatabaseOverloaded(code: string | undefined, error: unknown): boolean {
  if (
    typeof code === 'string' &&
    /^(08|53)...$|^57P0[123]$|^57014$|^E(CONNREFUSED|CONNRESET|PIPE|TIMEDOUT|HOSTUNREACH|AI_AGAIN)$/.test(code)
  )
    return true;
  const message = (error as { message?: unknown } | null)?.message;
  return typeof message === 'string' && CONNECTION_LOST.test(message);
}

/**
 * node-postgres's and knex's words for a connection that is gone or never came (no SQLSTATE, no errno); knex may
 * put the statement before them (`<sql> - Connection terminated unexpectedly`).
 */
const CONNECTION_LOST =
  /(^|\s-\s)(Knex: Timeout acquiring a connection|Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)/;

/** Converts anything thrown into the public error shape; unknown errors become INTERNAL (never leaked). */
export function toErrorBody(
  error: unknown,
  requestId: string | undefined,
): { body: ErrorBody; headers: Record<string, string>; expected: boolean } {
  const known = describeError(error);
  if (known) {
    const body: ErrorBody = { code: known.code, message: known.message, status: known.status, requestId };
    if (known.details) body.details = known.details;
    return { body, headers: known.headers, expected: true };
  }
  return { body: internalErrorBody(requestId), headers: {}, expected: false };
}

export const internalErrorBody = (requestId: string | undefined): ErrorBody => ({
  code: 'INTERNAL',
  message: INTERNAL_MESSAGE,
  status: 500,
  requestId,
});
