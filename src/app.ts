/**
 * Composition root: the one place that builds the ORM, the services, the limiter, Koa and Apollo, and
 * wires them in request order (observer → HTTP pipeline → facade → domain → db). It only wires: every
 * middleware lives in its own module, and no request passes back into this file.
 * `createApp(config)` returns an isolated app, so tests run many side by side on port 0.
 */
import type { Server } from 'node:http';
import Koa from 'koa';
import type { DestinationStream, Logger } from 'pino';
import type { Config } from './config.js';
import { createOrm, migrate, poolState, type Orm } from './db/orm.js';
import { bootstrap, type Announce } from './bootstrap.js';
import { sqliteWritable } from './db/sqlite-resilience.js';
import { createReader } from './db/reader.js';
import { createWriter } from './db/writer.js';
import type { SqlReader } from './domain/reader.js';
import { domainFactory, AccountsService } from './domain/index.js';
import { ApiKeyAuthenticator, authentication } from './http/authentication.js';
import { clientAddress, clientAddressResolver } from './http/client-address.js';
import { corsPolicy } from './http/cors.js';
import { errorEnvelope } from './http/error-envelope.js';
import { healthRoutes } from './http/health.routes.js';
import { parserRefusal, shutdownRefusal } from './http/refusals.js';
import { requestId } from './http/request-id.js';
import { securityHeaders } from './http/security-headers.js';
import { HttpError } from './http/errors.js';
import { createRateLimitGate, createSubscriptionSlots, type RateLimitGate } from './rate-limit/index.js';
import { restApi } from './rest/rest.api.js';
import { createGraphQLFacade } from './graphql/server/graphql.facade.js';
import { toGraphQLErrorBody } from './graphql/server/error.mapping.js';
import { docsRoutes } from './docs/docs.routes.js';
import { graphiqlRoutes } from './docs/graphiql.routes.js';
import { createLogger } from './observability/logger.js';
import { createMetrics, type Metrics } from './observability/metrics.js';
import { observeRequests } from './observability/request-observer.js';
import { instrumentGate } from './observability/gate.instrumentation.js';
import { createHttpServer } from './server.js';
import { startEventWorkers } from './events/workers.js';
import { attachSubscriptionServer, type SubscriptionServer } from './graphql/server/subscriptions.server.js';

export interface App {
  koa: Koa;
  orm: Orm;
  /** The plain-SQL reader the domain's hot reads use. */
  reader: SqlReader;
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
  /** Where startup messages (the generated keys) go; default stdout. Tests capture them. */
  announce?: Announce;
  /** Rate-limit window lengths in seconds (default 60 and 86,400); only tests shorten them. */
  windows?: { minute: number; day: number };
  /** Replaces the rate-limit gate. Only the benchmark does (bench/service-without-limiter.ts), to measure what the limiter costs. */
  gate?: RateLimitGate;
  /** false: the store writes no events. Only the benchmark does (bench/service-without-outbox.ts), to measure what the outbox costs an order. */
  outbox?: false;
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
  const announce = options.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  const orm = await createOrm(config);
  opened(() => orm.close(true));
  if (config.migrateOnStart) await migrate(orm, () => bootstrap(orm, config, announce));

  let shuttingDown = false;
  let subscriptions: SubscriptionServer | undefined;
  const metrics = createMetrics({
    pool: () => poolState(orm),
    limiterStore: () => rawGate.ready(),
    shuttingDown: () => shuttingDown,
    subscriptions: () => subscriptions?.active() ?? 0,
  });
  const rawGate =
    options.gate ??
    (await createRateLimitGate(config, {
      logger,
      windows: options.windows,
      onBan: (plan) => metrics.keyBanned(plan),
      // The database holds the ban too (the key's bannedUntil): it outlives a Redis restart.
      recordBan: (keyId, until) => new AccountsService(orm.em.fork()).recordBan(keyId, until),
    }));
  if (!options.gate) opened(() => rawGate.close());
  const gate = instrumentGate(rawGate, metrics);

  // The domain tells the authenticator when a key's account changed, whichever facade changed it.
  const authenticator = new ApiKeyAuthenticator({
    lookup: (key) => new AccountsService(orm.em.fork()).authenticate(key),
    activeKeyHashes: () => new AccountsService(orm.em.fork()).activeKeyHashes(),
  });
  // The hottest reads, as plain SQL on prepared statements outside the ORM (src/db/reader.ts).
  const reader = await createReader(orm, config.database);
  opened(async () => reader.close());
  const domain = domainFactory(orm.em, {
    reader,
    writer: createWriter(orm),
    outbox: options.outbox ?? true,
    bans: gate.bans,
    onAccountsChanged: () => authenticator.forget(),
    // An idempotency claim whose request died (crash, kill, cut off at shutdown) frees its key after the request timeout.
    idempotencyClaimMs: config.requestTimeoutMs || undefined,
    webhooks: config.webhooks,
  });

  // Events (src/events): the outbox's purge, the webhook worker, the reader behind GraphQL subscriptions.
  const events = startEventWorkers(orm, logger, config, metrics);
  opened(() => events.stop());
  // The plan caps' subscription slots: in Redis when it is configured, so a cap holds across instances.
  const subscriptionSlots = await createSubscriptionSlots({
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimitKeyPrefix,
    leaseMs: config.subscriptionLeaseMs,
    logger,
  });
  opened(() => subscriptionSlots.close());

  const graphql = await createGraphQLFacade({ config, gate, logger });
  opened(() => graphql.stop());

  // How an error is written per facade (REST's shape is the default): in Koa, and for what the server answers itself.
  const errorRenderers = { graphql: toGraphQLErrorBody };
  const koa = new Koa({ proxy: config.trustProxy !== null });
  koa.silent = true;
  koa.use(clientAddress(config.trustProxy));
  koa.use(observeRequests({ logger, metrics }));
  koa.use(requestId());
  koa.use(errorEnvelope({ logger, renderers: errorRenderers }));
  koa.use(securityHeaders());
  koa.use(corsPolicy(config.corsOrigins));
  koa.use(
    healthRoutes({
      database: () => orm.em.getConnection().execute('select 1').then(() => sqliteWritable(orm)),
      limiter: () => gate.ready(),
      shuttingDown: () => shuttingDown,
      metrics: config.metricsEnabled ? () => metrics.render() : undefined,
    }),
  );
  koa.use(authentication({ authenticator, gate, domain }));
  koa.use(graphql.middleware);
  koa.use(restApi({ config, gate }));
  koa.use(docsRoutes());
  // The offline GraphQL explorer, outside production like the Sandbox (src/docs/graphiql.routes.ts).
  if (config.env !== 'production') koa.use(graphiqlRoutes());
  koa.use((ctx) => {
    throw new HttpError('NOT_FOUND', `Nothing at ${ctx.path}. The API is under /v1 and /graphql; docs at /docs.`);
  });

  const server = createHttpServer(koa.callback(), config, logger, {
    parser: (errorCode, received) => parserRefusal(errorCode, received, errorRenderers),
    shutdown: (requestId, path) => shutdownRefusal(requestId, path, errorRenderers),
  });
  let closing: Promise<void> | undefined;
  return {
    koa,
    orm,
    reader,
    gate,
    logger,
    metrics,
    config,
    async listen(port = config.port, host = config.host) {
      const listening = await server.listen(port, host);
      // GraphQL subscriptions: graphql-ws over a WebSocket upgrade of /graphql (src/graphql/server/subscriptions.server.ts).
      subscriptions = attachSubscriptionServer(listening.server, {
        schema: graphql.schema,
        gate,
        domain,
        events: events.eventStream,
        slots: subscriptionSlots,
        authenticator,
        clientAddress: clientAddressResolver(config.trustProxy),
        logger,
        preparation: graphql.preparation,
        sockets: config.subscriptionSockets,
      });
      return listening;
    },
    close() {
      closing ??= (async () => {
        shuttingDown = true;
        await subscriptions?.close();
        await subscriptionSlots.close();
        await server.close();
        await graphql.stop();
        await events.stop();
        await gate.close();
        reader.close();
        await orm.close(true);
      })();
      return closing;
    },
  };
}
