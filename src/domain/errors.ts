/**
 * The domain's error codes: the rules of the store, nothing about transport. Domain errors carry a
 * stable code and never an HTTP status; the HTTP edge (`src/http/errors.ts`) adds the transport
 * codes and maps every code to its status in one table, used by both facades.
 */
export const DOMAIN_ERROR_CODES = [
  'VALIDATION_FAILED',
  'FORBIDDEN',
  'NOT_FOUND',
  'NAME_TAKEN',
  'CATEGORY_IN_USE',
  'PET_NOT_AVAILABLE',
  'INSUFFICIENT_STOCK',
  'ORDER_NOT_OPEN',
  'PET_HAS_OPEN_ORDERS',
  'IDEMPOTENCY_KEY_IN_FLIGHT',
  'LAST_STAFF_KEY',
  'PLAN_LIMIT_REACHED',
  'EVENT_EXPIRED',
  'SUBSCRIBER_TOO_SLOW',
  'WEBHOOK_DISABLED',
  'IDEMPOTENCY_KEY_REUSED',
] as const;
export type DomainErrorCode = (typeof DOMAIN_ERROR_CODES)[number];

export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * The resource a message names by its id, at the message's start ("Pet 7 was not found.", "Category 3 does not
 * exist."): a facade that shows ids otherwise (GraphQL's global ids) names it with its own.
 */
export interface ErrorSubject {
  resource: string;
  id: number | string;
}

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly subject?: ErrorSubject,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** A refusal replayed from the stored outcome of an idempotency key: facades mark it as a replay. */
export class ReplayedDomainError extends DomainError {
  constructor(code: DomainErrorCode, message: string, details?: ErrorDetail[], subject?: ErrorSubject) {
    super(code, message, details, subject);
    this.name = 'ReplayedDomainError';
  }
}

export const validationFailed = (message: string, details?: ErrorDetail[]) => new DomainError('VALIDATION_FAILED', message, details);
/** An error whose message starts with the resource it is about (`Pet 7` + `rest`), that resource as its subject. */
export const aboutResource = (code: DomainErrorCode, resource: string, id: number | string, rest: string, details?: ErrorDetail[]) =>
  new DomainError(code, `${resource} ${id}${rest}`, details, { resource, id });
export const notFound = (resource: string, id: number | string) => aboutResource('NOT_FOUND', resource, id, ' was not found.');
/** A referenced resource that does not exist (VALIDATION_FAILED at `path`). */
export const noSuch = (resource: string, id: number, path: string) =>
  aboutResource('VALIDATION_FAILED', resource, id, ' does not exist.', [{ path, message: `no such ${resource.toLowerCase()}` }]);
export const forbidden = (message = 'Your API key does not allow this operation.') => new DomainError('FORBIDDEN', message);
