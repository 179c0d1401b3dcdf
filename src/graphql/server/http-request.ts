/**
 * GraphQL over HTTP, the HTTP half: what a GET or a POST to /graphql carries, read into the one request object
 * the preparation takes (`{query, variables, operationName, extensions}`), and the answer's media type. The
 * rules are GraphQL over HTTP's as Apollo Server applies them (its messages, so that clients written against
 * Apollo read the same refusals): CSRF prevention, GET parameters given once with JSON-encoded `variables` and
 * `extensions`, a POST body that is one JSON object, and no persisted queries.
 */
import type { Context } from 'koa';
import { requestHeader } from '../../http/context.js';
import { validationFailed } from '../../domain/errors.js';
import { readJsonBody } from '../../http/body.js';
import { HttpError } from '../../http/errors.js';
import { checkBody, isRecord } from './request-preparation.js';

/** The answer's media types, as Apollo Server names them. */
const JSON_TYPE = 'application/json; charset=utf-8';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8';

/** A request with one of these types (or none) is a "simple" cross-site request a browser sends without a preflight. */
const SIMPLE_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];
const PREFLIGHT_HEADERS: Lowercase<string>[] = ['x-apollo-operation-name', 'apollo-require-preflight'];

const essenceOf = (type: string) => type.split(';')[0]!.trim().toLowerCase();

/** Whether a GET asks for a page (a browser): then it gets the landing page, whatever else it carries. */
export function prefersHtml(ctx: Context): boolean {
  return ctx.req.method === 'GET' && !!requestHeader(ctx, 'accept') && ctx.request.accepts('application/json', 'application/graphql-response+json', 'text/html') === 'text/html';
}

/** The answer's media type: `application/graphql-response+json` when the client prefers it, JSON otherwise. */
export function answerType(ctx: Context): string {
  if (!requestHeader(ctx, 'accept')) return JSON_TYPE;
  return ctx.request.accepts('application/json', 'application/graphql-response+json') === 'application/graphql-response+json' ? GRAPHQL_RESPONSE_TYPE : JSON_TYPE;
}

/**
 * CSRF prevention: a request that a page on another site could make without a preflight (no content type,
 * or a simple one) must carry a header only a script can set.
 */
function preventCsrf(ctx: Context): void {
  const type = requestHeader(ctx, 'content-type');
  if (type && !SIMPLE_TYPES.includes(essenceOf(type))) return;
  if (PREFLIGHT_HEADERS.some((name) => requestHeader(ctx, name) !== '')) return;
  throw validationFailed(
    `This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Please either specify a 'content-type' header (with a type that is not one of ${SIMPLE_TYPES.join(', ')}) or provide a non-empty value for one of the following headers: ${PREFLIGHT_HEADERS.join(', ')}\n`,
  );
}

function searchParam(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw validationFailed(`The '${name}' search parameter may only be specified once.`);
  return values[0];
}

function jsonSearchParam(params: URLSearchParams, name: string): Record<string, unknown> | undefined {
  const value = searchParam(params, name);
  if (value === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw validationFailed(`The ${name} search parameter contains invalid JSON.`);
  }
  if (!isRecord(parsed)) throw validationFailed(`The ${name} search parameter should contain a JSON-encoded object.`);
  return parsed;
}

/**
 * What only a POST body can get wrong, in Apollo Server's words: no keys, or `variables`/`extensions` sent as
 * JSON-encoded strings. The fields' own types are the preparation's rule (`readRequest`), for both transports.
 */
function checkPostBody(body: unknown): void {
  checkBody(body);
  if (!isRecord(body) || Object.keys(body).length === 0) throw validationFailed('POST body missing, invalid Content-Type, or JSON object has no keys.');
  if (typeof body.variables === 'string') throw validationFailed('`variables` in a POST body should be provided as an object, not a recursively JSON-encoded string.');
  if (typeof body.extensions === 'string') throw validationFailed('`extensions` in a POST body should be provided as an object, not a recursively JSON-encoded string.');
  if (body.extensions !== undefined && body.extensions !== null && !isRecord(body.extensions)) throw validationFailed('`extensions` in a POST body must be an object if provided.');
}

/**
 * The GraphQL request a GET or POST carries (415 for a body that is not JSON, 400 for the rest). Nothing is
 * charged for a request refused here.
 */
export async function readGraphQLRequest(ctx: Context): Promise<Record<string, unknown>> {
  let request: Record<string, unknown>;
  if (ctx.req.method === 'POST') {
    // An Accept that takes no JSON is disregarded (GraphQL over HTTP allows it): JSON it is.
    // A body that is not JSON is 415, as on REST; refused before anything runs, which also stops
    // the text/plain "simple requests" that CSRF relies on.
    const body = await readJsonBody(ctx);
    preventCsrf(ctx);
    checkPostBody(body);
    request = body as Record<string, unknown>;
  } else {
    preventCsrf(ctx);
    const type = requestHeader(ctx, 'content-type');
    if (type && essenceOf(type) !== 'application/json') {
      throw new HttpError('UNSUPPORTED_MEDIA_TYPE', 'GET requests may not have a content-type header other than application/json.');
    }
    const params = new URLSearchParams(ctx.request.querystring);
    request = {
      query: searchParam(params, 'query'),
      operationName: searchParam(params, 'operationName'),
      variables: jsonSearchParam(params, 'variables'),
      extensions: jsonSearchParam(params, 'extensions'),
    };
  }
  // Persisted queries (Apollo Client's link) are not kept: the client is told so and sends the query text.
  if (isRecord(request.extensions) && request.extensions.persistedQuery) throw validationFailed('PersistedQueryNotSupported');
  return request;
}
