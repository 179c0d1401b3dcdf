import { ApolloServer, type ApolloServerPlugin, type PersistedQueryOptions } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { GraphQLSchema } from 'graphql';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { readJsonBody } from '../../http/body.js';
import type { AppState } from '../../http/context.js';
import { authError, recheckKey } from '../../http/authentication.js';
import { describeError } from '../../http/errors.js';
import { setHeader, setHeaders } from '../../http/headers.js';
import { notFound } from '../../http/not-found.js';
import { asLandingPage } from '../../http/security-headers.js';
import { FREE, RateLimitRefusal, refusalCharge, type RateLimitGate } from '../../rate-limit/index.js';
import { rateLimitHeaders } from '../../rate-limit/headers.js';
import { createLoaders } from '../schema/data.loaders.js';
import { buildGraphQLSchema } from '../schema/schema.builder.js';
import type { GraphQLContext } from '../context.js';
import { errorHooks, formatError } from './error.mapping.js';
import { jitGateway, operationExecutor } from './jit.executor.js';
import { executeWithApollo, GRAPHQL_MEDIA_TYPES, writeApolloResponse } from './koa.integration.js';
import { landingPage } from './landing-page.js';
import { freshLoadersPerMutationField } from './loaders.plugin.js';
import { PERSISTED_QUERY_TTL_SECONDS, persistedQueryCache } from './persisted-queries.js';
import { repeatedFieldsPrecheck } from './query-limits.js';
import { isRecord, requestPreparation, type RequestPreparation } from './request-preparation.js';
import { resolveHttpRequest } from './trusted-documents.js';

export const GRAPHQL_PATH = '/graphql';

/** Headers besides a non-simple content type that prove a request is not a simple cross-site one (each forces a preflight). */
export const CSRF_PREFLIGHT_HEADERS = ['x-apollo-operation-name', 'apollo-require-preflight', 'x-api-key'];

export interface GraphQLFacadeOptions {
  config: Config;
  gate: RateLimitGate;
  logger: Logger;
  /** More Apollo Server plugins, after the service's own (tests count requests with one). */
  plugins?: ApolloServerPlugin<GraphQLContext>[];
}

export interface GraphQLFacade {
  schema: GraphQLSchema;
  /** Answers `/graphql` and everything under it (the request walk routes them here, after authentication). */
  middleware: Middleware;
  /** The request preparation both transports share (the WebSocket server is given it). */
  preparation: RequestPreparation;
  /** Stops Apollo Server and closes the persisted-query store. */
  stop(): Promise<void>;
}

/**
 * The GraphQL facade over HTTP: Apollo Server 5 executes every request to /graphql, through a Koa integration on
 * Apollo's integration API (koa.integration.ts). The request preparation sits in Apollo's extension points: the
 * bounded document store (`documentStore`), the query limits and the introspection rule (`validationRules`), the
 * operation's transport, shape, cost and charge (a plugin's `didResolveOperation`), the error catalogue
 * (`formatError` and a plugin), graphql-jit (`gateway`), the landing page (a plugin). Automatic persisted queries
 * are on, their store bounded (shared through Redis when it is configured). A request naming a trusted document
 * (trusted-documents.ts) by `documentId` or by its hash alone is given its text before Apollo reads it. Body limits, authentication and rate limits are the edge REST uses.
 */
export async function createGraphQLFacade({ config, gate, logger, plugins = [] }: GraphQLFacadeOptions): Promise<GraphQLFacade> {
  const schema = freshLoadersPerMutationField(await buildGraphQLSchema({ gate }));
  const preparation = requestPreparation({
    schema,
    gate,
    limits: config.graphqlLimits,
    introspection: config.introspection,
    trusted: config.trustedDocuments,
  });
  const { trusted } = preparation;
  if (config.trustedDocuments.file) {
    logger.info({ file: config.trustedDocuments.file, documents: trusted.size, only: trusted.only }, 'trusted documents loaded');
  }
  const executor = config.graphqlExecutor === 'jit' ? jitGateway(schema, operationExecutor(schema, 'jit')) : undefined;
  const persisted = await persistedQueryCache(config, logger);
  const persistedQueries: PersistedQueryOptions = { cache: persisted.cache, ttl: PERSISTED_QUERY_TTL_SECONDS };
  const apollo = new ApolloServer<GraphQLContext>({
    // graphql-jit for queries through Apollo's gateway option (jit.executor.ts); or graphql-js, Apollo's own.
    ...(executor ? { gateway: executor } : { schema }),
    logger,
    nodeEnv: config.env,
    // Introspection is refused by the preparation's own rule when GRAPHQL_INTROSPECTION is off (its message names the setting).
    introspection: true,
    // No stack trace, SQL or path ever reaches a client, in development either (the log has them).
    includeStacktraceInErrorResponses: false,
    csrfPrevention: { requestHeaders: CSRF_PREFLIGHT_HEADERS },
    // One operation per request: the preparation keeps the operation's cost on the request's `observed`, which
    // batched operations (each a shallow copy of the context) would share.
    allowBatchedHttpRequests: false,
    // The process owns SIGTERM (readiness 503, drain, then exit); Apollo must not re-raise the signal first.
    stopOnTerminationSignals: false,
    persistedQueries,
    parseOptions: preparation.apollo.parseOptions,
    validationRules: preparation.apollo.validationRules,
    documentStore: preparation.apollo.documentStore,
    formatError,
    plugins: [
      preparation.apollo.plugin(errorHooks(logger)),
      // Apollo's defaults the service does not use, off: cache control (no cache hints are set; its per-field hook
      // makes Apollo wrap every resolver), inline tracing (for federated subgraphs), and usage and schema reporting
      // to Apollo's cloud (`cloudReportingOff`).
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ...cloudReportingOff(process.env),
      landingPage(config.env === 'production'),
      ...plugins,
    ],
  });
  // A start that fails leaves nothing open: the persisted-query store's Redis client would keep reconnecting.
  await apollo.start().catch(async (error: unknown) => {
    await persisted.close();
    throw error;
  });

  const precheck = repeatedFieldsPrecheck(config.graphqlLimits);

  /**
   * The rate-limit headers of an answer the request preparation did not charge: a refusal of the document or of the
   * HTTP request (a syntax or validation error, a limit, an unknown persisted query, a GET mutation, a body too
   * large) is charged by `refusalCharge`, with a key to the account, without one to the address's limiter (it may be
   * refused 429 then). The landing page is free.
   */
  const unchargedHeaders = (ctx: Context, state: AppState, context: RequestContext, error?: unknown): Promise<Record<string, string>> => {
    const known = error === undefined ? undefined : describeError(error);
    const status = error === undefined ? ctx.status : (known?.status ?? 500);
    const charge = ctx.response.is('html') !== false ? 'none' : refusalCharge(status, known?.code ?? context.observed.errorCode);
    if (charge === 'none') return rateLimitHeaders(gate, state, ctx.request.ip, 0);
    if (!state.actor) return gate.anonymous(ctx.request.ip, true);
    return charge === 'free-request' ? gate.charge(state.actor, 0, FREE) : gate.charge(state.actor, 1);
  };

  /** Apollo's answer to the request (the edge's body rule first), written onto Koa's response. */
  const answer = async (ctx: Context, state: AppState, context: RequestContext) => {
    if (ctx.request.path !== GRAPHQL_PATH) throw notFound(ctx, `The GraphQL API is at ${GRAPHQL_PATH}.`);
    // What would be refused whatever the document is refused before the body is read and parsed: a key known to be
    // banned (its free requests too: telling them apart is the parsing a ban must spare), and, without a valid key,
    // an address with no failed authentication left (each such request counts one). The refusal's headers are set
    // here: it is charged. The landing page (a GET that prefers HTML, as Apollo decides it) stays free.
    if (ctx.req.method !== 'GET' || ctx.request.accepts(...GRAPHQL_MEDIA_TYPES, 'text/html') !== 'text/html') {
      try {
        if (state.actor) gate.refuseKnownBan(state.actor);
        else if (gate.isAddressBlocked(ctx.request.ip)) await gate.anonymous(ctx.request.ip, true);
      } catch (refusal) {
        if (refusal instanceof RateLimitRefusal) setHeaders(ctx, refusal.headers);
        throw refusal;
      }
    }
    // The edge's body rule (1 MiB, JSON, UTF-8: 413, 415, 400), as on REST; Apollo checks what the body holds.
    const body = ctx.req.method === 'POST' ? await readJsonBody(ctx) : undefined;
    // The body may have come long after the headers: a key revoked meanwhile runs nothing (awaited only when
    // a key or account changed since the headers were checked).
    const recheck = recheckKey(ctx);
    if (recheck) await recheck;
    // A `documentId` becomes its trusted text; with GRAPHQL_TRUSTED_ONLY, a text not trusted is refused before parsing
    // (but a key that was sent and is not valid is told so first: its owner may be staff, whom free texts are open to).
    let request: ReturnType<typeof resolveHttpRequest>;
    try {
      request = resolveHttpRequest(trusted, { method: ctx.req.method!.toUpperCase(), body, search: ctx.request.querystring }, state.actor);
    } catch (error) {
      const failure = state.authFailure;
      if (describeError(error)?.code === 'DOCUMENT_NOT_TRUSTED' && (failure === 'INVALID_API_KEY' || failure === 'UNAVAILABLE'))
        throw authError(failure);
      throw error;
    }
    // Apollo validates a document as soon as it has parsed it: a text the client sent that would make validation's
    // work grow with the square of its size is refused before that (query-limits.ts). Trusted texts were checked at load.
    const query = body === undefined ? ctx.request.query.query : isRecord(body) ? body.query : undefined;
    if (typeof query === 'string' && query) {
      const refusal = precheck(query);
      if (refusal) throw refusal;
    }
    const response = await executeWithApollo(apollo, ctx, request, () => Promise.resolve(context));
    // Apollo answers a malformed HTTP request (CSRF, no query, a GET mutation, another method) before any plugin
    // runs: those error bodies get their request id here.
    if (response.body.kind === 'complete' && (response.status ?? 200) >= 400 && !response.body.string.includes('"requestId"')) {
      response.body.string = withRequestId(response.body.string, state.requestId, context.observed);
    }
    // Apollo marks its "persisted query not found" answer `private, no-cache, must-revalidate`; every answer here is
    // the key's own and never stored (the `no-store` above).
    if (response.headers.has('cache-control')) response.headers.delete('cache-control');
    const page = response.headers.get('content-type')?.startsWith('text/html');
    writeApolloResponse(ctx, response);
    if (page) asLandingPage(ctx);
  };

  // Mounted on /graphql by the request walk: every request here is GraphQL's. Every answer under /graphql
  // carries the rate-limit headers (the preparation's charge, or the charge of a refusal); the usual answer,
  // charged, settles without a further promise.
  const middleware: Middleware = (ctx: Context) => {
    const state = ctx.state as AppState;
    state.facade = 'graphql';
    state.route = ctx.request.path === GRAPHQL_PATH ? `${ctx.req.method} ${GRAPHQL_PATH}` : undefined;
    // Results depend on the key: never stored by a cache.
    setHeader(ctx, 'cache-control', 'no-store');
    const context = new RequestContext(state, ctx.request.ip);
    const observe = () => {
      state.operationName = context.observed.operationName;
      state.operation = context.observed.operation;
      if (context.observed.errorCode) state.errorCode = context.observed.errorCode;
      return ctx.res.hasHeader('x-ratelimit-limit');
    };
    return answer(ctx, state, context).then(
      // A refusal's charge that is itself refused answers 429 instead (the error envelope, below the facade).
      () => (observe() ? undefined : unchargedHeaders(ctx, state, context).then((headers) => setHeaders(ctx, headers))),
      // The error envelope answers in the GraphQL shape (`toGraphQLErrorBody`); the rate-limit headers come first
      // (a store that cannot answer gives its own headers instead).
      (error: unknown) => {
        if (observe()) throw error;
        return unchargedHeaders(ctx, state, context, error).then(
          (headers) => {
            setHeaders(ctx, headers);
            throw error;
          },
          (refusal: unknown) => {
            const known = describeError(refusal);
            if (known?.status === 429) throw refusal;
            setHeaders(ctx, known?.headers ?? {});
            throw error;
          },
        );
      },
    );
  };

  return {
    schema,
    middleware,
    preparation,
    async stop() {
      await apollo.stop();
      await persisted.close();
    },
  };
}

/**
 * The plugins that keep Apollo's usage and schema reporting to its cloud off. Apollo installs them only when its
 * variables are in the process's environment (APOLLO_KEY; APOLLO_SCHEMA_REPORTING), so the markers are listed only
 * then: Apollo starts every plugin of the list on every request (two promises each), markers included.
 */
export function cloudReportingOff(env: NodeJS.ProcessEnv): ApolloServerPlugin<GraphQLContext>[] {
  if (!env.APOLLO_KEY && !env.APOLLO_SCHEMA_REPORTING) return [];
  return [ApolloServerPluginUsageReportingDisabled(), ApolloServerPluginSchemaReportingDisabled()];
}

/**
 * The resolvers' context of one HTTP request. A class, so that `domain` is a getter on the prototype: Apollo
 * copies the context object for every operation (onto a new object with the same prototype), and the request's
 * domain (and its EntityManager fork) is made only if a resolver asks for it.
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

/** An error body Apollo wrote before any plugin ran, with the request id in each error (and the first code logged). */
function withRequestId(text: string, requestId: string, observed: GraphQLContext['observed']): string {
  try {
    const body = JSON.parse(text) as { errors?: Array<{ extensions?: Record<string, unknown> }> };
    for (const error of body.errors ?? []) error.extensions = { ...error.extensions, requestId };
    observed.errorCode ??= body.errors?.[0]?.extensions?.code as string | undefined;
    return `${JSON.stringify(body)}\n`;
  } catch {
    return text;
  }
}
