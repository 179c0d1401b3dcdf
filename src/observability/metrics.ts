/**
 * Prometheus metrics of one app (`GET /metrics`, docs/OPERATIONS.md). Every app has its own Registry (no
 * module-level singletons), so tests run several apps in one process.
 *
 * Label values are bounded: the REST route template (never the raw path), the GraphQL operation type
 * and root field (never the client-chosen operation name), the HTTP status and the plan.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface RequestLabels {
  facade: string;
  operation: string;
  status: number;
}

export interface PoolState {
  used: number;
  free: number;
  pending: number;
}

export interface MetricsSources {
  /** The database connection pool, if the driver exposes one. */
  pool(): PoolState | undefined;
  /** The limiter store: which one, and for Redis whether it answers. */
  limiterStore(): Promise<{ store: 'memory' | 'redis'; redis?: 'up' | 'down' }>;
  shuttingDown(): boolean;
  /** GraphQL subscriptions open on this instance. */
  subscriptions?(): number;
}

export interface Metrics {
  registry: Registry;
  observeRequest(labels: RequestLabels, seconds: number): void;
  /** A request refused by the rate limiter (`RATE_LIMITED` or `API_KEY_BANNED`); plan `anonymous` for the per-address limiter. */
  rateLimitRefused(plan: string, code: string): void;
  /** A key that has just been banned. */
  keyBanned(plan: string): void;
  /** A webhook attempt's outcome; for a success, the seconds from the event's commit to the receiver's answer. */
  webhookAttempt(outcome: 'succeeded' | 'failed', lagSeconds?: number): void;
  /** An endpoint disabled after its retry schedule was spent. */
  webhookEndpointDisabled(): void;
  /** The Prometheus text exposition and its content type. */
  render(): Promise<{ contentType: string; body: string }>;
}

/** Seconds: from a cheap read to a slow write under contention. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * How often the event-loop-lag monitor (`nodejs_eventloop_lag_*`) samples, in ms. prom-client's default, 10,
 * wakes an idle process 100 times a second, most of an idle service's cost (`npm run bench -- --idle`). At 100 ms a stall of 100 ms or more is always seen, a shorter one when it spans a sample.
 */
const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

  // prom-client's own Histogram: each observation joins the label values into a key and looks it up.
  const durations = new Histogram({
    name: 'petstore_http_request_duration_seconds',
    help: 'Time from the first byte of the request to the response, by facade, operation and status.',
    labelNames: ['facade', 'operation', 'status'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });
  const durationCount = 'petstore_http_request_duration_seconds_count';
  new Counter({
    name: 'petstore_http_requests_total',
    help: 'HTTP requests answered, by facade (rest, graphql, meta), operation and status.',
    labelNames: ['facade', 'operation', 'status'] as const,
    registers: [registry],
    // Every answered request is one observation of the histogram: read from its counts when scraped, not counted again.
    async collect() {
      const { values } = await durations.get();
      this.reset();
      for (const value of values) if (value.metricName === durationCount) this.inc(value.labels, value.value);
    },
  });
  const refusals = new Counter({
    name: 'petstore_rate_limit_refusals_total',
    help: 'Requests refused by the rate limiter, by plan and code (RATE_LIMITED, API_KEY_BANNED).',
    labelNames: ['plan', 'code'] as const,
    registers: [registry],
  });
  const bans = new Counter({
    name: 'petstore_rate_limit_bans_total',
    help: 'API keys banned for sending while rate limited, by plan.',
    labelNames: ['plan'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'petstore_db_pool_connections',
    help: 'Database pool connections by state (used, free, pending acquires).',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      const pool = sources.pool();
      if (!pool) return;
      this.set({ state: 'used' }, pool.used);
      this.set({ state: 'free' }, pool.free);
      this.set({ state: 'pending' }, pool.pending);
    },
  });
  new Gauge({
    name: 'petstore_limiter_store_up',
    help: 'Whether the rate-limit store answers (1) or the in-memory insurance limiters are serving (0), by store.',
    labelNames: ['store'] as const,
    registers: [registry],
    async collect() {
      const state = await sources.limiterStore().catch(() => ({ store: 'redis' as const, redis: 'down' as const }));
      this.set({ store: state.store }, state.store === 'memory' || state.redis === 'up' ? 1 : 0);
    },
  });
  const webhookAttempts = new Counter({
    name: 'petstore_webhook_attempts_total',
    help: 'Webhook delivery attempts made by this instance, by outcome (succeeded: a 2xx answer; failed: anything else).',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookLag = new Histogram({
    name: 'petstore_webhook_delivery_lag_seconds',
    help: "From an event's commit to the receiver's 2xx answer, for deliveries that succeeded (retries included).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600, 86_400],
    registers: [registry],
  });
  const webhookDisabled = new Counter({
    name: 'petstore_webhook_endpoints_disabled_total',
    help: 'Webhook endpoints disabled after their retry schedule was spent.',
    registers: [registry],
  });
  new Gauge({
    name: 'petstore_graphql_subscriptions',
    help: 'GraphQL subscriptions open on this instance (graphql-ws).',
    registers: [registry],
    collect() {
      this.set(sources.subscriptions?.() ?? 0);
    },
  });
  new Gauge({
    name: 'petstore_shutting_down',
    help: '1 once a graceful shutdown has started (readiness is 503).',
    registers: [registry],
    collect() {
      this.set(sources.shuttingDown() ? 1 : 0);
    },
  });

  return {
    registry,
    observeRequest(labels, seconds) {
      durations.observe(labels, seconds);
    },
    rateLimitRefused(plan, code) {
      refusals.inc({ plan, code });
    },
    keyBanned(plan) {
      bans.inc({ plan });
    },
    webhookAttempt(outcome, lagSeconds) {
      webhookAttempts.inc({ outcome });
      if (lagSeconds !== undefined) webhookLag.observe(lagSeconds);
    },
    webhookEndpointDisabled() {
      webhookDisabled.inc();
    },
    async render() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
