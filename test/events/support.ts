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
export async function eventually<T>(what: string, check: () => Promise<T | undefined | null | false> | T | undefined | null | false, every = 50, tries = 200): Promise<T> {
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

/** A graphql-ws client on the app's /graphql, authenticated by `key` in connection_init. */
export function wsClient(baseUrl: string, key: string | null): { client: WsClient; closed: Promise<{ code: number; reason: string }> } {
  let closed!: (event: { code: number; reason: string }) => void;
  const closedPromise = new Promise<{ code: number; reason: string }>((resolve) => (closed = resolve));
  const client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: key ? { 'X-API-Key': key } : {},
    retryAttempts: 0,
    lazy: false,
    on: { closed: (event: any) => closed({ code: event.code, reason: event.reason }) },
    onNonLazyError: () => undefined,
  });
  return { client, closed: closedPromise };
}

/** Starts a subscription and records what arrives; resolves once the server has acknowledged it. */
export async function subscribe(client: WsClient, query: string, variables?: Record<string, unknown>): Promise<Subscription> {
  const sub: Subscription = { results: [], errors: [], completed: false, dispose: () => undefined };
  sub.dispose = client.subscribe(
    { query, variables },
    {
      next: (value) => sub.results.push(value),
      error: (error) => sub.errors.push(error),
      complete: () => (sub.completed = true),
    },
  );
  // graphql-ws acknowledges nothing per subscription: a round trip on the same socket orders after it.
  await new Promise((r) => setTimeout(r, 150));
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
