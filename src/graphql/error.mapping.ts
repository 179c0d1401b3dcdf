import { AsyncLocalStorage } from 'node:async_hooks';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { HeaderMap } from '@apollo/server';
import type { Logger } from 'pino';
import type { DomainError, ErrorCode } from '../domain/errors.js';
import { EdgeError, asDomainError } from '../http/errors.js';
import { STATUS_OF } from '../http/error-status.js';

/** The request being answered, for the error formatter (Apollo calls it without a context). */
export const graphqlRequestScope = new AsyncLocalStorage<{
  requestId: string;
  /** Sets response headers an error carries (Retry-After of a 503 UNAVAILABLE raised under a resolver). */
  setHeaders(headers: Record<string, string>): void;
}>();

export interface ErrorExtensions {
  code: ErrorCode;
  status: number;
  requestId?: string;
  details?: Array<{ path: string; message: string }>;
  stacktrace?: unknown;
  [key: string]: unknown;
}

/** graphql-js reports its token limit as a syntax error; the document is too long, not malformed. */
const TOKEN_LIMIT = /^Syntax Error: (?=Document contains more th\w+ \d+ tokens)/;

const INTERNAL_MESSAGE = 'Something went wrong on our side. Quote the request id if you contact us.';

/** Apollo's own request-level failures: all of them are the client's request being malformed or invalid. */
const REQUEST_ERROR_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/** The one mapping from a domain error to GraphQL `extensions`: the same codes and statuses as REST (SPEC §7). */
export function extensionsOf(error: DomainError, requestId: string | undefined): ErrorExtensions {
  const extensions: ErrorExtensions = { code: error.code, status: STATUS_OF[error.code], requestId };
  if (error.details?.length) extensions.details = error.details;
  return extensions;
}

/**
 * A domain error raised before execution (authentication, rate limits): a GraphQL error that also
 * tells Apollo the HTTP status and headers to answer with (401, 429 with Retry-After, …).
 */
export function toRequestError(error: DomainError): GraphQLError {
  const headers = new HeaderMap(Object.entries(error instanceof EdgeError ? error.headers : {}).map(([k, v]) => [k.toLowerCase(), v]));
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, status: STATUS_OF[error.code], http: { status: STATUS_OF[error.code], headers } },
  });
}

const originalOf = (error: unknown): unknown => (error instanceof GraphQLError && error.originalError ? originalOf(error.originalError) : error);

/**
 * Apollo's `formatError`: every error leaves with `extensions.code`, `extensions.status` and
 * `extensions.requestId`. Domain errors keep their code; Apollo's request errors become
 * VALIDATION_FAILED (or METHOD_NOT_ALLOWED / UNSUPPORTED_MEDIA_TYPE); anything else is masked as
 * INTERNAL and logged, with a stack trace only in development.
 */
export function createFormatError({ logger, development }: { logger: Logger; development: boolean }) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const scope = graphqlRequestScope.getStore();
    const requestId = scope?.requestId;
    const where = { ...(formatted.locations && { locations: formatted.locations }), ...(formatted.path && { path: formatted.path }) };
    const original = originalOf(error);
    const known = asDomainError(original);
    if (known) {
      if (known instanceof EdgeError && Object.keys(known.headers).length) scope?.setHeaders(known.headers);
      return { message: known.message, ...where, extensions: extensionsOf(known, requestId) };
    }

    const apolloCode = formatted.extensions?.code;
    if (typeof apolloCode === 'string' && REQUEST_ERROR_CODES.has(apolloCode)) {
      const httpStatus = (error as GraphQLError | undefined)?.extensions?.http as { status?: number } | undefined;
      const code: ErrorCode = httpStatus?.status === 405 ? 'METHOD_NOT_ALLOWED' : httpStatus?.status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_FAILED';
      return { message: formatted.message.replace(TOKEN_LIMIT, ''), ...where, extensions: { code, status: STATUS_OF[code], requestId } };
    }

    logger.error({ err: original, requestId }, 'unexpected GraphQL error');
    const extensions: ErrorExtensions = { code: 'INTERNAL', status: 500, requestId };
    if (development && formatted.extensions?.stacktrace) extensions.stacktrace = formatted.extensions.stacktrace;
    return { message: INTERNAL_MESSAGE, ...where, extensions };
  };
}
