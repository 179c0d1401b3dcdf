/**
 * The REST ladder from L0 to F: minimal servers that each add one layer of the project's own stack to a bare
 * `node:http` floor, so the benchmark measures how far the service is from what its stack can do at best.
 * Usage (by bench/run.ts and bench/instructions.ts):
 *
 *   RUNG=l0    BODY_FILE=… node dist/bench/ladder-server.js          L0: bare node:http, the service's bytes from memory
 *   RUNG=koa   BODY_FILE=… node dist/bench/ladder-server.js          Koa + @koa/router with every route of the OpenAPI document
 *   RUNG=gate  BODY_FILE=… KEY=… node dist/bench/ladder-server.js    + API key looked up in a Map, rate-limiter-flexible (memory), 5 headers
 *   RUNG=floor DATABASE=… KEY=… node dist/bench/ladder-server.js     + the 10-id read as one cached libsql prepared statement:
 *                                                                     F, the floor of this stack for a keyed read
 * Prints `listening PORT`.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import Koa, { type Context } from 'koa';
import Router from '@koa/router';
import { floorGuard } from './floor-guard.js';
import { parse } from 'yaml';
import Database from 'libsql';
import { projectPath } from '../src/project-path.js';

const rung = process.env.RUNG ?? 'koa';
const body = process.env.BODY_FILE ? readFileSync(process.env.BODY_FILE) : Buffer.alloc(0);

/** L0: nothing this machine serves over HTTP is much faster. */
function bareServer() {
  const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(body.length) };
  return createServer((req, res) => {
    req.resume();
    res.writeHead(200, headers);
    res.end(body);
  });
}

const doc = parse(readFileSync(projectPath('schema/openapi.yaml'), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
const router = new Router({ prefix: '/v1' });
const fixed = (ctx: Context) => {
  ctx.type = 'application/json; charset=utf-8';
  ctx.body = body;
};
let routes = 0;
for (const [path, item] of Object.entries(doc.paths)) {
  for (const method of ['get', 'post', 'put', 'patch', 'delete'] as const) {
    if (!item[method]) continue;
    routes++;
    // F's own read takes this route's place (below).
    if (rung === 'floor' && method === 'get' && path === '/pets') continue;
    router[method](path.replace(/\{(\w+)\}/g, ':$1'), fixed);
  }
}

const koa = new Koa();
if (rung === 'gate' || rung === 'floor') {
  koa.use(floorGuard({ code: 'INVALID_API_KEY', message: 'unknown key', status: 401 }));
}
if (rung === 'floor') {
  const db = new Database(process.env.DATABASE ?? '', { readonly: true });
  const statements = new Map<number, ReturnType<typeof db.prepare>>();
  router.get('/pets', (ctx: Context) => {
    const ids = String(ctx.query.ids ?? '')
      .split(',')
      .map(Number);
    let statement = statements.get(ids.length);
    if (!statement) {
      statement = db.prepare(`select id, name, category_id, status from pets where id in (${ids.map(() => '?').join(',')}) order by id`);
      statements.set(ids.length, statement);
    }
    const rows = (statement.all as (...args: number[]) => unknown)(...ids) as Array<{
      id: number;
      name: string;
      category_id: number;
      status: string;
    }>;
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = JSON.stringify(rows.map((r) => ({ id: r.id, name: r.name, categoryId: r.category_id, status: r.status })));
  });
}
koa.use(router.routes());

const server = rung === 'l0' ? bareServer() : createServer(koa.callback());
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () =>
  process.stdout.write(`listening ${(server.address() as AddressInfo).port} (${rung}, ${routes} routes)\n`),
);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
