/** What `createApp` (src/app.ts) returns and takes. */
import type Koa from 'koa';
import type { DestinationStream, Logger } from 'pino';
import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import type { Announce } from './bootstrap.js';
import type { SqlReader } from './domain/reader.js';
import type { WalkPlan } from './http/request-walk.js';
import type { RateLimitGate } from './rate-limit/index.js';
import type { Metrics } from './observability/metrics.js';
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from './graphql/context.js';

export interface App {
  koa: Koa;
  orm: Orm;
  /** The plain-SQL reader the domain's hot reads use. */
  reader: SqlReader;
  gate: RateLimitGate;
  logger: Logger;
  metrics: Metrics;
  config: Config;
  /** The request walk as names (docs/ARCHITECTURE.md lists it; a test compares). */
  walk: WalkPlan;
  /** The order shutdown closes the resources in (intake together, then the rest in reverse). */
  shutdownOrder(): { intake: string[]; rest: string[] };
  /** Starts listening; port 0 picks a free port. Resolves with the base URL. */
  listen(port?: number, host?: string): Promise<{ url: string }>;
  /** Shutdown (src/lifecycle.ts): the intake stops together — HTTP drain, subscriptions, event workers — then the rest closes. */
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
  /** Replaces the rate-limit gate. Only the benchmark does (bench/service-variant.ts), to measure what the limiter costs. */
  gate?: RateLimitGate;
  /** false: the store writes no events. Only the benchmark does (bench/service-variant.ts), to measure what the outbox costs an order. */
  outbox?: false;
  /** More Apollo Server plugins for the GraphQL facade, after the service's own. Only tests add one (to count the requests Apollo serves). */
  graphqlPlugins?: ApolloServerPlugin<GraphQLContext>[];
}
