/**
 * `npm run bench -- --events`: how long an event takes from its commit to a webhook receiver and to a
 * graphql-ws subscriber, on the service as deployed (production mode, SQLite, default polls unless the
 * environment sets WEBHOOK_POLL_MS / SUBSCRIPTION_POLL_MS). Orders are placed one at a time at a steady
 * pace (not a load test: the lag is what a quiet service shows); each event's `createdAt` (set in the
 * transaction that commits it) is compared with the moment the receiver and the subscriber got it, on
 * the same machine clock.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { WebSocket } from 'ws';
import { createClient } from 'graphql-ws';
import { decodeEventId } from '../src/graphql/global-id.js';

export interface EventLagResult {
  orders: number;
  webhook: number[];
  subscriber: number[];
  /** Deliveries whose signature did not verify (should be 0). */
  badSignatures: number;
}

/** Places an order every `intervalMs` for `seconds` and records both lags, in ms. */
export async function measureEventLag(baseUrl: string, key: string, seconds: number, intervalMs = 50): Promise<EventLagResult> {
  const webhookLag = new Map<number, number>();
  const subscriberLag = new Map<number, number>();
  let badSignatures = 0;
  let verifier: Webhook | undefined;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      try {
        const event = verifier!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as {
          id: number;
          createdAt: string;
        };
        if (!webhookLag.has(event.id)) webhookLag.set(event.id, at - Date.parse(event.createdAt));
      } catch {
        badSignatures++;
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const headers = { 'X-API-Key': key, 'Content-Type': 'application/json' };
  const api = (path: string, method = 'GET', body?: object): Promise<any> =>
    fetch(`${baseUrl}/v1${path}`, { method, headers, body: body && JSON.stringify(body) }).then(async (r) => {
      if (r.status >= 300) throw new Error(`${method} ${path} answered ${r.status}: ${await r.text()}`);
      return r.status === 204 ? null : r.json();
    });
  const hook = await api('/webhooks', 'POST', {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    events: ['order.placed'],
  });
  verifier = new Webhook(hook.secret);
  const ws = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { 'X-API-Key': key },
    retryAttempts: 0,
  });
  let subscribed!: () => void;
  const ready = new Promise<void>((resolve) => (subscribed = resolve));
  const dispose = ws.subscribe<{ events: { id: string; createdAt: string } }>(
    { query: 'subscription { events(types: ["order.placed"]) { id createdAt } }' },
    {
      next: ({ data }) => {
        // The subscription's ids are global ids (`Event:<n>`, base64url); the webhook's are the event's number.
        if (data) subscriberLag.set(decodeEventId(data.events.id), Date.now() - Date.parse(data.events.createdAt));
      },
      error: (err) => process.stderr.write(`subscription error: ${JSON.stringify(err)}\n`),
      complete: () => undefined,
    },
  );
  ws.on('connected', () => setTimeout(subscribed, 200));
  await ready;

  const pets = (await api('/pets?limit=100')) as Array<{ id: number }>;
  let orders = 0;
  const end = Date.now() + seconds * 1000;
  try {
    while (Date.now() < end) {
      const petId = pets[orders % pets.length]!.id;
      await api('/store/orders', 'POST', { petId, quantity: 1 });
      orders++;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    // Let the last events arrive (bounded).
    for (let i = 0; i < 100 && (webhookLag.size < orders || subscriberLag.size < orders); i++) await new Promise((r) => setTimeout(r, 50));
  } finally {
    dispose();
    await ws.dispose();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
    await api(`/webhooks/${hook.id}`, 'DELETE').catch(() => undefined);
  }
  return { orders, webhook: [...webhookLag.values()], subscriber: [...subscriberLag.values()], badSignatures };
}

/** The p-th percentile (nearest rank) of `xs`. */
export function percentile(xs: number[], p: number): number {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
