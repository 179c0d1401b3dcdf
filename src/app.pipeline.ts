/**
 * The request walk the composition root (src/app.ts) mounts on Koa: the edge steps every request takes, then one
 * route per path (health, GraphQL, REST, docs, the offline explorer), then 404. Only wires what it is handed.
 */
import Koa from 'koa';
import type { Config } from './config.js';
import { databaseReadiness, type Orm } from './db/orm.js';
import type { Domain } from './domain/index.js';
import { docsRoutes } from './docs/docs.routes.js';
import { graphiqlRoutes } from './docs/graphiql.routes.js';
import { toGraphQLErrorBody } from './graphql/server/error.mapping.js';
import { GRAPHQL_MEDIA_TYPES } from './graphql/server/koa.integration.js';
import { GRAPHQL_PATH, type GraphQLFacade } from './graphql/server/graphql.facade.js';
import { type ApiKeyAuthenticator, authentication } from './http/authentication.js';
import { clientAddress } from './http/client-address.js';
import { corsPolicy } from './http/cors.js';
import { errorEnvelope, type ErrorFormats } from './http/error-envelope.js';
import { HEALTH_PATHS, healthRoutes } from './http/health.routes.js';
import { notFoundHandler } from './http/not-found.js';
import { requestId } from './http/request-id.js';
import { observeRequests } from './http/request-observer.js';
import { requestWalk, route, step } from './http/request-walk.js';
import { securityHeaders } from './http/security-headers.js';
import type { Lifecycle } from './lifecycle.js';
import type { Metrics } from './observability/metrics.js';
import type { Logger } from 'pino';
import type { RateLimitGate } from './rate-limit/index.js';
import { restApi } from './rest/rest.api.js';

export interface PipelineParts {
  config: Config;
  orm: Orm;
  gate: RateLimitGate;
  logger: Logger;
  metrics: Metrics;
  lifecycle: Lifecycle;
  authenticator: ApiKeyAuthenticator;
  domain: () => Domain;
  graphql: GraphQLFacade;
}

export function requestPipeline({ config, orm, gate, logger, metrics, lifecycle, authenticator, domain, graphql }: PipelineParts) {
  // How an error is written per facade (REST's shape is the default): in Koa, and for what the server answers itself.
  const errorFormats: ErrorFormats = { renderers: { graphql: toGraphQLErrorBody }, mediaTypes: { graphql: GRAPHQL_MEDIA_TYPES } };
  const koa = Object.assign(new Koa({ proxy: config.trustProxy !== null }), { silent: true });
  const authenticate = step('authentication', authentication({ authenticator, gate, domain }));
  const walk = requestWalk(
    [
      step('client address', clientAddress(config.trustProxy)),
      step('observer', observeRequests({ logger, metrics })),
      step('request id', requestId()),
      step('error envelope', errorEnvelope({ logger, formats: errorFormats })),
      step('security headers', securityHeaders()),
      step('CORS', corsPolicy(config.corsOrigins, gate)),
    ],
    [
      route(
        HEALTH_PATHS,
        step(
          'health routes',
          healthRoutes({
            database: databaseReadiness(orm),
            limiter: gate,
            shuttingDown: lifecycle.isStopping,
            metrics: config.metricsEnabled ? metrics : undefined,
          }),
        ),
      ),
      route([GRAPHQL_PATH], authenticate, step('GraphQL facade', graphql.middleware)),
      route(['/v1'], authenticate, step('REST facade', restApi({ config, gate }))),
      route(['/docs'], step('docs', docsRoutes({ explorers: config.env !== 'production' }))),
      // The offline GraphQL explorer, outside production like the Sandbox (src/docs/graphiql.routes.ts).
      ...(config.env !== 'production' ? [route(['/graphiql'], step('GraphiQL', graphiqlRoutes()))] : []),
    ],
    step('404', notFoundHandler),
  );
  koa.use(walk.middleware);
  return { koa, walk, errorFormats };
}
