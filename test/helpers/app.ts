import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createApp, type App, type CreateAppOptions } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { sqlStatements, type SqlStatementMessage } from '../../src/db/sql-statements.js';
import { assertMatchesOpenApi } from './openapi-validator.js';

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (no JSON encoding); give a content-type header yourself. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Overrides the client's key; null sends none. */
  key?: string | null;
  /** Skip the OpenAPI response check (for deliberately undocumented traffic). */
  skipContract?: boolean;
}

export class Client {
  constructor(
    readonly baseUrl: string,
    readonly key: string | null,
  ) {}

  withKey(key: string | null): Client {
    return new Client(this.baseUrl, key);
  }

  async request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? this.key : options.key;
    if (key) headers['x-api-key'] = key;
    let body: string | Buffer | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    if (!options.skipContract) assertMatchesOpenApi(method, path, res.status, res.headers, parsed);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  get = <T = any>(path: string, o?: RequestOptions) => this.request<T>('GET', path, o);
  post = <T = any>(path: string, body?: unknown, o?: RequestOptions) => this.request<T>('POST', path, { ...o, body });
  put = <T = any>(path: string, body?: unknown, o?: RequestOptions) => this.request<T>('PUT', path, { ...o, body });
  patch = <T = any>(path: string, body?: unknown, o?: RequestOptions) => this.request<T>('PATCH', path, { ...o, body });
  delete = <T = any>(path: string, o?: RequestOptions) => this.request<T>('DELETE', path, o);

  /** POST /graphql with a JSON body; `variables` and `extensions` optional. */
  async graphql<T = any>(query: string, variables?: Record<string, unknown>, options: RequestOptions = {}): Promise<TestResponse<T>> {
    return this.request<T>('POST', '/graphql', { ...options, body: { query, variables } });
  }
}

export interface TestApp {
  app: App;
  config: Config;
  url: string;
  adminKey: string;
  /** A client with the staff key. */
  admin: Client;
  /** A client without a key. */
  anonymous: Client;
  /** Lines the app announced at start (keys). */
  announced: string[];
  close(): Promise<void>;
}

export interface StartOptions {
  /** Environment variables for loadConfig (strings, as a user would set them). */
  env?: Record<string, string>;
  /** Rate-limit window lengths in seconds (short windows for tests). */
  windows?: { minute: number; day: number };
  /** Direct config overrides after parsing. */
  config?: Partial<Config>;
  /** Reuse an existing database URL (multi-instance tests) instead of a fresh one. */
  databaseUrl?: string;
  /** Receives the app's log lines (give LOG_LEVEL in `env`; the default is silent). */
  logStream?: { write(line: string): void };
  /** More Apollo Server plugins for the GraphQL facade (tests that count what Apollo serves). */
  graphqlPlugins?: CreateAppOptions['graphqlPlugins'];
}

let counter = 0;

/**
 * Starts the real app on port 0 over a fresh database: a new SQLite file by default, or a new
 * PostgreSQL database when TEST_DATABASE_URL is set (so the whole suite runs against PostgreSQL).
 */
export async function startApp(options: StartOptions = {}): Promise<TestApp> {
  const cleanups: Array<() => Promise<void> | void> = [];
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    const pg = process.env.TEST_DATABASE_URL;
    if (pg) {
      const name = `petstore_t_${process.pid}_${++counter}_${randomBytes(3).toString('hex')}`;
      databaseUrl = await createDatabase(pg, name);
      cleanups.push(() => dropDatabase(pg, name));
    } else {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-test-'));
      databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    }
  }
  const adminKey = options.env?.ADMIN_API_KEY ?? `psk_${randomBytes(24).toString('base64url')}`;
  // The API suites' PostgreSQL pass also puts every app's limiter in Redis (own prefix per app).
  const redisEnv: Record<string, string> = process.env.TEST_APP_REDIS_URL
    ? { REDIS_URL: process.env.TEST_APP_REDIS_URL, RATE_LIMIT_KEY_PREFIX: `petstore-test-${randomBytes(6).toString('hex')}` }
    : {};
  const announced: string[] = [];
  let started: { app: App; config: Config; url: string };
  try {
    const config = loadConfig({
      ...redisEnv,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      SEED_DEMO: 'false',
      DATABASE_URL: databaseUrl,
      ADMIN_API_KEY: adminKey,
      HOST: '127.0.0.1',
      ...options.env,
    });
    Object.assign(config, options.config);
    const app = await createApp(config, {
      logStream: options.logStream,
      announce: (line) => announced.push(line),
      windows: options.windows,
      graphqlPlugins: options.graphqlPlugins,
    });
    started = { app, config, ...(await app.listen(0, '127.0.0.1')) };
  } catch (error) {
    // A start refused (the tests of bad settings expect it) leaves no database or file behind.
    for (const c of cleanups.reverse()) await c();
    throw error;
  }
  const { app, config, url } = started;
  let closed = false;
  return {
    app,
    config,
    url,
    adminKey,
    admin: new Client(url, adminKey),
    anonymous: new Client(url, null),
    announced,
    async close() {
      if (closed) return;
      closed = true;
      recorders.get(app)?.dispose();
      await app.close();
      for (const c of cleanups.reverse()) await c();
    },
  };
}

/** Creates an account through the API and returns a client holding its first key. */
export async function createAccount(
  t: TestApp,
  fields: { name?: string; role?: 'staff' | 'customer'; plan?: string; limits?: { perMinute: number; perDay: number } } = {},
): Promise<{ client: Client; accountId: number; keyId: number; key: string }> {
  const res = await t.admin.post('/v1/accounts', { name: 'Customer', role: 'customer', plan: 'pro', ...fields });
  if (res.status !== 201) throw new Error(`createAccount: ${res.status} ${res.text}`);
  return { client: new Client(t.url, res.body.apiKey.key), accountId: res.body.id, keyId: res.body.apiKey.id, key: res.body.apiKey.key };
}

/** A category and a pet with the given stock, through the API. */
export async function createPet(t: TestApp, { stock = 1, name = 'Rex', category = `Dogs ${++counter}` } = {}) {
  const cat = await t.admin.post('/v1/categories', { name: category });
  if (cat.status !== 201) throw new Error(`createPet: category ${cat.status} ${cat.text}`);
  const pet = await t.admin.post('/v1/pets', { name, categoryId: cat.body.id });
  if (pet.status !== 201) throw new Error(`createPet: pet ${pet.status} ${pet.text}`);
  if (stock !== 1) {
    const inv = await t.admin.put(`/v1/store/inventory/${pet.body.id}`, { quantity: stock });
    if (inv.status !== 200) throw new Error(`createPet: inventory ${inv.status} ${inv.text}`);
  }
  return { categoryId: cat.body.id as number, petId: pet.body.id as number };
}

/**
 * Records every SQL statement the app sends, through the ORM (knex) and through the prepared-statement
 * reader, into `into` while it is not null; leaves out the webhook worker's background checks (its
 * own tables), which share the connection pool and run whenever their timer fires.
 */
export function recordSql(app: App): SqlRecorder {
  let recorder = recorders.get(app);
  if (!recorder) recorders.set(app, (recorder = installRecorder(app)));
  return recorder;
}

interface SqlRecorder {
  start(): void;
  stop(): string[];
  /** Leaves the process-wide channel (the app closes). */
  dispose(): void;
}
const recorders = new WeakMap<App, SqlRecorder>();

function installRecorder(app: App): SqlRecorder {
  let seen: string[] | null = null;
  app.orm.em
    .getConnection()
    .getKnex()
    .on('query', (q: { sql: string }) => seen?.push(q.sql));
  // The plain-SQL reader's and writer's statements, this app's only.
  const onStatement = (message: unknown) => {
    const { sql, orm } = message as SqlStatementMessage;
    if (orm === app.orm) seen?.push(sql);
  };
  sqlStatements.subscribe(onStatement);
  return {
    start() {
      seen = [];
    },
    stop() {
      const ran = (seen ?? []).filter((sql) => !/\b(event_relays|webhook_endpoints|webhook_deliveries)\b/.test(sql));
      seen = null;
      return ran;
    },
    dispose() {
      sqlStatements.unsubscribe(onStatement);
    },
  };
}
