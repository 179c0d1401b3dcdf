import type { GraphQLSchema } from 'graphql';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { AppState } from '../../http/context.js';
import { HttpError, describeError } from '../../http/errors.js';
import { recheckKey } from '../../http/authentication.js';
import { notFound } from '../../http/not-found.js';
import type { RateLimitGate } from '../../rate-limit/gate.js';
import { rateLimitHeaders } from '../../rate-limit/headers.js';
import { createLoaders } from '../schema/data.loaders.js';
import { formatErrors } from './error.mapping.js';
import type { GraphQLContext } from '../context.js';
import { answerType, prefersHtml, readGraphQLRequest } from './http-request.js';
import { isRefusal, requestPreparation, type Caller, type RequestPreparation } from './request-preparation.js';
import { freshLoadersPerMutationField } from './loaders.plugin.js';
import { operationExecutor } from './jit.executor.js';
import { landingPage } from './landing-page.js';
import { buildGraphQLSchema } from '../schema/schema.builder.js';
import { setHeader, setHeaders } from '../../http/headers.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLFacadeOptions {
  config: Config;
  gate: RateLimitGate;
  logger: Logger;
}

export interface GraphQLFacade {
  schema: GraphQLSchema;
  /** Answers `/graphql` and everything under it (the request walk routes them here, after authentication). */
  middleware: Middleware;
  /** The request preparation both transports share (the WebSocket server is given it). */
  preparation: RequestPreparation;
}

/**
 * The GraphQL facade over HTTP: one lane for every operation sent to /graphql, new or repeated, GET or POST.
 * The request is read (http-request.ts: CSRF, GET parameters, the POST body), prepared once (the preparation
 * both transports share: parse and validation through the document cache, the operation, its variables, shape,
 * cost and charge), run by the executor (graphql-jit or graphql-js), and answered: the result with its cost in
 * `extensions.cost`, or the refusal with its status and headers, every error in the catalogue's shape. A
 * browser asking for a page gets Apollo's landing page (the embedded Sandbox). Body limits, authentication and
 * rate limits are the same edge REST uses.
 */
export async function createGraphQLFacade({ config, gate, logger }: GraphQLFacadeOptions): Promise<GraphQLFacade> {
  const schema = await buildGraphQLSchema({ gate });
  freshLoadersPerMutationField(schema);
  const preparation = requestPreparation({ schema, gate, limits: config.graphqlLimits, introspection: config.introspection });
  const executor = operationExecutor(schema, config.graphqlExecutor);
  const page = await landingPage(config.env === 'production');

  /** Rate-limit headers for a response the request preparation never charged (a refused body, the landing page, 413, …): free. */
  const freeHeaders = (state: AppState, address: string): Promise<Record<string, string>> => rateLimitHeaders(gate, state, address, 0);

  /** Refused before anything ran: the first refusal's status and headers (400, 401, 429 with Retry-After, …). */
  const refuse = (ctx: Context, state: AppState, refused: readonly unknown[]) => {
    const { errors, headers, status } = formatErrors(refused, state.requestId, logger);
    state.errorCode = errors[0]?.extensions?.code as string | undefined;
    setHeaders(ctx, headers);
    ctx.response.status = status;
    setHeader(ctx, 'content-type', answerType(ctx));
    ctx.response.body = `${JSON.stringify({ errors })}\n`;
  };

  const answer = async (ctx: Context, state: AppState, context: RequestContext) => {
    if (ctx.request.path !== GRAPHQL_PATH) throw notFound(ctx, `The GraphQL API is at ${GRAPHQL_PATH}.`);
    if (ctx.req.method !== 'GET' && ctx.req.method !== 'POST') {
      throw new HttpError('METHOD_NOT_ALLOWED', `${ctx.req.method} is not allowed on ${GRAPHQL_PATH}; use POST, or GET for queries.`, { Allow: 'GET, POST' });
    }
    if (prefersHtml(ctx)) {
      setHeader(ctx, 'content-type', 'text/html');
      ctx.response.body = await page();
      return;
    }
    const request = await readGraphQLRequest(ctx);
    // The body may have come long after the headers: a key revoked meanwhile runs nothing.
    await recheckKey(ctx);
    const caller: Caller = context.actor ? { actor: context.actor } : { address: context.clientAddress, authFailure: context.authFailure };
    const prepared = await preparation.prepare(request, caller, ctx.req.method === 'GET' ? 'http-get' : 'http');
    if (prepared.operationName) context.observed.operationName = prepared.operationName;
    if (prepared.label) context.observed.operation = prepared.label;
    if (prepared.headers) setHeaders(ctx, prepared.headers);
    if (isRefusal(prepared)) return refuse(ctx, state, prepared.refused);
    const { result, stringify } = await executor.run(prepared, context);
    const formatted = result.errors?.length ? formatErrors(result.errors, state.requestId, logger) : undefined;
    if (formatted) setHeaders(ctx, formatted.headers);
    ctx.response.status = 200;
    setHeader(ctx, 'content-type', answerType(ctx));
    // An executed operation answers 200 with its data, its errors and its cost.
    const extensions = { ...result.extensions, cost: prepared.cost };
    ctx.response.body =
      formatted || result.data === undefined || stringify === JSON.stringify
        ? `${JSON.stringify({ errors: formatted?.errors, data: result.data, extensions })}\n`
        : // `{"data":…}` as the operation's compiled serializer writes it, then the extensions inside the same object.
          `${stringify({ data: result.data }).slice(0, -1)},"extensions":${JSON.stringify(extensions)}}\n`;
  };

  // Mounted on /graphql by the request walk: every request here is GraphQL's.
  const middleware: Middleware = async (ctx: Context) => {
    const state = ctx.state as AppState;
    state.facade = 'graphql';
    state.route = ctx.request.path === GRAPHQL_PATH ? `${ctx.req.method} ${GRAPHQL_PATH}` : undefined;
    // Results depend on the key: never stored by a cache.
    setHeader(ctx, 'cache-control', 'no-store');
    const context = new RequestContext(state, ctx.request.ip);
    try {
      await answer(ctx, state, context);
      // Every answer under /graphql carries the rate-limit headers (the preparation's charge, or a free read).
      if (!ctx.response.get('X-RateLimit-Limit')) setHeaders(ctx, await freeHeaders(state, ctx.request.ip));
    } catch (error) {
      // A refusal thrown anywhere in the lane (another path or method, a request refused as it is read: 400, 413,
      // 415; a store that cannot answer) answers like the preparation's refusals, in the negotiated media type; an
      // unexpected error goes to the error envelope (logged, INTERNAL, in the GraphQL shape: `toGraphQLErrorBody`).
      // Either way the rate-limit headers come first (a store that cannot answer gives its own headers instead).
      if (!ctx.response.get('X-RateLimit-Limit')) setHeaders(ctx, await freeHeaders(state, ctx.request.ip).catch((e: unknown) => describeError(e)?.headers ?? {}));
      if (!describeError(error)) throw error;
      refuse(ctx, state, [error]);
    } finally {
      state.operationName = context.observed.operationName;
      state.operation = context.observed.operation;
    }
  };

  return {
    schema,
    middleware,
    preparation,
  };
}

/**
 * The resolvers' context of one HTTP request. `domain` is a getter: the request's domain (and its EntityManager
 * fork) is made only if a resolver asks for it.
 */
class RequestContext implements GraphQLContext {
  readonly actor: AppState['actor'];
  readonly authFailure: AppState['authFailure'];
  readonly loaders: GraphQLContext['loaders'];
  readonly requestId: string;
  constructor(
    readonly state: AppState,
    readonly clientAddress: string,
    readonly observed: GraphQLContext['observed'] = {},
  ) {
    this.actor = state.actor;
    this.authFailure = state.authFailure;
    this.requestId = state.requestId;
    this.loaders = createLoaders(() => state.domain);
  }
  get domain() {
    return this.state.domain;
  }
}
