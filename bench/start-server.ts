/**
 * What the bench's tools share to start and check their servers: each server's command (`serverCommand`), the URL it
 * announces, the one write that puts the service in the state it serves in, and the check that a scenario's answer is
 * the one expected (`checkAnswer`).
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { projectPath } from '../src/project-path.js';
import { scenarioRequest, startNodeArgs } from './scenarios.js';

/**
 * Puts a started service in the state it serves in: one write through the ORM (a category, created as an operator
 * would). Every tool that measures the service does this first (run.ts and instructions.ts): the first write is when MikroORM first enters its async contexts (docs/DECISIONS.md,
 * "MikroORM's async contexts are on only while a write runs").
 */
export async function writeOnce(url: string, adminKey: string): Promise<void> {
  const res = await fetch(`${url}/v1/categories`, {
    method: 'POST',
    headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `Bench write ${Date.now()}-${Math.random().toString(36).slice(2)}` }),
  });
  if (res.status !== 201)
    throw new Error(`the warm-up write (POST /v1/categories) answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
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
      throw new Error(
        `${name} ${exited !== null ? `exited (${exited})` : `did not listen within ${timeoutMs / 1000} s`}:\n${out.slice(-4000)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * How to start each server a measurement compares, on a copy of the bench database (`database`): `floor` (F,
 * bench/ladder-server.ts, answering `bodyFile`'s bytes on every other route), `apollo-floor` (F_apollo,
 * bench/apollo-floor.ts), or the service (`dist/src/main.js` with its start command's node flags). `key` is the only key
 * the floors know.
 */
export function serverCommand(
  kind: 'floor' | 'apollo-floor' | 'service',
  database: string,
  key: string,
  bodyFile = '',
): { script: string; env: Record<string, string>; nodeArgs: string[] } {
  if (kind === 'floor')
    return {
      script: projectPath('dist/bench/ladder-server.js'),
      env: { RUNG: 'floor', BODY_FILE: bodyFile, KEY: key, DATABASE: database },
      nodeArgs: [],
    };
  if (kind === 'apollo-floor')
    return {
      script: projectPath('dist/bench/apollo-floor.js'),
      env: { NODE_ENV: 'production', KEY: key, DATABASE: database },
      nodeArgs: [],
    };
  return { script: projectPath('dist/src/main.js'), env: benchServiceEnv(database), nodeArgs: startNodeArgs(projectPath('.')) };
}

/** Which server a scenario of the targets is asked of. */
export function serverOf(id: string): 'floor' | 'apollo-floor' | 'service' {
  return id === 'floor' ? 'floor' : id.startsWith('apollo-') ? 'apollo-floor' : 'service';
}

/**
 * The service's environment in every bench tool: production mode, a port of its own, the database file given, and
 * bans out of the way (a refused request is measured as RATE_LIMITED, not as the cheaper ban that follows).
 */
export function benchServiceEnv(databaseFile: string): Record<string, string> {
  return { NODE_ENV: 'production', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: `sqlite:${databaseFile}`, BAN_THRESHOLD: '1000000' };
}

/**
 * A scenario's answer as the bench expects it: 2xx, and for GraphQL (a 200 even with errors) no errors and the data
 * the read asks for (ten pets by ids, one by `pet(id)`). Returns the answer's text.
 */
export async function checkAnswer(url: string, key: string, id: string): Promise<string> {
  const { url: target, method, body, headers } = scenarioRequest(url, key, id);
  const res = await fetch(target, { method, headers, body });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${id}: answered ${res.status}: ${text.slice(0, 300)}`);
  if (!/gql|apollo/.test(id)) return text;
  const answer = JSON.parse(text) as { errors?: unknown[]; data?: { pets?: { edges?: unknown[] }; pet?: unknown } };
  const expected = id.endsWith('-pet') ? answer.data?.pet != null : answer.data?.pets?.edges?.length === 10;
  if (answer.errors || !expected) throw new Error(`${id}: unexpected GraphQL answer: ${text.slice(0, 300)}`);
  return text;
}
