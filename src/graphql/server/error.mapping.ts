import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from 'pino';
import { validationFailed } from '../../domain/errors.js';
import { describeError, internalErrorBody, type ErrorBody, type KnownError } from '../../http/errors.js';
import type { ErrorCode } from '../../http/error-status.js';

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

/**
 * The one mapping from a known error to GraphQL `extensions`: the same codes and statuses as REST.
 * `requestId` is filled in per request by `formatErrors` (its place in the object is kept here).
 */
function extensionsOf(known: Pick<KnownError, 'code' | 'status' | 'details'>, requestId?: string): ErrorExtensions {
  const extensions: ErrorExtensions = { code: known.code, status: known.status, requestId };
  if (known.details?.length) extensions.details = known.details;
  return extensions;
}

/** The GraphQL error body for an error thrown before the lane answers (body too large, 405, unknown path under /graphql, a refused HTTP request). */
export function toGraphQLErrorBody(body: ErrorBody): { errors: Array<{ message: string; extensions: ErrorExtensions }> } {
  return { errors: [{ message: body.message, extensions: extensionsOf(body, body.requestId) }] };
}

/**
 * graphql-js's own refusal of an argument's value while executing: a null sent through a variable that has a
 * default into a non-null argument passes validation (the spec allows it) and fails only here. The client's
 * input, so VALIDATION_FAILED like any other refused value, not an internal error.
 */
const ARGUMENT_REFUSED = /^Argument "[^"]+" (?:of (?:required|non-null) type|has invalid value)/;

/** What an error is in the catalogue (its code, status, headers), or null for an unexpected one. */
function knownOf(error: unknown): KnownError | null {
  const original = originalOf(error);
  if (original instanceof GraphQLError && !original.originalError && ARGUMENT_REFUSED.test(original.message)) return describeError(validationFailed(original.message));
  return describeError(original);
}

export const originalOf = (error: unknown): unknown => (error instanceof GraphQLError && error.originalError ? originalOf(error.originalError) : error);

/**
 * One error as it leaves: always with `extensions.code` and `extensions.status`. Known errors keep their code
 * (a refusal wrapped as a GraphQL error to keep its `locations` included); anything else is masked as INTERNAL
 * (logged by `formatErrors`).
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const where = { ...(formatted.locations && { locations: formatted.locations }), ...(formatted.path && { path: formatted.path }) };
  const known = knownOf(error);
  if (known) return { message: known.message, ...where, extensions: extensionsOf(known) };
  const internal = internalErrorBody(undefined);
  return { message: internal.message, ...where, extensions: extensionsOf(internal) };
}

/**
 * The errors of one answer in the catalogue's shape, with what `formatError` alone cannot know: the headers
 * the errors carry (`Retry-After` of a 503 UNAVAILABLE raised under a resolver, of a 429), the request id in
 * every error, and unexpected errors logged with it. The status is the first error's (a refusal's) or 500.
 */
export function formatErrors(
  errors: readonly unknown[],
  requestId: string,
  logger: Logger,
): { errors: GraphQLFormattedError[]; headers: Record<string, string>; status: number } {
  const headers: Record<string, string> = {};
  let status: number | undefined;
  const formatted = errors.map((error) => {
    const graphqlError = error instanceof GraphQLError ? error : new GraphQLError((error as Error)?.message ?? 'unexpected', { originalError: error as Error });
    const original = originalOf(graphqlError);
    const known = knownOf(graphqlError);
    if (known) Object.assign(headers, known.headers);
    else logger.error({ err: original, requestId }, 'unexpected GraphQL error');
    status ??= known?.status ?? 500;
    const shaped = formatError(graphqlError.toJSON(), graphqlError);
    if (shaped.extensions) (shaped.extensions as ErrorExtensions).requestId = requestId;
    return shaped;
  });
  return { errors: formatted, headers, status: status ?? 500 };
}
