/**
 * The error catalogue (SPEC §7). Domain errors carry a stable code and never an HTTP status: each
 * facade maps codes to statuses in one table (`src/http/error-status.ts`).
 */
export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'UNAUTHENTICATED',
  'INVALID_API_KEY',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'CONFLICT',
  'NAME_TAKEN',
  'CATEGORY_IN_USE',
  'PET_NOT_AVAILABLE',
  'INSUFFICIENT_STOCK',
  'ORDER_NOT_OPEN',
  'PET_HAS_OPEN_ORDERS',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'PLAN_LIMIT_REACHED',
  'EVENT_EXPIRED',
  'OPERATION_SUNSET',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'IDEMPOTENCY_KEY_REUSED',
  'RATE_LIMITED',
  'API_KEY_BANNED',
  'INTERNAL',
  'UNAVAILABLE',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** A refusal replayed from the stored outcome of an idempotency key (SPEC §8): facades mark it as a replay. */
export class ReplayedDomainError extends DomainError {
  constructor(code: ErrorCode, message: string, details?: ErrorDetail[]) {
    super(code, message, details);
    this.name = 'ReplayedDomainError';
  }
}

export const validationFailed = (message: string, details?: ErrorDetail[]) =>
  new DomainError('VALIDATION_FAILED', message, details);
export const notFound = (what: string, id: number | string) => new DomainError('NOT_FOUND', `${what} ${id} was not found.`);
export const forbidden = (message = 'Your API key does not allow this operation.') => new DomainError('FORBIDDEN', message);
