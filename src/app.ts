/**
 * Composition root: builds the ORM, the services, the limiter, Koa and the GraphQL facade, and wires the request walk
 * (src/http/request-walk.ts) and the lifecycle (src/lifecycle.ts: each resource recorded as it opens,
 * closed by one routine). Only wires: no request passes back into this file. Each `createApp` is isolated.
 */
import type { Config } from './config.js';
import { createOrm, migrate, poolState } from './db/orm.js';
import { bootstrap } from './bootstrap.js';
import { createReader } from './db/reader.js';
import { createWriter } from './db/writer.js';
import { domainFactory, keyRegistry } from './domain/index.js';
import { categoryNameCollisions } from './domain/categories.service.js';
import { ApiKeyAuthenticator } from './http/authentication.js';
import { clientAddressResolver } from './http/client-address.js';
import { originAllowed } from './http/cors.js';
import { requestPipeline } from './app.pipeline.js';
import { serverRefusals } from './http/refusals.js';
import { createRateLimitGate, createSubscriptionSlots } from './rate-limit/index.js';
import { createGraphQLFacade } from './graphql/server/graphql.facade.js';
import { checkManifestForm } from './graphql/server/trusted-documents.js';
import { createLogger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { instrumentGate } from './observability/gate.instrumentation.js';
import { createHttpServer } from './server.js';
import { startEventWorkers } from './events/workers.js';
import { commitChannels } from './events/outbox-notifier.js';
import { keyChanges } from './events/key-changes.js';
import { attachSubscriptionServer, type SubscriptionServer } from './graphql/server/subscriptions.server.js';
import { Lifecycle } from './lifecycle.js';
import type { App, CreateAppOptions } from './app.types.js';

export type { App, CreateAppOptions } from './app.types.js';

export async function createApp(config: Config, options: CreateAppOptions = {}): Promise<App> {
  const lifecycle = new Lifecycle();
  // A step that fails closes what opened before it (else the process never exits).
  return assembleApp(config, options, lifecycle).catch(async (error: unknown) => {
    await lifecycle.close().catch(() => undefined);
    throw error;
  });
}

async function assembleApp(config: Config, options: CreateAppOptions, lifecycle: Lifecycle): Promise<App> {
  const logger = options.logger ?? createLogger(config, options.logStream);
  const announce = options.announce ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (config.trustedDocuments.file) checkManifestForm(config.trustedDocuments.file);
  const orm = await createOrm(config);
  lifecycle.opened('the database', () => orm.close(true));
  if (config.migrateOnStart) await migrate(orm, () => bootstrap(orm, config, announce));
  // Reported at every start until renamed: the migration to case-folded names kept these rather than fail.
  for (const collision of await categoryNameCollisions(orm.em.fork()).catch(() => [])) {
    logger.warn(collision, "categories: this name equals another category's ignoring case; rename or merge it");
  }

  let subscriptions: SubscriptionServer | undefined;
  const metrics = createMetrics({
    pool: () => poolState(orm),
    limiterStore: () => rawGate.ready(),
    shuttingDown: lifecycle.isStopping,
    subscriptions: () => subscriptions?.active() ?? 0,
  });
  // The hottest reads, as plain SQL on prepared statements outside the ORM (src/db/reader.ts).
  const reader = await createReader(orm, config.database);
  lifecycle.opened('the reader', () => reader.close());
  // The accounts outside any request: the edge's key checks, and the bans the limiter records in the database.
  const keys = keyRegistry(orm.em, reader);
  // Revocations, bans and account changes, told to every instance (src/events/key-changes.ts).
  const keyEvents = keyChanges(config.database, logger);
  lifecycle.opened('the key changes', () => keyEvents.close());
  const recordBan = async (keyId: number, until: Date) => {
    await keys.recordBan(keyId, until);
    keyEvents.announce();
  };
  const rawGate =
    options.gate ??
    (await createRateLimitGate(config, { logger, windows: options.windows, onBan: (plan) => metrics.keyBanned(plan), recordBan }));
  if (!options.gate) lifecycle.opened('the limiter store', () => rawGate.close());
  const gate = instrumentGate(rawGate, metrics);

  // The domain tells the authenticator when a key's account changed, whichever facade changed it.
  const authenticator = new ApiKeyAuthenticator(keys);
  keyEvents.onChange(authenticator.forget);
  // Commits wake the event workers; on PostgreSQL the notifier tells the other instances (it closes after the drain).
  const { commits, notifier } = commitChannels(orm, config.database, logger);
  if (notifier) lifecycle.opened('the outbox notifier', () => notifier.close());
  const domain = domainFactory(orm.em, {
    reader,
    writer: createWriter(orm, commits.committed),
    outbox: options.outbox ?? true,
    bans: gate.bans,
    onAccountsChanged: keyEvents.announce,
    // An idempotency claim whose request died (crash, kill, cut off at shutdown) frees its key after the request timeout.
    idempotencyClaimMs: config.requestTimeoutMs || undefined,
    webhooks: config.webhooks,
  });

  // Events (src/events): the outbox's purge, the webhook worker, the reader behind GraphQL subscriptions.
  const events = startEventWorkers(orm, reader, logger, config, metrics, commits, notifier);
  lifecycle.opened('the event workers', () => events.stop(), { intake: true });
  // The plan caps' subscription slots: in Redis when it is configured, so a cap holds across instances.
  const subscriptionSlots = await createSubscriptionSlots({
    redisUrl: config.redisUrl,
    keyPrefix: config.rateLimitKeyPrefix,
    leaseMs: config.subscriptionLeaseMs,
    commandTimeoutMs: config.redisCommandTimeoutMs,
    logger,
  });
  lifecycle.opened('the subscription slots', () => subscriptionSlots.close());

  const graphql = await createGraphQLFacade({ config, gate, logger, plugins: options.graphqlPlugins });
  lifecycle.opened('Apollo Server', () => graphql.stop());

  const { koa, walk, errorFormats } = requestPipeline({ config, orm, gate, logger, metrics, lifecycle, authenticator, domain, graphql });

  const addressOf = clientAddressResolver(config.trustProxy);
  const refusals = serverRefusals(errorFormats, (req) => gate.addressHeaders(addressOf(req)));
  const server = createHttpServer(koa.callback(), config, logger, refusals);
  // GraphQL subscriptions: graphql-ws over a WebSocket upgrade of /graphql (src/graphql/server/subscriptions.server.ts).
  subscriptions = attachSubscriptionServer(server.node, {
    schema: graphql.schema,
    gate,
    domain,
    events: events.eventStream,
    slots: subscriptionSlots,
    authenticator,
    clientAddress: addressOf,
    logger,
    preparation: graphql.preparation,
    sockets: config.subscriptionSockets,
    originAllowed: originAllowed(config.corsOrigins),
  });
  lifecycle.opened('the GraphQL subscriptions', () => subscriptions?.close(), { intake: true });
  // A revoked or banned key's subscriptions end on every instance (and free their plan slots).
  keyEvents.onChange(() => void subscriptions?.recheckKeys());
  return {
    ...{ koa, orm, reader, gate, logger, metrics, config, walk: walk.plan },
    shutdownOrder: () => lifecycle.order(),
    async listen(port = config.port, host = config.host) {
      const listening = await server.listen(port, host);
      lifecycle.opened('the HTTP drain', () => server.close(), { intake: true });
      return listening;
    },
    close: () => lifecycle.close(),
  };
}
