import { DomainError, type ErrorCode, type ErrorDetail } from '../domain/errors.js';
import { statusOf } from './error-status.js';

/**
 * An error raised at the HTTP edge (transport problems such as 413 or 415, or limits) that carries
 * response headers, such as `Retry-After`, in addition to its code.
 */
export class EdgeError extends DomainError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    details?: ErrorDetail[],
  ) {
    super(code, message, details);
    this.name = 'EdgeError';
  }
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
  requestId?: string;
  details?: ErrorDetail[];
}

/** Converts anything thrown into the public error shape; unknown errors become INTERNAL (never leaked). */
export function toErrorBody(error: unknown, requestId: string | undefined): { body: ErrorBody; headers: Record<string, string>; expected: boolean } {
  const known = asDomainError(error);
  if (known) {
    const body: ErrorBody = { code: known.code, message: known.message, status: statusOf(known.code), requestId };
    if (known.details?.length) body.details = known.details;
    return { body, headers: known instanceof EdgeError ? known.headers : {}, expected: true };
  }
  return {
    body: { code: 'INTERNAL', message: 'Something went wrong on our side. Quote the request id if you contact us.', status: 500, requestId },
    headers: {},
    expected: false,
  };
}

/** Recognises domain errors and a few infrastructure errors a client can legitimately cause or wait out. */
export function asDomainError(error: unknown): DomainError | null {
  if (error instanceof DomainError) return error;
  const name = (error as { name?: string; code?: string } | null)?.name;
  const code = (error as { code?: string } | null)?.code;
  // SQLite busy after the busy timeout, or a PostgreSQL serialization/lock timeout: retryable.
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || name === 'LockWaitTimeoutException' || name === 'DeadlockException') {
    return new EdgeError('UNAVAILABLE', 'The database is busy; retry shortly.', { 'Retry-After': '1' });
  }
  // SQLite could not grow the file (disk or quota full): nothing was written; retry once space is freed.
  if (code === 'SQLITE_FULL') {
    return new EdgeError('UNAVAILABLE', 'The database has no space left; retry later.', { 'Retry-After': '30' });
  }
  if (name === 'ConnectionException') {
    return new EdgeError('UNAVAILABLE', 'The database is unreachable; retry shortly.', { 'Retry-After': '5' });
  }
  return null;
}
