/**
 * Starts a server of the bench tools as `npm run bench` starts it: its start command's node flags (plus `nodeArgs`),
 * output to a log file in `work`, resolved with its URL once it prints it. Used by threads.ts, allocations.ts and
 * promises.ts; run.ts and instructions.ts start theirs their own way (another node, valgrind) and wait with
 * `announcedUrl`. The read by ids every tool sends (`idsRead`, `checkGraphQLAnswer`, `loadIds`) is here too.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../src/project-path.js';
import autocannon from 'autocannon';
import { GQL_IDS_REQUEST, REST_IDS_PATH, startNodeArgs } from './scenarios.js';

export async function startServer(
  name: string,
  script: string,
  env: Record<string, string>,
  work: string,
  nodeArgs: string[] = [],
  node = process.execPath,
): Promise<{ child: ChildProcess; url: string }> {
  const logFile = join(work, `${name}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(node, [...startNodeArgs(projectPath('.')), ...nodeArgs, projectPath(script)], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return { child, url: await announcedUrl(name, child, logFile, 60_000) };
}

/** The version of the node at `path` (a tool's `--node`), `process.version` for this one. */
export function nodeVersion(path: string): string {
  return path === process.execPath ? process.version : spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

/**
 * Puts a started service in the state it serves in: one write through the ORM (a category, created as an operator
 * would). Every tool that measures the service does this first (run.ts and instructions.ts call it, the others get
 * it from `benchServer`): the first write is when MikroORM first enters its async contexts (docs/DECISIONS.md,
 * "MikroORM's async contexts are on only while a write runs").
 */
export async function writeOnce(url: string, adminKey: string): Promise<void> {
  const res = await fetch(`${url}/v1/categories`, {
    method: 'POST',
    headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `Bench write ${Date.now()}-${Math.random().toString(36).slice(2)}` }),
  });
  if (res.status !== 201) throw new Error(`the warm-up write (POST /v1/categories) answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
}

/** The URL a starting server prints to `logFile` (the service's "Petstore API on …", the ladder's "listening PORT"). */
export async function announcedUrl(name: string, child: ChildProcess, logFile: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = readFileSync(logFile, 'utf8');
    const api = /Petstore API on (http:\/\/[^\s]+)\/v1/.exec(out);
    const port = /listening (\d+)/.exec(out);
    if (api || port) return api ? api[1]! : `http://127.0.0.1:${port![1]}`;
    const exited = child.exitCode ?? child.signalCode;
    if (exited !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`${name} ${exited !== null ? `exited (${exited})` : `did not listen within ${timeoutMs / 1000} s`}:\n${out.slice(-4000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The two servers the tools compare, on a copy of the bench database: `floor` (F, bench/ladder-server.ts) or the
 * service (any other name), which gets one write before it is handed over (`writeOnce`). `serviceEnv` is added to
 * the service's environment only (a layer switched off, say); `env` to either's (what a tool itself needs in both).
 */
export async function benchServer(
  name: string,
  file: string,
  db: { enterpriseKey: string; adminKey: string },
  work: string,
  {
    serviceEnv = {},
    env = {},
    nodeArgs = [],
    node,
  }: { serviceEnv?: Record<string, string>; env?: Record<string, string>; nodeArgs?: string[]; node?: string } = {},
) {
  if (name === 'floor') return startServer(name, 'dist/bench/ladder-server.js', { ...env, RUNG: 'floor', DATABASE: file, KEY: db.enterpriseKey }, work, nodeArgs, node);
  const server = await startServer(name, 'dist/src/main.js', { ...benchServiceEnv(file), ...serviceEnv, ...env }, work, nodeArgs, node);
  await writeOnce(server.url, db.adminKey);
  return server;
}

/**
 * The service's environment in every bench tool: production mode, a port of its own, the database file given, and
 * bans out of the way (a refused request is measured as RATE_LIMITED, not as the cheaper ban that follows).
 */
export function benchServiceEnv(databaseFile: string): Record<string, string> {
  return { NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: `sqlite:${databaseFile}`, BAN_THRESHOLD: '1000000' };
}

/** The 10-id read as autocannon's options, with the key: GraphQL's (`pets(filter: {ids})`, the bench's `gql-ids`) or REST's. */
export function idsRead(url: string, key: string, graphql: boolean): { url: string; method?: autocannon.Request['method']; body?: string; headers: Record<string, string> } {
  return graphql
    ? {
        url: url + GQL_IDS_REQUEST.path,
        method: GQL_IDS_REQUEST.method,
        body: GQL_IDS_REQUEST.body as string,
        headers: { ...(GQL_IDS_REQUEST.headers as Record<string, string>), 'X-API-Key': key },
      }
    : { url: url + REST_IDS_PATH, headers: { 'X-API-Key': key } };
}

/** A GraphQL answer is a 200 even with errors: the read by ids must hold the ten pets, without errors. */
export async function checkGraphQLAnswer(url: string, key: string): Promise<void> {
  const { url: target, method, body, headers } = idsRead(url, key, true);
  const res = await fetch(target, { method, headers, body });
  const answer = (await res.json()) as { errors?: unknown[]; data?: { pets?: { edges?: unknown[] } } };
  if (res.status !== 200 || answer.errors || answer.data?.pets?.edges?.length !== 10) throw new Error(`unexpected GraphQL answer: ${res.status} ${JSON.stringify(answer).slice(0, 300)}`);
}

/**
 * `seconds` of the 10-id read at `connections` clients: GraphQL's when `name` is `gql-ids` (one answer checked first),
 * REST's otherwise; the number of answers, every one of them a 2xx or it throws.
 */
export async function loadIds(name: string, url: string, key: string, connections: number, seconds: number): Promise<number> {
  const graphql = name === 'gql-ids';
  if (graphql) await checkGraphQLAnswer(url, key);
  const result = await autocannon({ ...idsRead(url, key, graphql), connections, duration: seconds });
  const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0;
  if (ok !== result.requests.total) throw new Error(`${name}: ${result.requests.total - ok} of ${result.requests.total} answers were not 2xx`);
  return ok;
}
