/**
 * Composition root: the one place that builds the ORM, the services, the limiter, Koa and Apollo.
 * `createApp(config)` returns an isolated app, so tests run many side by side on port 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa, { type Context, type Next } from 'koa';
import cors from '@koa/cors';
import helmet from 'koa-helmet';
import type { DestinationStream, Logger } from 'pino';
import type { Config } from './config.js';
import { createOrm, migrate, type Orm } from './db/orm.js';
import { createDomain, type Domain } from './domain/index.js';
import { AccountsService } from './domain/accounts.service.js';
import { seedDemoCatalog } from './domain/seed.js';
import type { AppState } from './http/context.js';
import { toErrorBody } from './http/errors.js';
import { DomainError } from './domain/errors.js';
import { ApiKeyAuthenticator } from './http/auth.js';
import { createRateLimitGate, EXPOSED_HEADERS, restCost, type RateLimitGate } from './rate-limit/index.js';
import { loadOpenApiDocument, loadOpenApiText, type CompiledOperation } from './rest/openapi.js';
import { createRestRouter, type RestGuard } from './rest/router.js';
import { petsDeprecations, petsRoutes } from './rest/pets.routes.js';
import { categoriesRoutes } from './rest/categories.routes.js';
import { storeRoutes } from './rest/store.routes.js';
import { accountsRoutes } from './rest/accounts.routes.js';
import { metaRoutes } from './rest/meta.routes.js';
import { eventsRoutes } from './rest/events.routes.js';
import { startOutboxUpkeep } from './events/outbox-upkeep.js';
import { startWebhookDispatcher } from './events/webhook-dispatcher.js';
import { EventStream } from './events/event-stream.js';
import { listenForEvents } from './events/outbox-notifier.js';
import { attachSubscriptionServer, type SubscriptionServer } from './graphql/subscriptions.server.js';
import { queryLimits } from './graphql/query-limits.js';
import { createGraphQLFacade } from './graphql/graphql.middleware.js';
import { docsRoutes } from './docs/docs.routes.js';
import { createLogger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { observeRequests } from './observability/request-observer.js';
import { instrumentGate } from './observability/gate.instrumentation.js';
import { operationLabelPlugin } from './observability/graphql-operation.plugin.js';

/** When GET /pets/{petId} was deprecated (the `Deprecation` header). */
const GET_PET_DEPRECATED_SINCE = new Date('2026-11-01T00:00:00Z');

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface App {
  koa: Koa;
  orm: Orm;
  gate: RateLimitGate;
  logger: Logger;
  metrics: Metrics;
  config: Config;
  /** Starts listening; port 0 picks a free port. Resolves with the base URL. */
  listen(port?: number, host?: string): Promise<{ url: string; server: Server }>;
  /** Readiness turns 503, in-flight requests finish (up to the grace period), then everything closes. */
  close(): Promise<void>;
}

export interface CreateAppOptions {
  logger?: Logger;
  /** Where the app's own logger (with its redaction) writes instead of stdout; tests read it. */
  logStream?: DestinationStream;
  /** Replaces the rate-limit gate. Only the benchmark does (bench/service-without-limiter.ts), to measure what the limiter costs. */
  gate?: RateLimitGate;
}

export async function createApp(config: Config, options: CreateAppOptions = {}): Promise<App> {
  // What assembly opened so far, closed again if a later step fails (else the process never exits).
  const opened: Array<() => Promise<unknown>> = [];
  try {
    return await assembleApp(config, options, (close) => opened.unshift(close));
  } catch (error) {
    for (const close of opened) await close().catch(() => undefined);
    throw error;
  }
}

async function assembleApp(config: Config, options: CreateAppOptions, opened: (close: () => Promise<unknown>) => void): Promise<App> {
  const logger = options.logger ?? createLogger(config, options.logStream);
  const orm = await createOrm(config);
  opened(() => orm.close(true));
  if (config.migrateOnStart) await migrate(orm, () => bootstrap(orm, config));
  let shuttingDown = false;
  const metrics = createMetrics({
    pool: () => poolState(orm),
    limiterStore: () => rawGate.ready(),
    shuttingDown: () => shuttingDown,
  });
  const rawGate = options.gate ?? (await createRateLimitGate(config, { logger, onBan: (plan) => metrics.keyBanned(plan) }));
  const gate = instrumentGate(rawGate, metrics);
  if (!options.gate) opened(() => rawGate.close());
  const authenticator = new ApiKeyAuthenticator(orm);
  const stopOutboxUpkeep = startOutboxUpkeep(orm, logger);
  opened(stopOutboxUpkeep);
  const webhooks = startWebhookDispatcher(orm, logger, config.webhooks);
  opened(() => webhooks.stop());
  const eventStream = new EventStream(orm, logger, config.subscriptionPollMs);
  opened(() => eventStream.close());
  // PostgreSQL: committed events wake the outbox readers of every instance at once (they poll otherwise).
  const notifier =
    config.database.kind === 'postgresql'
      ? listenForEvents(config.database.url, logger, () => {
          eventStream.wake();
          webhooks.wake();
        })
      : undefined;
  if (notifier) opened(() => notifier.close());

  const koa = new Koa({ proxy: config.trustProxy });
  koa.silent = true;

  // Outermost: times every request, then logs one line and records it in the metrics.
  koa.use(observeRequests({ logger, metrics }));

  // Request id, and the error envelope for everything below.
  koa.use(async (ctx: Context, next: Next) => {
    const state = ctx.state as AppState;
    const given = ctx.get('x-request-id');
    state.requestId = REQUEST_ID.test(given) ? given : randomUUID();
    ctx.set('X-Request-Id', state.requestId);
    try {
      await next();
    } catch (error) {
      const { body, headers, expected } = toErrorBody(error, state.requestId);
      state.errorCode = body.code;
      if (!expected) logger.error({ err: error, requestId: state.requestId, route: state.route }, 'unexpected error');
      ctx.set(headers);
      ctx.status = body.status;
      ctx.body =
        state.facade === 'graphql'
          ? { errors: [{ message: body.message, extensions: { code: body.code, status: body.status, requestId: body.requestId, details: body.details } }] }
          : body;
    }
  });

  // Security headers. API responses are JSON and may not be framed or run anything; `/docs` sets its
  // own CSP, and Apollo's landing pages at GET /graphql (the Sandbox outside production, a notice in
  // production) load Apollo's scripts from its CDN, so they get no CSP (JSON answers need none).
  const securityHeaders = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  });
  const sandboxHeaders = helmet({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'cross-origin' } });
  koa.use((ctx: Context, next: Next) =>
    ctx.path === '/graphql' && ctx.method === 'GET' ? sandboxHeaders(ctx, next) : securityHeaders(ctx, next),
  );

  koa.use(
    cors({
      origin: (ctx: Context) => {
        const origin = ctx.get('origin');
        return config.corsOrigins.includes('*') || config.corsOrigins.includes(origin) ? origin : '';
      },
      exposeHeaders: EXPOSED_HEADERS,
      allowHeaders: ['Content-Type', 'X-API-Key', 'Idempotency-Key', 'X-Request-Id', 'Apollo-Require-Preflight', 'X-Apollo-Operation-Name', 'Apollographql-Client-Name', 'Apollographql-Client-Version'],
      allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
      maxAge: 600,
    }),
  );

  // Health: public, not rate limited.
  koa.use(async (ctx: Context, next: Next) => {
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/metrics' && config.metricsEnabled) {
      const { contentType, body } = await metrics.render();
      ctx.set('Cache-Control', 'no-store');
      ctx.type = contentType;
      ctx.body = body;
      return;
    }
    if (ctx.path === '/readyz') {
      const checks = await readiness();
      const ok = !shuttingDown && checks.database && checks.limiter;
      ctx.status = ok ? 200 : 503;
      ctx.body = { status: shuttingDown ? 'shutting-down' : ok ? 'ready' : 'unavailable', checks };
      return;
    }
    return next();
  });

  async function readiness() {
    const database = await orm.em
      .getConnection()
      .execute('select 1')
      .then(() => true)
      .catch(() => false);
    const limiter = await gate.ready().catch(() => ({ ok: false, store: 'unknown', redis: undefined }));
    return { database, limiter: limiter.ok, limiterStore: limiter.store, ...(limiter.redis ? { redis: limiter.redis } : {}) };
  }

  // Per request: a lazily created EntityManager fork and domain services, and who is calling.
  koa.use(async (ctx: Context, next: Next) => {
    const state = ctx.state as AppState;
    let domain: Domain | undefined;
    Object.defineProperty(state, 'domain', { get: () => (domain ??= createDomain(orm.em.fork(), gate.bans, config.webhooks)), configurable: true });
    const key = ctx.get('x-api-key');
    if (!key) state.authFailure = 'UNAUTHENTICATED';
    // An address refused for failed authentication gets no answer about any key, valid or not.
    else if (gate.isAddressBlocked(ctx.ip)) state.authFailure = 'INVALID_API_KEY';
    else {
      const actor = await authenticator.authenticate(key);
      if (actor) state.actor = actor;
      else state.authFailure = 'INVALID_API_KEY';
    }
    await next();
  });

  const guard: RestGuard = async (ctx: Context, op: CompiledOperation | null) => {
    const state = ctx.state as AppState;
    if (state.actor) {
      ctx.set(await gate.charge(state.actor, restCost(op)));
      return;
    }
    const failed = state.authFailure === 'INVALID_API_KEY';
    ctx.set(await gate.anonymous(ctx.ip, failed));
    if (op && !op.public) throw authError(state.authFailure);
  };

  // The GraphQL facade at /graphql: the same domain, keys, limiter and error codes as REST (src/graphql).
  const graphql = await createGraphQLFacade({
    config,
    gate,
    logger,
    onAccountsChanged: () => authenticator.forget(),
    plugins: [operationLabelPlugin()],
  });
  opened(() => graphql.stop());
  koa.use(graphql.middleware);

  const openApiText = loadOpenApiText();
  const openApiDoc = loadOpenApiDocument(openApiText);
  koa.use(
    createRestRouter(
      openApiDoc,
      {
        ...petsRoutes({ sunset: config.petsGetSunset }),
        ...categoriesRoutes(),
        ...storeRoutes(),
        ...accountsRoutes({ gate, onAccountsChanged: () => authenticator.forget() }),
        ...metaRoutes(openApiText, openApiDoc),
        ...eventsRoutes(),
      },
      guard,
      petsDeprecations({ sunset: config.petsGetSunset, deprecatedSince: GET_PET_DEPRECATED_SINCE }),
    ),
  );

  // The API reference: public, no key (src/docs).
  koa.use(docsRoutes());

  // Anything else: the error envelope's 404.
  koa.use(async (ctx: Context) => {
    // Under /graphql every answer carries the rate-limit headers (SPEC §6), unknown paths included.
    if (ctx.path.startsWith('/graphql/')) {
      (ctx.state as AppState).facade = 'graphql';
      await guard(ctx, null);
    }
    throw new DomainError('NOT_FOUND', `Nothing at ${ctx.path}. The API is under /v1 and /graphql; docs at /docs.`);
  });

  let server: Server | undefined;
  let subscriptions: SubscriptionServer | undefined;
  let closing: Promise<void> | undefined;
  return {
    koa,
    orm,
    gate,
    logger,
    metrics,
    config,
    async listen(port = config.port, host = config.host) {
      server = createServer(
        {
          requestTimeout: config.requestTimeoutMs,
          headersTimeout: config.headersTimeoutMs,
          // How often Node checks those timeouts (default 30 s, too coarse for a short headersTimeout).
          connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(config.headersTimeoutMs / 4))),
          // Idle keep-alive sockets stay open longer than a load balancer's idle timeout (often 60 s), so
          // the server never closes a socket a client or proxy is about to reuse (Node's 5 s default
          // races with them and surfaces as reset connections).
          keepAliveTimeout: 65_000,
        },
        koa.callback(),
      );
      server.keepAliveTimeout = config.keepAliveTimeoutMs;
      // GraphQL subscriptions: graphql-ws over a WebSocket upgrade of /graphql (src/graphql/subscriptions.server.ts).
      subscriptions = attachSubscriptionServer(server, {
        schema: graphql.schema,
        orm,
        gate,
        bans: gate.bans,
        webhooks: config.webhooks,
        events: eventStream,
        authenticate: (key) => authenticator.authenticate(key),
        logger,
        ...queryLimits(config.graphqlLimits),
      });
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(port, host, () => resolve());
      });
      const address = server.address() as AddressInfo;
      const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
      return { url: `http://${shownHost}:${address.port}`, server };
    },
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        await subscriptions?.close();
        if (server) {
          const s = server;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(() => s.closeAllConnections(), config.shutdownGraceMs);
            timer.unref();
            s.close(() => {
              clearTimeout(timer);
              resolve();
            });
            s.closeIdleConnections();
            logger.info({ graceMs: config.shutdownGraceMs }, 'shutdown: readiness 503, no new connections, draining in-flight requests');
          });
        }
        await graphql.stop();
        await stopOutboxUpkeep();
        await notifier?.close();
        await webhooks.stop();
        await eventStream.close();
        await gate.close();
        await orm.close(true);
      })();
      return closing;
    },
  };
}

/** The knex (tarn) pool behind the ORM, for the metrics; undefined if the driver has none. */
function poolState(orm: Orm) {
  const pool = (orm.em.getConnection() as unknown as { getKnex?(): { client?: { pool?: TarnPool } } }).getKnex?.().client?.pool;
  return pool ? { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() } : undefined;
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

function authError(failure: AppState['authFailure']) {
  return failure === 'INVALID_API_KEY'
    ? new DomainError('INVALID_API_KEY', 'The API key is unknown or revoked.')
    : new DomainError('UNAUTHENTICATED', 'Send your API key in the X-API-Key header.');
}

/** First start on an empty database: the staff key (printed once) and, outside production, demo data. */
async function bootstrap(orm: Orm, config: Config) {
  const em = orm.em.fork();
  const accounts = new AccountsService(em);
  const adminKey = await accounts.bootstrapAdmin(config.adminApiKey);
  if (!adminKey) return;
  if (config.adminApiKey) config.announce('Created the staff account with the key from ADMIN_API_KEY.');
  else config.announce(`Created the staff account. Its API key (shown once, keep it safe):\n  X-API-Key: ${adminKey}`);
  if (config.seedDemo) {
    await seedDemoCatalog(em);
    const demoKey = await accounts.createDemoCustomer();
    config.announce(`Seeded demo categories and pets, and a demo customer (plan free). Its API key:\n  X-API-Key: ${demoKey}`);
  }
}
