/**
 * The one reader of `process.env`. Every key is parsed, validated and documented here (and in
 * docs/CONFIGURATION.md's table); an invalid value stops the start with a message naming the key.
 */
import { z } from 'zod';
import proxyaddr from 'proxy-addr';

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

const int = (min: number, max: number) =>
  z.string().regex(/^\d+$/, 'must be a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be an ISO date such as 2027-06-30')
  // Date.parse rolls 2027-02-30 over to March 2nd: the date must read back unchanged.
  .refine(
    (v) => !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) && new Date(`${v}T00:00:00Z`).toISOString().startsWith(v),
    'is not a real date',
  );

/** Who may set the client address through `X-Forwarded-For`: a number of proxy hops, or the proxies themselves. */
export type TrustProxy = { hops: number } | { proxies: string[] } | null;

/**
 * TRUST_PROXY: `false` (the socket's address), a number of hops, or a comma list of proxy addresses
 * and CIDR ranges (proxy-addr's names loopback, linklocal, uniquelocal too). `true` is refused: it
 * would trust whatever a client writes in the left-most entry.
 */
const trustProxy = z.string().transform((v, ctx): TrustProxy => {
  const value = v.trim();
  if (value === 'false' || value === '0') return null;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops <= 32) return { hops };
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must be at most 32 proxy hops' });
    return z.NEVER;
  }
  if (['true', 'yes', '1'].includes(value.toLowerCase())) {
    ctx.addIssue({
      code: z.ZodIssueCode.custom,
      message:
        'true is not accepted (it would trust whatever a client writes in X-Forwarded-For): give the number of proxy hops in front of the service (e.g. 1) or the proxies as a CIDR list (e.g. 10.0.0.0/8,127.0.0.1)',
    });
    return z.NEVER;
  }
  const proxies = value.split(',').map((s) => s.trim());
  const bad = proxies.filter((p) => !validProxy(p));
  if (bad.length === 0) return { proxies };
  ctx.addIssue({
    code: z.ZodIssueCode.custom,
    message: `must be false, a number of proxy hops (e.g. 1) or a comma list of addresses/CIDR ranges (e.g. 10.0.0.0/8,127.0.0.1); not an address or range: ${bad.map((b) => JSON.stringify(b)).join(', ')}`,
  });
  return z.NEVER;
});

function validProxy(entry: string): boolean {
  if (!entry) return false;
  try {
    proxyaddr.compile(entry);
    return true;
  } catch {
    return false;
  }
}

/**
 * The randomness of a secret, estimated from its characters: length × the Shannon entropy of their
 * frequencies. It cannot prove randomness, only refuse the obviously weak: a random base64url string
 * of 32 characters scores about 145 bits (never below ~120: the estimate is capped by its length),
 * while `AAAA…`, `abcabc…` or a word padded with digits score far below 100.
 */
export function estimatedBits(secret: string): number {
  const counts = new Map<string, number>();
  for (const c of secret) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / secret.length) * Math.log2(n / secret.length);
  return perChar * secret.length;
}

const databaseUrl = z
  .string()
  .refine((v) => v.startsWith('sqlite:') || /^postgres(ql)?:\/\//.test(v), 'must start with sqlite: or postgres://');

const envSchema = z.object({
  PORT: int(0, 65535).default('3000'),
  HOST: z.string().min(1).default('0.0.0.0'),
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FLUSH_MS: int(0, 10_000).default('100'),
  DATABASE_URL: databaseUrl.default('sqlite:./data/petstore.db'),
  DB_POOL_MAX: int(1, 200).default('10'),
  DB_STATEMENT_TIMEOUT_MS: int(0, 600_000).default('10000'),
  MIGRATE_ON_START: bool.default('true'),
  DATABASE_CREATE: bool.default('false'),
  REDIS_URL: z
    .string()
    .refine((v) => /^rediss?:\/\//.test(v), 'must start with redis:// or rediss://')
    .optional(),
  // Never 0: ioredis would then wait forever, and a hung Redis would hang every request.
  REDIS_COMMAND_TIMEOUT_MS: int(10, 60_000).default('500'),
  ADMIN_API_KEY: z
    .string()
    .regex(
      /^psk_[A-Za-z0-9_-]{32,200}$/,
      'must look like psk_ followed by 32 to 200 url-safe characters (A-Z a-z 0-9 _ -), as a generated key does',
    )
    // 32 url-safe characters hold 192 bits when random; a patterned string (repeats, a word) is refused.
    .refine(
      (v) => estimatedBits(v.slice(4)) >= 100,
      "is too weak: its characters after psk_ score under 100 bits (length × the entropy of their frequencies; 32 random characters score about 145) (make one with: node -e \"console.log('psk_' + require('crypto').randomBytes(32).toString('base64url'))\")",
    )
    .optional(),
  SEED_DEMO: bool.optional(),
  PETS_GET_SUNSET: isoDate.default('2027-06-30'),
  BAN_THRESHOLD: int(1, 1_000_000).default('10'),
  BAN_SECONDS: int(1, 31_536_000).default('900'),
  AUTH_FAILURES_PER_MINUTE: int(1, 1_000_000).default('30'),
  RATE_LIMIT_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,64}$/, 'must be 1..64 of A-Z a-z 0-9 : _ -')
    .default('petstore'),
  // Apollo Studio, and the Sandbox embedded at GET /graphql (its iframe sends the requests from this origin).
  CORS_ORIGINS: z
    .string()
    .refine(
      (v) =>
        v
          .split(',')
          .map((o) => o.trim())
          .filter(Boolean)
          .every((o) => o === '*' || /^https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?$/.test(o)),
      'must be * or a comma list of origins such as https://app.example.com (scheme, host, optional port; no path)',
    )
    .default('https://studio.apollographql.com,https://sandbox.embed.apollographql.com'),
  GRAPHQL_INTROSPECTION: bool.optional(),
  GRAPHQL_EXECUTOR: z.enum(['jit', 'graphql-js']).default('jit'),
  GRAPHQL_TRUSTED_DOCUMENTS: z.string().min(1).optional(),
  GRAPHQL_TRUSTED_ONLY: bool.default('false'),
  SHUTDOWN_GRACE_MS: int(0, 600_000).default('10000'),
  REQUEST_TIMEOUT_MS: int(0, 3_600_000).default('30000'),
  HEADERS_TIMEOUT_MS: int(1, 600_000).default('10000'),
  KEEP_ALIVE_TIMEOUT_MS: int(0, 600_000).default('65000'),
  METRICS_ENABLED: bool.default('true'),
  DB_BUSY_TIMEOUT_MS: int(0, 600_000).default('2000'),
  GRAPHQL_MAX_DEPTH: int(1, 100).default('8'),
  GRAPHQL_MAX_ALIASES: int(0, 1000).default('15'),
  GRAPHQL_MAX_TOKENS: int(10, 100_000).default('1000'),
  GRAPHQL_MAX_COST: int(1, 10_000_000).default('20000'),
  GRAPHQL_MAX_REPEATED_FIELDS: int(0, 10_000).default('30'),
  FREE_READS_PER_MINUTE: int(1, 1_000_000).default('120'),
  TRUST_PROXY: trustProxy.default('false'),
  AUTH_FAILURES_MAX_ADDRESSES: int(100, 10_000_000).default('10000'),
  WEBHOOK_ALLOW_PRIVATE: bool.default('false'),
  WEBHOOK_RETRY_SCALE: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a positive number such as 1 or 0.001')
    .transform(Number)
    .pipe(z.number().positive().max(1000))
    .default('1'),
  WEBHOOK_POLL_MS: int(10, 60_000).default('100'),
  WEBHOOK_POLL_MAX_MS: int(10, 600_000).default('2000'),
  WEBHOOK_TIMEOUT_MS: int(100, 60_000).default('10000'),
  WEBHOOK_CONCURRENCY: int(1, 10_000).default('64'),
  WEBHOOK_ACCOUNT_CONCURRENCY: int(1, 10_000).default('8'),
  SUBSCRIPTION_POLL_MS: int(5, 60_000).default('50'),
  SUBSCRIPTION_POLL_MAX_MS: int(5, 600_000).default('1000'),
  SUBSCRIPTION_BACKLOG_MAX: int(1, 100_000).default('1000'),
  SUBSCRIPTION_LEASE_MS: int(1000, 600_000).default('30000'),
  SUBSCRIPTION_SOCKETS_PER_ADDRESS: int(1, 100_000).default('20'),
  SUBSCRIPTION_INIT_TIMEOUT_MS: int(100, 60_000).default('3000'),
});

export interface Config {
  /** Whether the OTEL_* variables ask for traces (`tracingRequested`); the SDK reads the rest of them itself. */
  traces: boolean;
  port: number;
  host: string;
  env: 'development' | 'production' | 'test';
  logLevel: string;
  /** Log lines go out in batches of about 16 KB, each line at most this long after it was logged (0: every line at once). */
  logFlushMs: number;
  database: { kind: 'sqlite'; path: string; url: string } | { kind: 'postgresql'; url: string };
  dbPoolMax: number;
  dbStatementTimeoutMs: number;
  migrateOnStart: boolean;
  /** Create a PostgreSQL database that does not exist (otherwise the start is refused: a typo must not make a new, empty store). */
  databaseCreate: boolean;
  redisUrl?: string;
  /** With Redis: a command unanswered after this long counts as an outage (the limiter's insurance, the slots' memory count serve). */
  redisCommandTimeoutMs: number;
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
  /** SQLite: how long a write waits (asynchronously) for another connection's lock before 503. */
  dbBusyTimeoutMs: number;
  /** GraphQL documents beyond these are refused (400) before anything executes. */
  graphqlLimits: { maxDepth: number; maxAliases: number; maxTokens: number; maxCost: number; maxRepeatedFields: number };
  /** Free requests (rate-limit status, introspection, the API documents) a key may send per minute. */
  freeReadsPerMinute: number;
  /** What executes GraphQL queries: graphql-jit (compiled once per document) or graphql-js; mutations, `@skip`/`@include` and answers with errors always run on graphql-js (src/graphql/server/jit.executor.ts). Same answers. */
  graphqlExecutor: 'jit' | 'graphql-js';
  /**
   * The manifest of trusted documents (`{"<sha256>": "<document>"}`, as GraphQL Codegen's client preset writes it),
   * read and checked at start (src/graphql/server/trusted-documents.ts); `only`: every other document is refused,
   * but from staff keys.
   */
  trustedDocuments: { file?: string; only: boolean };
  /** Whose `X-Forwarded-For` entries are believed (src/http/client-address.ts); null: the socket's address. */
  trustProxy: TrustProxy;
  /** How many client addresses the failed-authentication limiter tracks at most (least recently seen dropped first). */
  authFailuresMaxAddresses: number;
  /**
   * Webhooks: allow http and private addresses; retry schedule factor; how often an instance looks for
   * other processes' work (from `pollMs` after activity, doubling while nothing happens, up to
   * `pollMaxMs`; commits in this process, and on PostgreSQL every instance's events, wake it at once);
   * per-attempt timeout; attempts in flight per instance, and per account within them.
   */
  webhooks: {
    allowPrivate: boolean;
    retryScale: number;
    pollMs: number;
    pollMaxMs: number;
    timeoutMs: number;
    concurrency: number;
    accountConcurrency: number;
  };
  /** While GraphQL subscriptions are open, how often the instance reads the outbox for other processes' events: from `subscriptionPollMs`, doubling while nothing comes, up to `subscriptionPollMaxMs`. */
  subscriptionPollMs: number;
  subscriptionPollMaxMs: number;
  /** How many events a subscription may have waiting for a slow client before it ends with SUBSCRIBER_TOO_SLOW. */
  subscriptionBacklogMax: number;
  /** With Redis: how long an instance's subscription slot outlives the instance (renewed every third of it). */
  subscriptionLeaseMs: number;
  /**
   * WebSocket connections that have not sent an accepted `connection_init` yet: how many one client
   * address may hold open at once (more are refused at the upgrade), and how long each may wait.
   */
  subscriptionSockets: { perAddress: number; initTimeoutMs: number };
}

/** Every environment variable the service reads (docs/CONFIGURATION.md's table lists each). */
export const SETTING_NAMES: readonly string[] = Object.keys(envSchema.shape);

export class ConfigError extends Error {}

/** Parses an environment (default `process.env`) into a Config, or throws ConfigError naming every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const relevant: Record<string, string> = {};
  for (const key of SETTING_NAMES) {
    const value = env[key];
    if (value !== undefined && value !== '') relevant[key] = value;
  }
  const parsed = envSchema.safeParse(relevant);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) => `  ${i.path.join('.')}=${JSON.stringify(relevant[String(i.path[0])] ?? '')}: ${i.message}`,
    );
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.REQUEST_TIMEOUT_MS > 0 && e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError(
      `Invalid configuration:\n  HEADERS_TIMEOUT_MS=${JSON.stringify(String(e.HEADERS_TIMEOUT_MS))}: must not exceed REQUEST_TIMEOUT_MS (${e.REQUEST_TIMEOUT_MS})`,
    );
  }
  if (e.GRAPHQL_TRUSTED_ONLY && !e.GRAPHQL_TRUSTED_DOCUMENTS) {
    throw new ConfigError(
      'Invalid configuration:\n  GRAPHQL_TRUSTED_ONLY="true": needs GRAPHQL_TRUSTED_DOCUMENTS, the manifest of the documents to accept',
    );
  }
  const production = e.NODE_ENV === 'production';
  return {
    traces: tracingRequested(env),
    port: e.PORT,
    host: e.HOST,
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    logFlushMs: e.LOG_FLUSH_MS,
    database: e.DATABASE_URL.startsWith('sqlite:')
      ? { kind: 'sqlite', path: e.DATABASE_URL.slice('sqlite:'.length) || './data/petstore.db', url: e.DATABASE_URL }
      : { kind: 'postgresql', url: e.DATABASE_URL },
    dbPoolMax: e.DB_POOL_MAX,
    dbStatementTimeoutMs: e.DB_STATEMENT_TIMEOUT_MS,
    migrateOnStart: e.MIGRATE_ON_START,
    databaseCreate: e.DATABASE_CREATE,
    redisUrl: e.REDIS_URL,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    adminApiKey: e.ADMIN_API_KEY,
    seedDemo: e.SEED_DEMO ?? !production,
    petsGetSunset: new Date(`${e.PETS_GET_SUNSET}T00:00:00Z`),
    banThreshold: e.BAN_THRESHOLD,
    banSeconds: e.BAN_SECONDS,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    freeReadsPerMinute: e.FREE_READS_PER_MINUTE,
    rateLimitKeyPrefix: e.RATE_LIMIT_KEY_PREFIX,
    corsOrigins: e.CORS_ORIGINS.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    introspection: e.GRAPHQL_INTROSPECTION ?? !production,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    metricsEnabled: e.METRICS_ENABLED,
    dbBusyTimeoutMs: e.DB_BUSY_TIMEOUT_MS,
    graphqlExecutor: e.GRAPHQL_EXECUTOR,
    trustedDocuments: { file: e.GRAPHQL_TRUSTED_DOCUMENTS, only: e.GRAPHQL_TRUSTED_ONLY },
    graphqlLimits: {
      maxDepth: e.GRAPHQL_MAX_DEPTH,
      maxAliases: e.GRAPHQL_MAX_ALIASES,
      maxTokens: e.GRAPHQL_MAX_TOKENS,
      maxCost: e.GRAPHQL_MAX_COST,
      maxRepeatedFields: e.GRAPHQL_MAX_REPEATED_FIELDS,
    },
    trustProxy: e.TRUST_PROXY,
    authFailuresMaxAddresses: e.AUTH_FAILURES_MAX_ADDRESSES,
    subscriptionPollMs: e.SUBSCRIPTION_POLL_MS,
    // The ceiling is never below the first interval (a test or an operator may set a long first one).
    subscriptionPollMaxMs: Math.max(e.SUBSCRIPTION_POLL_MS, e.SUBSCRIPTION_POLL_MAX_MS),
    subscriptionBacklogMax: e.SUBSCRIPTION_BACKLOG_MAX,
    subscriptionLeaseMs: e.SUBSCRIPTION_LEASE_MS,
    subscriptionSockets: { perAddress: e.SUBSCRIPTION_SOCKETS_PER_ADDRESS, initTimeoutMs: e.SUBSCRIPTION_INIT_TIMEOUT_MS },
    webhooks: {
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
      retryScale: e.WEBHOOK_RETRY_SCALE,
      pollMs: e.WEBHOOK_POLL_MS,
      pollMaxMs: Math.max(e.WEBHOOK_POLL_MS, e.WEBHOOK_POLL_MAX_MS),
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      concurrency: e.WEBHOOK_CONCURRENCY,
      accountConcurrency: Math.min(e.WEBHOOK_CONCURRENCY, e.WEBHOOK_ACCOUNT_CONCURRENCY),
    },
  };
}

/**
 * Whether the standard variables ask for traces: an OTLP endpoint (all signals or traces), or
 * `OTEL_TRACES_EXPORTER` naming an exporter; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` win.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.length) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}
