import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { HeaderMap, type GraphQLRequestContextDidEncounterErrors, type GraphQLRequestContextWillSendResponse } from '@apollo/server';
import type { Logger } from 'pino';
import { DomainError, validationFailed } from '../../domain/errors.js';
import { describeError, internalErrorBody, type ErrorBody, type KnownError } from '../../http/errors.js';
import { STATUS_OF, type ErrorCode } from '../../http/error-status.js';
import type { GraphQLContext } from '../context.js';
import { globalId, type NodeType } from '../global-id.js';

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

/** Apollo's own request-level failures: each is the client's request being malformed or invalid. */
const REQUEST_ERROR_CODES: ReadonlySet<unknown> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'PERSISTED_QUERY_NOT_SUPPORTED',
]);

/**
 * Apollo's answer to a hash it does not hold: Apollo Client's persisted-query link (and every APQ client) reads
 * this code or message and sends the query text with the hash. Kept as Apollo answers it (HTTP 200).
 */
export const PERSISTED_QUERY_NOT_FOUND = 'PERSISTED_QUERY_NOT_FOUND';

/**
 * The one mapping from a known error to GraphQL `extensions`: the same codes and statuses as REST.
 * `requestId` is filled in per request by `formatErrors` (its place in the object is kept here).
 */
function extensionsOf(known: Pick<KnownError, 'code' | 'status' | 'details'>, requestId?: string): ErrorExtensions {
  const extensions: ErrorExtensions = { code: known.code, status: known.status, requestId };
  if (known.details?.length) extensions.details = known.details;
  return extensions;
}

/** The GraphQL error body for an error answered before Apollo (body too large or not JSON, an unknown path under /graphql). */
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
  if (original instanceof GraphQLError && !original.originalError && ARGUMENT_REFUSED.test(original.message))
    return describeError(validationFailed(original.message));
  return describeError(original);
}

export const originalOf = (error: unknown): unknown =>
  error instanceof GraphQLError && error.originalError ? originalOf(error.originalError) : error;

/** The node whose global id a GraphQL client holds, by the resource a domain error names. */
const NODE_OF: Readonly<Record<string, NodeType>> = {
  Pet: 'Pet',
  'Inventory entry for pet': 'Pet',
  Category: 'Category',
  Order: 'Order',
  Account: 'Account',
  'API key': 'ApiKey',
  Event: 'Event',
  Webhook: 'WebhookEndpoint',
  Delivery: 'WebhookDelivery',
};

/** A known error's message, with the id a GraphQL client sent (its global id) where the domain names a database id. */
export function messageOf(error: unknown, known: KnownError): string {
  const subject = error instanceof DomainError ? error.subject : undefined;
  const node = subject && typeof subject.id === 'number' ? NODE_OF[subject.resource] : undefined;
  const named = subject && `${subject.resource} ${subject.id}`;
  if (!node || !named || !known.message.startsWith(named)) return known.message;
  return `${subject.resource} ${globalId(node, subject.id as number)}${known.message.slice(named.length)}`;
}

/** The HTTP status Apollo gives an error of its own (`extensions.http`), if any. */
const httpStatusOf = (error: unknown): number | undefined =>
  ((error as GraphQLError | undefined)?.extensions?.http as { status?: number } | undefined)?.status;

/**
 * Apollo's `formatError` (and the WebSocket's): every error leaves with `extensions.code` and `extensions.status`.
 * Known errors keep their code (a refusal wrapped as a GraphQL error to keep its `locations` included); Apollo's
 * request errors become VALIDATION_FAILED (METHOD_NOT_ALLOWED, UNSUPPORTED_MEDIA_TYPE by their status); anything
 * else is masked as INTERNAL (logged by `errorsPlugin`). Never a stack trace.
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const where = { ...(formatted.locations && { locations: formatted.locations }), ...(formatted.path && { path: formatted.path }) };
  const known = knownOf(error);
  if (known) return { message: messageOf(originalOf(error), known), ...where, extensions: extensionsOf(known) };
  const code = formatted.extensions?.code;
  if (code === PERSISTED_QUERY_NOT_FOUND) return { message: formatted.message, extensions: { code, status: 200 } };
  const status = httpStatusOf(error);
  if (REQUEST_ERROR_CODES.has(code) || (status && status >= 400 && status < 500)) {
    const catalogued: ErrorCode = status === 405 ? 'METHOD_NOT_ALLOWED' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'VALIDATION_FAILED';
    return {
      message: requestErrorMessage(formatted.message),
      ...where,
      extensions: extensionsOf({ code: catalogued, status: STATUS_OF[catalogued] }),
    };
  }
  const internal = internalErrorBody(undefined);
  return { message: internal.message, ...where, extensions: extensionsOf(internal) };
}

/** Whether an error is Apollo's own refusal of the request (not something that went wrong). */
const isRequestError = (error: unknown) =>
  error instanceof GraphQLError &&
  (REQUEST_ERROR_CODES.has(error.extensions?.code) || error.extensions?.code === PERSISTED_QUERY_NOT_FOUND || !!httpStatusOf(error));

/**
 * A known error raised before execution (authentication, rate limits, the preparation's refusals): a GraphQL
 * error that tells Apollo the HTTP status and headers to answer with (401, 429 with Retry-After, …), as Apollo
 * documents it (`extensions.http`). It keeps where in the document it is.
 */
export function toRequestError(error: unknown): GraphQLError {
  const known = describeError(originalOf(error));
  if (!known) return error instanceof GraphQLError ? error : new GraphQLError('unexpected', { originalError: error as Error });
  const headers = new HeaderMap();
  for (const name in known.headers) headers.set(name, known.headers[name]!);
  const located = error instanceof GraphQLError ? error : undefined;
  return new GraphQLError(known.message, {
    nodes: located?.nodes,
    source: located?.source,
    positions: located?.positions,
    originalError: (located?.originalError ?? error) as Error,
    extensions: { ...extensionsOf(known), http: { status: known.status, headers } },
  });
}

/** The error hooks of the service's one Apollo plugin (request-preparation.ts): no state of their own per request. */
export interface ErrorHooks {
  didEncounterErrors(requestContext: GraphQLRequestContextDidEncounterErrors<GraphQLContext>): void;
  willSendResponse(requestContext: GraphQLRequestContextWillSendResponse<GraphQLContext>): void;
}

/**
 * Per request, what `formatError` cannot know: headers the errors carry go on Apollo's response (`Retry-After`
 * of a 503 UNAVAILABLE raised under a resolver), unexpected errors are logged with the request id, every error
 * gets `extensions.requestId`, and a refusal's code goes to the request log. Hooks of the preparation's plugin,
 * not a plugin of their own: every plugin's listener costs each request a promise per hook Apollo calls.
 */
export function errorHooks(logger: Logger): ErrorHooks {
  return {
    didEncounterErrors({ errors, contextValue, response }) {
      for (const error of errors) {
        const known = knownOf(error);
        if (known) for (const name in known.headers) response.http.headers.set(name, known.headers[name]!);
        else if (!isRequestError(error))
          logger.error({ err: originalOf(error), requestId: contextValue.requestId }, 'unexpected GraphQL error');
      }
    },
    willSendResponse({ response, contextValue }) {
      if (response.body.kind !== 'single') return;
      const { errors, data } = response.body.singleResult;
      if (!errors) return;
      for (const error of errors) if (error.extensions) (error.extensions as ErrorExtensions).requestId = contextValue.requestId;
      if (data === undefined) contextValue.observed.errorCode = errors[0]?.extensions?.code as string | undefined;
    },
  };
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
    const graphqlError =
      error instanceof GraphQLError
        ? error
        : new GraphQLError((error as Error)?.message ?? 'unexpected', { originalError: error as Error });
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
