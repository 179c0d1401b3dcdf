/**
 * Micro-benchmark behind "the request walk reads Koa's request and response, not the context's delegates"
 * (src/http/context.ts, docs/DECISIONS.md). Koa defines the context's delegates of each kind (`ctx.method`,
 * `ctx.status = …`, `ctx.get(…)`) from one function literal per kind, so once a server has used a few of them each is a megamorphic property
 * access. This first uses every delegate a request's middleware and Koa use, as a server does, then times each access
 * both ways on 64 contexts.
 *
 *   npm run build && node dist/bench/koa-delegates.js [--rounds 3]
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { benchArgs } from './cli.js';
import Koa, { type Context } from 'koa';
import { requestHeader } from '../src/http/context.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '3' } } });
const app = new Koa();
const contexts = Array.from({ length: 64 }, () => {
  const req = new IncomingMessage(new Socket());
  req.method = 'GET';
  req.url = '/v1/pets?ids=1,2';
  req.headers = { host: '127.0.0.1', 'x-api-key': 'psk_example' };
  return app.createContext(req, new ServerResponse(req)) as Context;
});

// As in a server: the delegates Koa, @koa/router and middleware use, read and written.
for (let i = 0; i < 100_000; i++) {
  const c = contexts[i & 63]!;
  void [c.method, c.path, c.url, c.query, c.querystring, c.headers, c.host, c.ip, c.status, c.body, c.type, c.length, c.message, c.get('a')];
  void [c.secure, c.protocol, c.origin, c.href, c.fresh, c.stale, c.socket, c.hostname, c.search];
  c.set('x-a', '1');
  c.status = 200;
  c.message = 'OK';
  c.type = 'json';
  c.length = 3;
  c.body = 'abc';
  c.remove('x-a');
}

/** Nanoseconds per call of `f`, over the 64 contexts in turn. */
function perCall(f: (c: Context) => unknown, n = 2_000_000): number {
  for (let i = 0; i < n / 4; i++) f(contexts[i & 63]!);
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(contexts[i & 63]!);
  return Number(process.hrtime.bigint() - started) / n;
}

const pairs: Array<[string, (c: Context) => unknown, string, (c: Context) => unknown]> = [
  ['ctx.method', (c) => c.method, 'ctx.req.method', (c) => c.req.method],
  ['ctx.path', (c) => c.path, 'ctx.request.path', (c) => c.request.path],
  ["ctx.get('x-api-key')", (c) => c.get('x-api-key'), "requestHeader(ctx, 'x-api-key')", (c) => requestHeader(c, 'x-api-key')],
  ['ctx.status = 200', (c) => (c.status = 200), 'ctx.response.status = 200', (c) => (c.response.status = 200)],
  ["ctx.body = '[]'", (c) => (c.body = '[]'), "ctx.response.body = '[]'", (c) => (c.response.body = '[]')],
];
for (let round = 1; round <= Number(args.rounds); round++) {
  const cells = pairs.map(([a, fa, b, fb]) => `${a} ${perCall(fa).toFixed(0)} ns, ${b} ${perCall(fb).toFixed(0)} ns`);
  process.stdout.write(`round ${round}: ${cells.join(' · ')}\n`);
}
