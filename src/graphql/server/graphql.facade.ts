import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { koaMiddleware } from '@as-integrations/koa';
import type { GraphQLSchema } from 'graphql';
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import { readJsonBody } from '../../http/body.js';
import type { AppState } from '../../http/context.js';
import { HttpError, describeError } from '../../http/errors.js';
import type { RateLimitGate } from '../../rate-limit/gate.js';
import { createLoaders } from '../schema/data.loaders.js';
import { errorsPlugin, formatError } from './error.mapping.js';
import type { GraphQLContext } from '../context.js';
import { checkBody, requestPreparation, type RequestPreparation } from './request-preparation.js';
import { freshLoadersPerMutationField } from './loaders.plugin.js';
import { jitGateway } from './jit.executor.js';
import { landingPage } from './landing-page.js';
import { buildGraphQLSchema } from '../schema/schema.builder.js';

export const GRAPHQL_PATH = '/graphql';

export interface GraphQLFacadeOptions {
  config: Config;
  gate: RateLimitGate;
  logger: Logger;
}

export interface GraphQLFacade {
  schema: GraphQLSchema;
  /** Answers `/graphql` and everything under it; other paths go to `next`. Mount after authentication. */
  middleware: Middleware;
  /** The request preparation both transports share (the WebSocket server is given it). */
  preparation: RequestPreparation;
  stop(): Promise<void>;
}

/**
 * The GraphQL facade: Apollo Server over the type-graphql schema, mounted on the app's Koa through
 * `@as-integrations/koa`. It turns the Koa request into a transport-neutral context for the
 * resolvers, and every error under /graphql into the GraphQL error shape. Body limits, authentication
 * and rate limits are the same edge REST uses.
 */
export async function createGraphQLFacade({ config, gate, logger }: GraphQLFacadeOptions): Promise<GraphQLFacade> {
  const schema = await buildGraphQLSchema({ gate });
  freshLoadersPerMutationField(schema);
  const production = config.env === 'production';
  const preparation = requestPreparation({ schema, gate, limits: config.graphqlLimits, introspection: config.introspection });
  const gateway = config.graphqlExecutor === 'jit' ? jitGateway(schema) : undefined;
  const apollo = new ApolloServer<GraphQLContext>({
    // graphql-jit runs the operations through Apollo's gateway hook (src/graphql/server/jit.executor.ts); or graphql-js, Apollo's own.
    ...(gateway ? { gateway } : { schema }),
    logger,
    // Introspection is refused by the preparation's own rule when GRAPHQL_INTROSPECTION is off (its message names the setting).
    introspection: true,
    // No stack trace, SQL or path ever reaches a client, in development either (the log has them).
    includeStacktraceInErrorResponses: false,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    // main.ts owns SIGTERM (readiness 503, drain, then exit); Apollo must not re-raise the signal first.
    stopOnTerminationSignals: false,
    persistedQueries: false,
    // Parsing and validation with the preparation's options, rules and document cache; its plugin admits and charges.
    parseOptions: preparation.apollo.parseOptions,
    validationRules: preparation.apollo.validationRules,
    documentStore: preparation.apollo.documentStore,
    formatError,
    plugins: [
      ...preparation.apollo.plugins,
      errorsPlugin(logger),
      // Apollo's defaults we do not use, off: cache control (we set no cache hints; its per-field hook
      // makes Apollo wrap every resolver), inline tracing (for federated subgraphs only), and usage and
      // schema reporting to Apollo's cloud (they would start with an APOLLO_KEY in the environment).
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      landingPage(production),
    ],
  });
  await apollo.start();

  const contexts = new WeakMap<Context, GraphQLContext>();
  const execute = koaMiddleware(apollo, { context: async ({ ctx }) => contexts.get(ctx)! });
  const afterApollo = async () => {};

  /** Rate-limit headers for a response the plugin never charged (parse errors, landing page, 413, …): free. */
  const freeHeaders = (state: AppState, address: string): Promise<Record<string, string>> =>
    state.actor ? gate.charge(state.actor, 0) : gate.anonymous(address, state.authFailure === 'INVALID_API_KEY');

  const answer = async (ctx: Context, state: AppState, context: RequestContext) => {
    if (ctx.path !== GRAPHQL_PATH) throw new HttpError('NOT_FOUND', `Nothing at ${ctx.path}. The GraphQL API is at ${GRAPHQL_PATH}.`);
    if (ctx.method !== 'GET' && ctx.method !== 'POST') {
      throw new HttpError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${GRAPHQL_PATH}; use POST, or GET for queries.`, { Allow: 'GET, POST' });
    }
    if (ctx.method === 'POST') {
      // Apollo checks Accept only after executing: a mutation would run and then be answered 406.
      // An Accept that takes no JSON is disregarded instead (GraphQL over HTTP allows it): JSON it is.
      if (ctx.get('accept') && !ctx.accepts('application/json', 'application/graphql-response+json')) ctx.req.headers.accept = 'application/json';
      // A body that is not JSON is 415, as on REST; refused before anything runs, which also stops
      // the text/plain "simple requests" that CSRF relies on.
      const body = await readJsonBody(ctx);
      // One object per request (request-preparation.ts); `false`, `0` or `""` would otherwise reach the Koa adapter as a missing body (500).
      checkBody(body);
      // Apollo refuses a missing body itself (400); the Koa adapter only needs something set.
      (ctx.request as { body?: unknown }).body = body ?? {};
    }
    contexts.set(ctx, context);
    await execute(ctx, afterApollo);
    // Apollo answers a malformed HTTP request (no query, a GET mutation, a CSRF-unsafe request) before
    // any plugin runs: those few error bodies get their requestId here.
    if (ctx.status >= 400 && typeof ctx.body === 'string' && !ctx.body.includes('"requestId"')) ctx.body = withRequestId(ctx.body, state.requestId);
  };

  const middleware: Middleware = async (ctx: Context, next: Next) => {
    if (ctx.path !== GRAPHQL_PATH && !ctx.path.startsWith(`${GRAPHQL_PATH}/`)) return next();
    const state = ctx.state as AppState;
    state.facade = 'graphql';
    state.route = ctx.path === GRAPHQL_PATH ? `${ctx.method} ${GRAPHQL_PATH}` : undefined;
    // What Apollo's cache-control plugin answered for every operation (results depend on the key).
    ctx.set('Cache-Control', 'no-store');
    const context = new RequestContext(state, ctx.ip);
    try {
      await answer(ctx, state, context);
    } catch (error) {
      // The error envelope answers in the GraphQL shape (`toGraphQLErrorBody`); the rate-limit headers come first.
      if (!ctx.response.get('X-RateLimit-Limit')) ctx.set(await freeHeaders(state, ctx.ip).catch((e: unknown) => describeError(e)?.headers ?? {}));
      throw error;
    } finally {
      state.operationName = context.observed.operationName;
      state.operation = context.observed.operation;
    }
    // Every answer under /graphql carries the rate-limit headers (the plugin's charge, or a free read).
    if (!ctx.response.get('X-RateLimit-Limit')) ctx.set(await freeHeaders(state, ctx.ip));
  };

  return {
    schema,
    middleware,
    preparation,
    stop: () => apollo.stop(),
  };
}

/**
 * The resolvers' context of one HTTP request. A class, so that `domain` is a getter on the prototype:
 * Apollo copies the context object for every operation (`Object.assign` onto a new object with the same
 * prototype), which would otherwise call the getter and copy a plain value.
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

function withRequestId(text: string, requestId: string): string {
  try {
    const body = JSON.parse(text) as { errors?: Array<{ extensions?: Record<string, unknown> }> };
    for (const error of body.errors ?? []) error.extensions = { ...error.extensions, requestId };
    return JSON.stringify(body);
  } catch {
    return text;
  }
}
