/**
 * The one reader of `process.env`. Every key is parsed, validated and documented here (and in the
 * README's configuration table); an invalid value stops the start with a message naming the key.
 */
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const int = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be an ISO date such as 2027-06-30')
  // Date.parse rolls 2027-02-30 over to March 2nd: the date must read back unchanged.
  .refine((v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v), 'is not a real date');

const databaseUrl = z
  .string()
  .refine((v) => v.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(v), 'must start with sqlite: or postgres://');

const envSchema = z.object({
  PORT: int(0, 65535).default('3000'),
  HOST: z.string().min(1).default('0.0.0.0'),
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: databaseUrl.default('sqlite:./data/petstore.db'),
  DB_POOL_MAX: int(1, 200).default('10'),
  DB_STATEMENT_TIMEOUT_MS: int(0, 600_000).default('10000'),
  MIGRATE_ON_START: bool.default('true'),
  REDIS_URL: z
    .string()
    .refine((v) => /^rediss?:\/\//.test(v), 'must start with redis:// or rediss://')
    .optional(),
  ADMIN_API_KEY: z
    .string()
    .regex(/^psk_[A-Za-z0-9_-]{22,}$/, 'must look like psk_ followed by at least 22 url-safe characters')
    .optional(),
  SEED_DEMO: bool.optional(),
  PETS_GET_SUNSET: isoDate.default('2027-06-30'),
  BAN_THRESHOLD: int(1, 1_000_000).default('10'),
  BAN_SECONDS: int(1, 31_536_000).default('900'),
  AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default('30'),
  RATE_LIMIT_KEY_PREFIX: z.string().regex(/^[A-Za-z0-9:_-]{1,64}$/, 'must be 1..64 of A-Z a-z 0-9 : _ -').default('petstore'),
  // Apollo Studio, and the Sandbox embedded at GET /graphql (its iframe sends the requests from this origin).
  CORS_ORIGINS: z
    .string()
    .refine(
      (v) => v.split(',').map((o) => o.trim()).filter(Boolean).every((o) => o === '*' || /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(o)),
      'must be * or a comma list of origins such as https://app.example.com (scheme, host, optional port; no path)',
    )
    .default('https://studio.apollographql.com,https://sandbox.embed.apollographql.com'),
  GRAPHQL_INTROSPECTION: bool.optional(),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default('10000'),
  REQUEST_TIMEOUT_MS: int(0, 3_600_000).default('30000'),
  HEADERS_TIMEOUT_MS: int(1, 600_000).default('10000'),
  KEEP_ALIVE_TIMEOUT_MS: int(0, 600_000).default('65000'),
  METRICS_ENABLED: bool.default('true'),
  DB_BUSY_TIMEOUT_MS: int(0, 600_000).default('5000'),
  GRAPHQL_MAX_DEPTH: int(1, 100).default('8'),
  GRAPHQL_MAX_ALIASES: int(0, 1000).default('15'),
  GRAPHQL_MAX_TOKENS: int(10, 100_000).default('1000'),
  GRAPHQL_MAX_COST: int(1, 10_000_000).default('20000'),
  TRUST_PROXY: bool.default('false'),
  WEBHOOK_ALLOW_PRIVATE: bool.default('false'),
  WEBHOOK_RETRY_SCALE: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a positive number such as 1 or 0.001')
    .transform(Number)
    .pipe(z.number().positive().max(1000))
    .default('1'),
  WEBHOOK_POLL_MS: int(10, 60_000).default('200'),
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default('10000'),
  SUBSCRIPTION_POLL_MS: int(5, 60_000).default('50'),
});

export type Plan = 'free' | 'pro' | 'business' | 'enterprise';

export interface Config {
  port: number;
  host: string;
  env: 'development' | 'production' | 'test';
  logLevel: string;
  database: { kind: 'sqlite'; path: string; url: string } | { kind: 'postgresql'; url: string };
  dbPoolMax: number;
  dbStatementTimeoutMs: number;
  migrateOnStart: boolean;
  redisUrl?: string;
  adminApiKey?: string;
  seedDemo: boolean;
  petsGetSunset: Date;
  banThreshold: number;
  banSeconds: number;
  authFailuresPerMinute: number;
  /** Prefix of every limiter key in the store (Redis): instances of one deployment share it. */
  rateLimitKeyPrefix: string;
  corsOrigins: string[];
  introspection: boolean;
  shutdownGraceMs: number;
  /** Node's `server.requestTimeout` (whole request, 0 = none) and `headersTimeout` (ms). */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open; above a load balancer's idle timeout (often 60 s). */
  keepAliveTimeoutMs: number;
  /** Serve `GET /metrics` (Prometheus text). */
  metricsEnabled: boolean;
  /** SQLite `busy_timeout`: how long a write waits for another connection's lock before 503. */
  dbBusyTimeoutMs: number;
  /** GraphQL documents beyond these are refused (400) before anything executes. */
  graphqlLimits: { maxDepth: number; maxAliases: number; maxTokens: number; maxCost: number };
  trustProxy: boolean;
  /** Webhooks: allow http and private addresses; retry schedule factor; how often instances look for work; per-attempt timeout. */
  webhooks: { allowPrivate: boolean; retryScale: number; pollMs: number; timeoutMs: number };
  /** While GraphQL subscriptions are open, how often the instance reads new events from the outbox. */
  subscriptionPollMs: number;
  /** Window lengths in seconds; only tests shorten them. */
  windows: { minute: number; day: number };
  /** Where startup messages (the generated keys) go; tests capture them. */
  announce: (line: string) => void;
}

export class ConfigError extends Error {}

/** Parses an environment (default `process.env`) into a Config, or throws ConfigError naming every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const relevant: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') relevant[key] = value;
  }
  const parsed = envSchema.safeParse(relevant);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}=${JSON.stringify(relevant[String(i.path[0])] ?? '')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.REQUEST_TIMEOUT_MS > 0 && e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(`Invalid configuration:\n  HEADERS_TIMEOUT_MS=${JSON.stringify(String(e.HEADERS_TIMEOUT_MS))}: must not exceed REQUEST_TIMEOUT_MS (${e.REQUEST_TIMEOUT_MS})`);
  }
  const production = e.NODE_ENV === 'production';
  return {
    port: e.PORT,
    host: e.HOST,
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    database: e.DATABASE_URL.startsWith('sqlite:')
      ? { kind: 'sqlite', path: e.DATABASE_URL.slice('sqlite:'.length) || './data/petstore.db', url: e.DATABASE_URL }
      : { kind: 'postgresql', url: e.DATABASE_URL },
    dbPoolMax: e.DB_POOL_MAX,
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    migrateOnStart: e.MIGRATE_ON_START,
    redisUrl: e.REDIS_URL,
    adminApiKey: e.ADMIN_API_KEY,
    seedDemo: e.SEED_DEMO ?? !production,
    petsGetSunset: new Date(`${e.PETS_GET_SUNSET}T00:00:00Z`),
    banThreshold: e.BAN_THRESHOLD,
    banSeconds: e.BAN_SECONDS,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    rateLimitKeyPrefix: e.RATE_LIMIT_KEY_PREFIX,
    corsOrigins: e.CORS_ORIGINS.split(',').map((s) => s.trim()).filter(Boolean),
    introspection: e.GRAPHQL_INTROSPECTION ?? !production,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    metricsEnabled: e.METRICS_ENABLED,
    dbBusyTimeoutMs: e.DB_BUSY_TIMEOUT_MS,
    graphqlLimits: { maxDepth: e.GRAPHQL_MAX_DEPTH, maxAliases: e.GRAPHQL_MAX_ALIASES, maxTokens: e.GRAPHQL_MAX_TOKENS, maxCost: e.GRAPHQL_MAX_COST },
    trustProxy: e.TRUST_PROXY,
    subscriptionPollMs: e.SUBSCRIPTION_POLL_MS,
    webhooks: { allowPrivate: e.WEBHOOK_ALLOW_PRIVATE, retryScale: e.WEBHOOK_RETRY_SCALE, pollMs: e.WEBHOOK_POLL_MS, timeoutMs: e.WEBHOOK_TIMEOUT_MS },
    windows: { minute: 60, day: 86_400 },
    announce: (line) => process.stdout.write(`${line}\n`),
  };
}
