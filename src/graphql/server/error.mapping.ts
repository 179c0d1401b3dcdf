import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import type { Logger } from 'pino';
import { describeError, internalErrorBody, type ErrorBody, type KnownError } from '../../http/errors.js';
import { STATUS_OF, type ErrorCode } from '../../http/error-status.js';
import type { GraphQLContext } from '../context.js';

export interface ErrorExtensions {
  code: ErrorCode;
  status: number;
  requestId?: string;
  details?: Array<{ path: string; message: string }>;
  [key: string]: unknown;
}

/** graphql-js reports its token limit as a syntax error; the document is too long, not malformed. */
const TOKEN_LIMIT = /^Syntax Error: (?=Document contains more th\w+ \d+ tokens)/;

/** graphql-js's "Did you mean …?" after a validation message: the schema is not spelled out to clients. */
const SUGGESTION = / ?Did you mean .+\?$/;

/** A parse or validation message as a client reads it: no token-limit "Syntax Error", no field suggestions. */
export const requestErrorMessage = (message: string): string => message.replace(TOKEN_LIMIT, '').replace(SUGGESTION, '');

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

/**
 * The one mapping from a known error to GraphQL `extensions`: the same codes and statuses as REST.
 * `requestId` is filled in per request by `errorsPlugin` (its place in the object is kept here).
 */
function extensionsOf(known: Pick<KnownError, 'code' | 'status' | 'details'>, requestId?: string): ErrorExtensions {
  const extensions: ErrorExtensions = { code: known.code, status: known.status, requestId };
  if (known.details?.length) extensions.details = known.details;
  return extensions;
}

/** The GraphQL error body for an error answered outside Apollo (body too large, 405, unknown path under /graphql). */
export function toGraphQLErrorBody(body: ErrorBody): { errors: Array<{ message: string; extensions: ErrorExtensions }> } {
  return { errors: [{ message: body.message, extensions: extensionsOf(body, body.requestId) }] };
}

/**
 * A known error raised before execution (authentication, rate limits): a GraphQL error that also
 * tells Apollo the HTTP status and headers to answer with (401, 429 with Retry-After, …), the Apollo
 * way (`extensions.http`).
 */
export function toRequestError(error: unknown): GraphQLError {
  const known = describeError(error);
  if (!known) return error instanceof GraphQLError ? error : new GraphQLError('unexpected', { originalError: error as Error });
  const headers = new HeaderMap(Object.entries(known.headers).map(([k, v]) => [k.toLowerCase(), v]));
  return new GraphQLError(known.message, {
    originalError: error as Error,
    extensions: { ...extensionsOf(known), http: { status: known.status, headers } },
  });
}

const originalOf = (error: unknown): unknown => (error instanceof GraphQLError && error.originalError ? originalOf(error.originalError) : error);

const isRequestError = (formatted: GraphQLFormattedError) =>
  typeof formatted.extensions?.code === 'string' && REQUEST_ERROR_CODES.has(formatted.extensions.code);

/**
 * Apollo's `formatError`: every error leaves with `extensions.code` and `extensions.status`. Known
 * errors keep their code; Apollo's request errors become VALIDATION_FAILED (or METHOD_NOT_ALLOWED /
 * UNSUPPORTED_MEDIA_TYPE); anything else is masked as INTERNAL (logged by `errorsPlugin`).
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const where = { ...(formatted.locations && { locations: formatted.locations }), ...(formatted.path && { path: formatted.path }) };
  const known = describeError(originalOf(error));
  if (known) return { message: known.message, ...where, extensions: extensionsOf(known) };
  if (isRequestError(formatted)) {
    const httpStatus = (error as GraphQLError | undefined)?.extensions?.http as { status?: number } | undefined;
    const code: ErrorCode = httpStatus?.status === 405 ? 'METHOD_NOT_ALLOWED' : httpStatus?.status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_FAILED';
    return { message: requestErrorMessage(formatted.message), ...where, extensions: extensionsOf({ code, status: STATUS_OF[code] }) };
  }
  const internal = internalErrorBody(undefined);
  return { message: internal.message, ...where, extensions: extensionsOf(internal) };
}

/**
 * Per request, what `formatError` cannot know: headers the errors carry go on Apollo's response
 * (`Retry-After` of a 503 UNAVAILABLE raised under a resolver), unexpected errors are logged with the
 * request id, and every error gets `extensions.requestId`.
 */
export function errorsPlugin(logger: Logger): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didEncounterErrors({ errors, contextValue, response }) {
          for (const error of errors) {
            const original = originalOf(error);
            const known = describeError(original);
            if (known) for (const [name, value] of Object.entries(known.headers)) response.http.headers.set(name.toLowerCase(), value);
            else if (!(error instanceof GraphQLError && isRequestError(error))) {
              logger.error({ err: original, requestId: contextValue.requestId }, 'unexpected GraphQL error');
            }
          }
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          for (const error of response.body.singleResult.errors ?? []) {
            if (error.extensions) (error.extensions as ErrorExtensions).requestId = contextValue.requestId;
          }
        },
      };
    },
  };
}
