import Router, { type RouterContext } from '@koa/router';
import type { Context, Middleware } from 'koa';
import { validationFailed } from '../domain/errors.js';
import type { Actor, Domain } from '../domain/index.js';
import { HttpError } from '../http/errors.js';
import { notFound } from '../http/not-found.js';
import { readJsonBody } from '../http/body.js';
import { requestHeader, type AppState } from '../http/context.js';
import { recheckKey } from '../http/authentication.js';
import { compileOperations, toDetails, type CompiledOperation, type OpenApiDocument } from './openapi.js';
import { answerTag, matches } from './conditional.js';
import { setHeader, setHeaders } from '../http/headers.js';

// A request part once validated against the OpenAPI document (coerced, defaulted): handlers read it as the document says.
// biome-ignore lint/suspicious/noExplicitAny: the document types these values, not TypeScript
type Validated = any;
export interface RestInput {
  params: Record<string, Validated>;
  query: Record<string, Validated>;
  headers: Record<string, Validated>;
  body: Validated;
}

export interface RestResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface RestCall {
  domain: Domain;
  /** The caller; absent only on public operations. */
  actor: Actor;
  /** Absolute URL of this request, for Link headers. */
  url(): URL;
  op: CompiledOperation;
}

export type RestHandler = (input: RestInput, call: RestCall) => Promise<RestResult>;
export type RestHandlers = Record<string, RestHandler>;

/** Per deprecated operation: the headers every one of its answers carries (from the raw path params). */
export type RestDeprecations = Record<string, (params: Record<string, string>) => Record<string, string>>;

/**
 * Runs once for every /v1 request, routed or not (`op` is null for an unknown route): authentication
 * outcome and rate limiting, which set the rate-limit headers on every response. `notModified`: the
 * answer is a 304, admitted or refused like any request but consuming nothing (docs/RATE-LIMITS.md); `'ahead'`: a
 * conditional request's answer is not made yet: only a key known to be banned is refused, the guard follows the answer.
 */
export type RestGuard = (ctx: Context, op: CompiledOperation | null, answer?: { notModified: boolean } | 'ahead') => Promise<void>;

/**
 * Builds the /v1 router from the OpenAPI document: every documented operation is a route whose
 * request is validated against the document before its handler runs, and no route exists that the
 * document does not describe.
 */
export function createRestRouter(
  doc: OpenApiDocument,
  handlers: RestHandlers,
  guard: RestGuard,
  deprecations: RestDeprecations = {},
): Middleware {
  const ops = compileOperations(doc);
  const missing = ops.filter((op) => !handlers[op.operationId]).map((op) => op.operationId);
  if (missing.length) throw new Error(`No REST handler for: ${missing.join(', ')}`);

  // One router per first path segment (`pets`, `store`, …): a request is matched against its segment's few routes
  // instead of every route of the API (@koa/router tests each route's pattern in turn).
  const routers = new Map<string, Router>();
  for (const op of ops) {
    const segment = segmentOf(`/v1${op.path}`);
    let router = routers.get(segment);
    if (!router) routers.set(segment, (router = new Router({ prefix: '/v1' })));
    const koaPath = op.path.replace(/\{(\w+)\}/g, ':$1');
    const handler = handlers[op.operationId]!;
    const route = `${op.method.toUpperCase()} /v1${op.path}`;
    const deprecation = deprecations[op.operationId];
    router.register(koaPath, [op.method.toUpperCase()], async (ctx: Context) => {
      const state = ctx.state as AppState;
      state.route = route;
      if (deprecation) setHeaders(ctx, deprecation(routeParams(ctx)));
      // The request checked, then handled; a refusal of the parameters is thrown at once, a body's once it is read.
      const run = (): Promise<RestResult> => {
        const input = validateRequest(ctx, op);
        // `url` is parsed only when a handler needs it (a list's next-page Link header).
        const call: RestCall = { domain: state.domain, actor: state.actor as Actor, url: () => requestUrl(ctx, op), op };
        if (!op.hasBody) return handler(input, call);
        // The body may have come long after the headers: a key revoked meanwhile writes nothing.
        return validateBody(ctx, op).then(async (body) => {
          await recheckKey(ctx);
          return handler({ ...input, body }, call);
        });
      };
      const ifNoneMatch = op.method === 'get' ? requestHeader(ctx, 'if-none-match') : '';
      if (!ifNoneMatch || !state.actor) {
        await guard(ctx, op);
        return send(ctx, await run(), ifNoneMatch);
      }
      // A conditional GET with a key costs what its answer is: nothing for a 304, 1 for anything else
      // (docs/RATE-LIMITS.md). The answer decides, so the request is guarded once it is known, and only then; a key
      // over its limit or banned is refused as it would be without the header; one known to be banned before the answer
      // is made, so that its conditional requests cost no read (a key over its limit is banned after BAN_THRESHOLD).
      await guard(ctx, op, 'ahead');
      let result: RestResult;
      try {
        result = await run();
      } catch (error) {
        await guard(ctx, op);
        throw error;
      }
      const answer = tagged(ctx, result);
      const notModified = answer !== undefined && matches(ifNoneMatch, answer.etag);
      await guard(ctx, op, { notModified });
      send(ctx, result, ifNoneMatch, answer);
    });
  }
  const dispatchers = new Map([...routers].map(([segment, router]) => [segment, router.routes()]));

  // Mounted on /v1 by the request walk: every request here is REST's. The segment's router dispatches the route it
  // matches; a request it does not route falls through to `notRouted`, with the routes whose path matched in
  // `ctx.matched`.
  return (ctx: Context) => {
    (ctx.state as AppState).facade = 'rest';
    const dispatch = dispatchers.get(segmentOf(ctx.request.path));
    const fallThrough = () => notRouted(ctx, (ctx as RouterContext).matched);
    return dispatch ? dispatch(ctx as RouterContext, fallThrough) : fallThrough();
  };

  /** Not routed: 405 when the path exists with other methods (`matched`: the routes whose path matched), else 404. */
  async function notRouted(ctx: Context, matched: Array<{ methods: string[] }> | undefined): Promise<void> {
    await guard(ctx, null);
    const allowed = allowedMethods(matched);
    if (allowed.length) {
      throw new HttpError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; use ${allowed.join(', ')}.`, {
        Allow: allowed.join(', '),
      });
    }
    throw notFound(ctx, 'See /v1/openapi.json for the operations.');
  }
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The methods of routes whose path matched (@koa/router gives a GET route HEAD too), in a fixed order. */
function allowedMethods(matched: Array<{ methods: string[] }> = []): string[] {
  const methods = new Set(matched.flatMap((layer) => layer.methods));
  return METHODS.filter((method) => methods.has(method));
}

/**
 * The first segment of a path under /v1 (`/v1/pets/7` → `pets`), in lower case: @koa/router matches paths
 * without regard to case, so `/v1/PETS` is routed as `/v1/pets` is.
 */
function segmentOf(path: string): string {
  const end = path.indexOf('/', 4);
  return (end === -1 ? path.slice(4) : path.slice(4, end)).toLowerCase();
}

/** The path parameters @koa/router decoded for the route it dispatched. */
const routeParams = (ctx: Context): Record<string, string> => (ctx as RouterContext).params;

/** The request's parameters and headers, checked against the document (its body, if the operation takes one, by `validateBody`). */
function validateRequest(ctx: Context, op: CompiledOperation): RestInput {
  const params = { ...routeParams(ctx) };
  const badPathIds = notDecimal(params, op.integerParameters.path);
  if (badPathIds.length) throw validationFailed('A path parameter is invalid.', badPathIds);
  if (!op.validateParams(params)) {
    throw validationFailed('A path parameter is invalid.', toDetails(op.validateParams.errors, ''));
  }
  const query = parseQuery(ctx.request.querystring);
  const badQueryIntegers = notDecimal(query, op.integerParameters.query);
  if (badQueryIntegers.length) throw validationFailed('A query parameter is invalid.', badQueryIntegers);
  if (!op.validateQuery(query)) {
    throw validationFailed('A query parameter is invalid.', toDetails(op.validateQuery.errors, ''));
  }
  // Only the documented headers are checked (the schema allows any other) and handed on: a copy of them alone.
  const headers: Record<string, unknown> = {};
  const given = ctx.req.headers;
  for (const name of op.headerParameters) if (given[name] !== undefined) headers[name] = given[name];
  if (!op.validateHeaders(headers)) {
    // Named as the document names the header (`Idempotency-Key`), not as Node keys it.
    const details = toDetails(op.validateHeaders.errors, '').map((d) => ({ ...d, path: op.headerNames[d.path] ?? d.path }));
    throw validationFailed('A header is invalid.', details);
  }
  // Operations without a documented body ignore none silently: a body here is a client mistake.
  if (!op.hasBody && ctx.request.length)
    throw validationFailed('This operation takes no request body.', [{ path: 'body', message: 'is not allowed' }]);
  return { params, query, headers, body: undefined };
}

/**
 * The body of an operation that takes one, read and checked against the document. Text is checked as sent: the
 * document bounds names after trimming, which the domain does (and checks), so both facades accept and refuse the
 * same text.
 */
async function validateBody(ctx: Context, op: CompiledOperation): Promise<unknown> {
  const body = await readJsonBody(ctx);
  if (body === undefined && op.bodyRequired) {
    throw validationFailed('This operation needs a JSON request body.', [{ path: 'body', message: 'is required' }]);
  }
  if (body !== undefined && !op.validateBody!(body)) {
    throw validationFailed('The request body is invalid.', toDetails(op.validateBody!.errors, ''));
  }
  return body;
}

const NO_DETAILS: Array<{ path: string; message: string }> = [];
const DECIMAL = /^[0-9]+$/;

/** Integer parameters given in any form other than plain decimal digits ("1e3", "0x10", " 1", "1.0"). */
function notDecimal(values: Record<string, unknown>, names: string[]): Array<{ path: string; message: string }> {
  if (names.length === 0) return NO_DETAILS;
  return names
    .filter((name) => typeof values[name] === 'string' && !DECIMAL.test(values[name] as string))
    .map((name) => ({ path: name, message: 'must be an integer written in decimal digits' }));
}

/**
 * The query string's parameters by name, decoded as Koa's `ctx.query` decodes them (WHATWG `URLSearchParams`), read
 * in one pass (Koa's defines each property and then the object was copied). A repeated parameter is refused rather
 * than guessed at, and the refusal names every parameter given more than once, in the order they first repeat.
 */
function parseQuery(querystring: string): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  if (!querystring) return query;
  const seen = new Set<string>();
  let repeated: Set<string> | undefined;
  new URLSearchParams(querystring).forEach((value, name) => {
    if (seen.has(name)) (repeated ??= new Set()).add(name);
    seen.add(name);
    query[name] = value;
  });
  if (repeated) throw repeatedParameters([...repeated]);
  return query;
}

/** At most this many repeated parameters are named in a refusal (a long query string repeating many names stays a short answer). */
const MAX_REPEATED_NAMED = 20;

/** The refusal of repeated query parameters: the first MAX_REPEATED_NAMED of them in `details`, all counted in the message. */
function repeatedParameters(names: string[]) {
  const named = names.slice(0, MAX_REPEATED_NAMED);
  const more = names.length - named.length;
  const list = more
    ? `${named.join(', ')} and ${more} more`
    : named.length === 1
      ? named[0]
      : `${named.slice(0, -1).join(', ')} and ${named.at(-1)}`;
  const message =
    names.length === 1
      ? `The query parameter ${list} is given more than once.`
      : `The query parameters ${list} are each given more than once.`;
  return validationFailed(
    message,
    named.map((name) => ({ path: name, message: 'must be given once' })),
  );
}

/**
 * The absolute URL of the request (a Host header that is not a valid host falls back to localhost), with the
 * operation's own query parameters only: a next page's link carries no others.
 */
function requestUrl(ctx: Context, op: CompiledOperation): URL {
  let url: URL;
  try {
    url = new URL(ctx.originalUrl, `${ctx.request.protocol}://${ctx.request.host}`);
  } catch {
    url = new URL(ctx.originalUrl, 'http://localhost');
  }
  for (const name of [...url.searchParams.keys()]) if (!op.queryParameters.has(name)) url.searchParams.delete(name);
  return url;
}

/** A header of a handler's answer, whatever the case its name is written in (`name` in lower case). */
function headerOf(result: RestResult, name: string): string | undefined {
  for (const key in result.headers) if (key.toLowerCase() === name) return result.headers[key];
  return undefined;
}

/** The answer's bytes as they will be sent: JSON for data, a document's own text as it is. */
const serialise = (result: RestResult): string | undefined =>
  result.body === undefined ? undefined : typeof result.body === 'string' ? result.body : JSON.stringify(result.body);

/** A GET's answer with a body, as it will be sent, and its strong ETag. */
function tagged(ctx: Context, result: RestResult): { text: string; etag: string } | undefined {
  const method = ctx.req.method;
  if ((method !== 'GET' && method !== 'HEAD') || result.body === undefined) return undefined;
  const text = serialise(result)!;
  return { text, etag: answerTag(text, headerOf(result, 'link')) };
}

/**
 * Writes a handler's answer. A GET's answer carries its strong ETag, and a 200 is 304 without a body
 * when `If-None-Match` names it.
 */
function send(ctx: Context, result: RestResult, ifNoneMatch: string, answer = tagged(ctx, result)): void {
  if (result.headers) setHeaders(ctx, result.headers);
  const response = ctx.response;
  response.status = result.status ?? 200;
  if (result.body === undefined) return;
  if (!answer) {
    response.body = result.body;
    return;
  }
  // Each answer depends on the caller's key: no shared cache may keep it, a client's own revalidates.
  setHeader(ctx, 'etag', answer.etag);
  if (!ctx.res.hasHeader('cache-control')) setHeader(ctx, 'cache-control', 'private, no-cache');
  if (response.status === 200 && ifNoneMatch && matches(ifNoneMatch, answer.etag)) {
    response.status = 304;
    return;
  }
  // Set as it is (Koa's `ctx.type` looks the type up); Koa then sets no type of its own for the text.
  if (typeof result.body !== 'string') setHeader(ctx, 'content-type', 'application/json; charset=utf-8');
  response.body = answer.text;
}
