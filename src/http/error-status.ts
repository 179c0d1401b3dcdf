import type { DomainErrorCode } from '../domain/errors.js';
import type { RefusalCode } from '../rate-limit/refusal.js';

/** Codes the HTTP edge adds to the domain's: authentication, transport and infrastructure. */
export const TRANSPORT_ERROR_CODES = [
  'UNAUTHENTICATED',
  'INVALID_API_KEY',
  'METHOD_NOT_ALLOWED',
  'OPERATION_SUNSET',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'REQUEST_TIMEOUT',
  'HEADERS_TOO_LARGE',
  'DOCUMENT_NOT_TRUSTED',
  'PERSISTED_DOCUMENT_NOT_FOUND',
  'INTERNAL',
  'UNAVAILABLE',
] as const;
export type TransportErrorCode = (typeof TRANSPORT_ERROR_CODES)[number];

/** Every code a client can see, from either facade: the public error catalogue. */
export type ErrorCode = DomainErrorCode | TransportErrorCode | RefusalCode;

/** The one table from error codes to HTTP statuses, used by both facades. */
export const STATUS_OF: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 400,
  UNAUTHENTICATED: 401,
  INVALID_API_KEY: 401,
  FORBIDDEN: 403,
  DOCUMENT_NOT_TRUSTED: 403,
  NOT_FOUND: 404,
  PERSISTED_DOCUMENT_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  NAME_TAKEN: 409,
  CATEGORY_IN_USE: 409,
  PET_NOT_AVAILABLE: 409,
  INSUFFICIENT_STOCK: 409,
  ORDER_NOT_OPEN: 409,
  PET_HAS_OPEN_ORDERS: 409,
  IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  LAST_STAFF_KEY: 409,
  REQUEST_TIMEOUT: 408,
  PLAN_LIMIT_REACHED: 409,
  EVENT_EXPIRED: 409,
  SUBSCRIBER_TOO_SLOW: 409,
  WEBHOOK_DISABLED: 409,
  OPERATION_SUNSET: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  IDEMPOTENCY_KEY_REUSED: 422,
  HEADERS_TOO_LARGE: 431,
  RATE_LIMITED: 429,
  API_KEY_BANNED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export const statusOf = (code: ErrorCode): number => STATUS_OF[code];
