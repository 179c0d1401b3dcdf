import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WebSocket } from 'ws';
import { createClient, type Client as WsClient } from 'graphql-ws';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** How the next request is answered (default 200); `n` counts requests from 1. */
  answer: (n: number, res: ServerResponse) => void;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that records every request. */
export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  const receiver = {
    received: [] as Received[],
    answer: (_n: number, res: ServerResponse) => {
      res.statusCode = 200;
      res.end('ok');
    },
  } as Receiver;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      receiver.answer(receiver.received.length, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** Verifies a delivery with the `standardwebhooks` package and returns its parsed body. */
export function verified(secret: string, r: Received): any {
  const headers = {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(r.body, headers);
}

/** Polls `check` until it returns a value (bounded: `tries` tries, `every` ms apart). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  every = 50,
  tries = 200,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, every));
  }
  assert.fail(`timed out waiting for ${what}`);
}

export interface Subscription {
  results: any[];
  errors: unknown[];
  completed: boolean;
  dispose(): void;
}

/** The instance each client of `wsClient` talks to: `subscribe` asks it whether a subscription is open. */
const instanceOf = new WeakMap<WsClient, string>();

/** A graphql-ws client on the app's /graphql, authenticated by `key` in connection_init (or with these connection params). */
export function wsClient(
  baseUrl: string,
  key: string | null | Record<string, string>,
): { client: WsClient; closed: Promise<{ code: number; reason: string }> } {
  let closed!: (event: { code: number; reason: string }) => void;
  const closedPromise = new Promise<{ code: number; reason: string }>((resolve) => (closed = resolve));
  const client: WsClient = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: typeof key === 'string' ? { 'X-API-Key': key } : (key ?? {}),
    retryAttempts: 0,
    lazy: false,
    on: { closed: (event: any) => closed({ code: event.code, reason: event.reason }) },
    onNonLazyError: () => undefined,
  });
  instanceOf.set(client, baseUrl);
  return { client, closed: closedPromise };
}

/** The subscriptions open on the instance at `baseUrl` (its gauge `petstore_graphql_subscriptions`). */
export async function openSubscriptions(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const m = /^petstore_graphql_subscriptions (\d+)$/m.exec(text);
  assert.ok(m, `${baseUrl}/metrics has no petstore_graphql_subscriptions`);
  return Number(m[1]);
}

/**
 * Per instance: the subscriptions `subscribe` saw it accept that have not ended since, and the end of
 * the last `subscribe` to it (they are taken one at a time, so a rise of its gauge is the one sent).
 */
const instances = new Map<string, { open: Set<Subscription>; last: Promise<unknown> }>();

/**
 * Starts a subscription and records what arrives; resolves once the server has taken it: refused or
 * answered (an error, a result, its end), or accepted, and then it is listening (what commits from
 * then on reaches it). graphql-ws acknowledges no subscription, so acceptance is read from the
 * instance's gauge of open subscriptions, which counts it just before it starts listening (in the same
 * turn, before the instance reads anything else): subscribes to one instance are taken one at a time,
 * each after the instance has let go of the ones ended before it, and the gauge's rise is this one.
 */
export async function subscribe(client: WsClient, query: string, variables?: Record<string, unknown>): Promise<Subscription> {
  const url = instanceOf.get(client);
  assert.ok(url, 'subscribe() takes a client made by wsClient()');
  let instance = instances.get(url);
  if (!instance) instances.set(url, (instance = { open: new Set(), last: Promise.resolve() }));
  const { open } = instance;
  const taken = instance.last.then(() => start(client, url, open, query, variables));
  instance.last = taken.catch(() => undefined);
  return taken;
}

async function start(
  client: WsClient,
  url: string,
  open: Set<Subscription>,
  query: string,
  variables?: Record<string, unknown>,
): Promise<Subscription> {
  const ended = () => open.delete(sub);
  const sub: Subscription = { results: [], errors: [], completed: false, dispose: () => undefined };
  // The ones ended before (disposed, completed) are no longer counted there: the gauge is the others.
  const before = await eventually(
    `the subscriptions ended on ${url} let go (${open.size} still open)`,
    async () => {
      const n = await openSubscriptions(url);
      return n <= open.size ? { n } : null;
    },
    25,
    1200,
  );
  const dispose = client.subscribe(
    { query, variables },
    {
      next: (value) => sub.results.push(value),
      error: (error) => {
        sub.errors.push(error);
        ended();
      },
      complete: () => {
        sub.completed = true;
        ended();
      },
    },
  );
  sub.dispose = () => {
    ended();
    dispose();
  };
  const answered = () => sub.errors.length > 0 || sub.results.length > 0 || sub.completed;
  const accepted = await eventually(
    `the subscription answered or open on ${url}`,
    async () => (answered() ? 'answered' : (await openSubscriptions(url)) > before.n ? 'open' : null),
    25,
    1200,
  );
  // Open: accepted and not ended meanwhile; a result also means it was accepted.
  if ((accepted === 'open' || sub.results.length > 0) && !sub.completed && sub.errors.length === 0) open.add(sub);
  return sub;
}

export interface HangingReceiver {
  url: string;
  /** Requests received so far (each one is held: never answered). */
  received: Received[];
  /** Requests still open (the sender has not given up on them). */
  open(): number;
  close(): Promise<void>;
}

/** A webhook receiver on 127.0.0.1 that reads each request and never answers it (the sender waits for its timeout). */
export async function startHangingReceiver(path = '/hang'): Promise<HangingReceiver> {
  const received: Received[] = [];
  let open = 0;
  const server = createServer((req, res) => {
    open++;
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    received,
    open: () => open,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
