/**
 * SQL statements and promises per request, counted from knex's `query` events (the ORM's statements), the
 * plain-SQL reader's and writer's `sqlStatements` channel (their COMMITs included) and an async hook's promise
 * inits, on an in-process app over a copy of the benchmark database. Each scenario's request is sent once to warm up
 * (which also caches the API key), then once more to count: the steady state, where the key lookup (1 statement)
 * happens at most once per key per second (the authenticator's TTL). On SQLite the ORM's `BEGIN IMMEDIATE` is sent
 * below knex and is not among the events.
 */
import 'reflect-metadata';
import { createHook } from 'node:async_hooks';
import { Agent, request as httpRequest } from 'node:http';
import type autocannon from 'autocannon';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';
import { sqlStatements, type SqlStatementMessage } from '../src/db/sql-statements.js';
import { keyedRequests, type BenchKeys, type Scenario } from './scenarios.js';

export interface StatementCount {
  /**
   * Promises the process made while serving the request (an async hook's count; the client's request is sent by
   * callbacks, which make none), from sending it to the answer's end: a background task's promises in that time (the
   * event workers' timers) count too, and the server's own work after the answer may not. On Node 20 and 22 each
   * also runs AsyncLocalStorage's hooks once MikroORM's are on.
   */
  promises: number;
  total: number;
  /** BEGIN/COMMIT/ROLLBACK/SAVEPOINT, included in `total`. */
  transactionControl: number;
  statements: string[];
}

export async function countStatements(file: string, scenarios: Scenario[], keys: BenchKeys): Promise<Map<string, StatementCount>> {
  const config = loadConfig({ DATABASE_URL: `sqlite:${file}`, NODE_ENV: 'production', LOG_LEVEL: 'silent', BAN_THRESHOLD: '1000000' });
  const app = await createApp(config, { announce: () => {} });
  const counts = new Map<string, StatementCount>();
  let seen: string[] = [];
  // The plain-SQL reader's and writer's statements bypass knex (prepared statements on the driver): count them too.
  const onStatement = (message: unknown) => {
    const { sql, orm } = message as SqlStatementMessage;
    if (orm === app.orm) seen.push(`${sql}  [prepared]`);
  };
  sqlStatements.subscribe(onStatement);
  try {
    const knex = app.orm.em.getConnection().getKnex();
    knex.on('query', (q: { sql: string }) => seen.push(q.sql));
    const { url } = await app.listen(0, '127.0.0.1');
    // Requests go by node:http's callbacks, which make no promise: the promises counted are the server's.
    let promises = 0;
    let counting = false;
    const hook = createHook({
      init(_id, type) {
        if (counting && type === 'PROMISE') promises++;
      },
    });
    const agent = new Agent({ keepAlive: true });
    const send = (key: string, request: autocannon.Request) =>
      new Promise<number>((answered, failed) => {
        const prepared = typeof request.setupRequest === 'function' ? request.setupRequest(request, {}) : request;
        promises = 0;
        counting = true;
        const req = httpRequest(
          url + prepared.path,
          {
            agent,
            method: prepared.method ?? 'GET',
            headers: { 'X-API-Key': key, ...(prepared.headers as Record<string, string> | undefined) },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              counting = false;
              answered(res.statusCode ?? 0);
            });
          },
        );
        req.on('error', (error) => {
          counting = false;
          failed(error);
        });
        req.end(prepared.body as string | undefined);
      });
    hook.enable();
    try {
      for (const scenario of scenarios) {
        if (scenario.service !== 'memory') continue;
        // A many-keys scenario is counted with its first key (steady state: the key cached).
        const { key } = keyedRequests(scenario, keys);
        // The free key's 60 per minute: spend them so the counted request is a refusal.
        const warmups = scenario.expect === 429 ? 61 : 1;
        for (let i = 0; i < warmups; i++) for (const r of scenario.requests) await send(key, r);
        seen = [];
        let made = 0;
        for (const r of scenario.requests) {
          const status = await send(key, r);
          made += promises;
          if (status !== scenario.expect) throw new Error(`${scenario.id}: ${r.path} answered ${status}, expected ${scenario.expect}`);
        }
        // Without the webhook worker's background checks (its own tables), which share the connection pool.
        const statements = seen.filter((sql) => !/\b(event_relays|webhook_endpoints|webhook_deliveries)\b/.test(sql));
        counts.set(scenario.id, {
          promises: made,
          total: statements.length,
          transactionControl: statements.filter((s) => /^\s*(begin|commit|rollback|savepoint|release)/i.test(s)).length,
          statements,
        });
      }
    } finally {
      hook.disable();
      agent.destroy();
    }
  } finally {
    sqlStatements.unsubscribe(onStatement);
    await app.close();
  }
  return counts;
}
