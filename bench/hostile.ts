/**
 * The bench's hostile rows: what one customer's abuse does to the others.
 *
 * - Hanging webhook (`npm run bench -- --events`): another account's webhook lag while a free account's endpoint
 *   never answers (a receiver that accepts the connection and stays silent until the 10 s timeout), subscribed to
 *   `inventory.changed` (so everyone's orders feed its queue) and `order.placed`, and sent 40 `redeliver` requests.
 *   The polite measurement (measureEventLag) runs beside it unchanged; its webhook p99 is the figure (target: the
 *   polite one, ≤ 250 ms).
 * - Heavy subscriptions (`--events`): another customer's `GET /v1/pets?limit=5` median, alone and then while one
 *   business account holds 20 heavy `inventoryChanged` subscriptions (15 aliased `pets(first: 100)` under the pet's
 *   category) and places its own orders on that pet at 2 per second. Each pushed answer is charged, so the account's
 *   budget runs out and its subscriptions end with RATE_LIMITED; like an attacker, it subscribes again a second
 *   later. Target: the reader's median at most twice its median alone.
 * - Free-document flood (every `npm run bench`, or `--flood` alone): FLOOD_CLIENTS free accounts each send, one after
 *   another, a GraphQL document of reads that cost no points (`rateLimit { plan }` repeated FLOOD_FIELDS times, a new
 *   operation name each time so no cache helps) while another customer reads. Target: that customer's read median at
 *   most twice its median alone. Beside it, the control: as many clients sending plain REST reads. The clients run on
 *   a worker thread, as an attacker runs on a machine of its own: only the service's work is between them and the reader.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { WebSocket } from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { measureEventLag, percentile, type EventLagResult } from './events.js';
import { globalId } from '../src/graphql/global-id.js';

export interface HostileWebhookResult extends EventLagResult {
  /** The answers to the 40 redeliveries, by status. */
  redeliveries: Record<number, number>;
}

export async function measureBesideHangingWebhook(
  baseUrl: string,
  politeKey: string,
  hostileKey: string,
  seconds: number,
): Promise<HostileWebhookResult> {
  // Never answers: each attempt to it lasts the whole timeout.
  const hanging: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  const api = async (path: string, method = 'GET', body?: object): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: { 'X-API-Key': hostileKey, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const created = await api('/webhooks', 'POST', {
    url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hooks`,
    events: ['inventory.changed', 'order.placed'],
  });
  if (created.status !== 201)
    throw new Error(`the hostile endpoint: POST /v1/webhooks answered ${created.status}: ${JSON.stringify(created.body)}`);
  const hook = created.body as { id: number };
  try {
    // Two deliveries of its own to redeliver: one order (order.placed and inventory.changed).
    const [pet] = (await api('/pets?limit=1')).body as Array<{ id: number }>;
    const order = await api('/store/orders', 'POST', { petId: pet!.id, quantity: 1 });
    if (order.status !== 201) throw new Error(`the hostile order answered ${order.status}: ${JSON.stringify(order.body)}`);
    let deliveries: Array<{ id: number }> = [];
    for (let i = 0; i < 100 && deliveries.length < 2; i++) {
      deliveries = (await api(`/webhooks/${hook.id}/deliveries`)).body;
      if (deliveries.length < 2) await new Promise((r) => setTimeout(r, 50));
    }
    if (!deliveries.length) throw new Error('the hostile endpoint got no delivery to redeliver');
    const redeliveries: Record<number, number> = {};
    for (let i = 0; i < 40; i++) {
      const { status } = await api(`/webhooks/${hook.id}/deliveries/${deliveries[i % deliveries.length]!.id}/redeliver`, 'POST');
      redeliveries[status] = (redeliveries[status] ?? 0) + 1;
    }
    return { ...(await measureEventLag(baseUrl, politeKey, seconds)), redeliveries };
  } finally {
    await api(`/webhooks/${hook.id}`, 'DELETE').catch(() => undefined);
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
  }
}

export interface HostileSubscriptionResult {
  /** The reader's latencies (ms), alone and beside the subscriptions. */
  alone: number[];
  beside: number[];
  orders: number;
  /** Answers pushed to the hostile account, their bytes (as JSON), and the points they were charged. */
  pushes: number;
  bytes: number;
  charged: number;
  /** Subscriptions ended by RATE_LIMITED, and subscribes refused (at start or at connection_init). */
  exhausted: number;
  refused: number;
}

const SUBSCRIPTIONS = 20;
const EVENTS_PER_SECOND = 2;

const heavyDocument = (): string => {
  const aliases = Array.from(
    { length: 15 },
    (_, i) => `a${i}: pets(first: 100) { edges { node { id name status categoryId category { name } inventory { quantity status } } } }`,
  ).join(' ');
  return `subscription($petId: ID) { inventoryChanged(petId: $petId) { pet { category { ${aliases} } } } }`;
};

/** Reads `GET /v1/pets?limit=5` one after another for `seconds`; the latency of each, in ms. */
async function reads(baseUrl: string, key: string, seconds: number): Promise<number[]> {
  const lags: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    const t = performance.now();
    const res = await fetch(`${baseUrl}/v1/pets?limit=5`, { headers: { 'X-API-Key': key } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the reader's GET /v1/pets?limit=5 answered ${res.status}`);
    lags.push(performance.now() - t);
    // A customer reading, not a load test: a few reads a second.
    await new Promise((r) => setTimeout(r, 100));
  }
  return lags;
}

export async function measureBesideHeavySubscriptions(
  baseUrl: string,
  adminKey: string,
  readerKey: string,
  seconds: number,
): Promise<HostileSubscriptionResult> {
  const created = await fetch(`${baseUrl}/v1/accounts`, {
    method: 'POST',
    headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `Bench hostile subscriber ${Date.now()}`, role: 'customer', plan: 'business' }),
  });
  const account = (await created.json()) as { apiKey?: { key: string } };
  if (created.status !== 201 || !account.apiKey)
    throw new Error(`POST /v1/accounts answered ${created.status}: ${JSON.stringify(account)}`);
  const key = account.apiKey.key;
  const api = async (path: string, method = 'GET', body?: object) => {
    const res = await fetch(`${baseUrl}/v1${path}`, {
      method,
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: body && JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  const [pet] = (await api('/pets?limit=1')).body as Array<{ id: number }>;
  const petId = globalId('Pet', pet!.id);

  const alone = await reads(baseUrl, readerKey, seconds);

  const result: HostileSubscriptionResult = { alone, beside: [], orders: 0, pushes: 0, bytes: 0, charged: 0, exhausted: 0, refused: 0 };
  const ws: Client = createClient({
    url: `${baseUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    connectionParams: { 'X-API-Key': key },
    retryAttempts: 0,
  });
  let stopped = false;
  const disposers = new Set<() => void>();
  const document = heavyDocument();
  const start = () => {
    if (stopped) return;
    const dispose = ws.subscribe(
      { query: document, variables: { petId } },
      {
        next: (value) => {
          result.pushes++;
          result.bytes += JSON.stringify(value).length;
          result.charged += (value.extensions as { cost?: { charged: number } } | undefined)?.cost?.charged ?? 0;
          if ((value.errors?.[0]?.extensions as { code?: string } | undefined)?.code === 'RATE_LIMITED') result.exhausted++;
        },
        error: () => {
          result.refused++;
          disposers.delete(dispose);
          setTimeout(start, 1000);
        },
        complete: () => {
          disposers.delete(dispose);
          setTimeout(start, 1000);
        },
      },
    );
    disposers.add(dispose);
  };
  for (let i = 0; i < SUBSCRIPTIONS; i++) start();
  await new Promise((r) => setTimeout(r, 500));

  const end = Date.now() + seconds * 1000;
  const orders = (async () => {
    while (Date.now() < end) {
      const placed = await api('/store/orders', 'POST', { petId: pet!.id, quantity: 1 });
      if (placed.status === 201) result.orders++;
      await new Promise((r) => setTimeout(r, 1000 / EVENTS_PER_SECOND));
    }
  })();
  try {
    result.beside = await reads(baseUrl, readerKey, seconds);
    await orders;
  } finally {
    stopped = true;
    for (const dispose of disposers) dispose();
    await ws.dispose();
  }
  return result;
}

/** The row's cells: the medians, their ratio, and whether the target (≤ 2×) is met. */
export function hostileReadRow(r: HostileSubscriptionResult): string {
  const alone = percentile(r.alone, 50);
  const beside = percentile(r.beside, 50);
  const ratio = beside / alone;
  return `| another customer's GET /v1/pets?limit=5, beside ${SUBSCRIPTIONS} heavy subscriptions at ${EVENTS_PER_SECOND} events/s | ${alone.toFixed(1)} | ${beside.toFixed(1)} | ${ratio.toFixed(2)}× | ≤ 2× ${ratio <= 2 ? '(met)' : '(**missed**)'} |`;
}

/** Clients of the free-document flood, each a free account of its own, and the fields of each document. */
export const FLOOD_CLIENTS = 10;
export const FLOOD_FIELDS = 239;

export interface FloodResult {
  /** The reader's latencies (ms): alone, beside the flood, and beside the same clients sending plain reads. */
  alone: number[];
  beside: number[];
  besidePlain: number[];
  /** The flood's documents sent, and their answers by status. */
  sent: number;
  statuses: Record<number, number>;
}

/** A document of FLOOD_FIELDS free reads under a name of its own, so that no document cache knows it. */
export function floodDocument(n: number): string {
  return `query q${n} { ${'rateLimit { plan } '.repeat(FLOOD_FIELDS)}}`;
}

/**
 * The reader alone, then beside FLOOD_CLIENTS free accounts sending plain reads one after another (the control: what
 * as many ordinary clients cost it), then beside as many other free accounts sending flood documents.
 */
export async function measureBesideFreeDocumentFlood(
  baseUrl: string,
  adminKey: string,
  readerKey: string,
  seconds: number,
): Promise<FloodResult> {
  const freeKeys = async () => {
    const keys: string[] = [];
    for (let i = 0; i < FLOOD_CLIENTS; i++) {
      const created = await fetch(`${baseUrl}/v1/accounts`, {
        method: 'POST',
        headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: `Bench flood ${i} ${Date.now()} ${Math.random()}`, role: 'customer', plan: 'free' }),
      });
      const account = (await created.json()) as { apiKey?: { key: string } };
      if (created.status !== 201 || !account.apiKey)
        throw new Error(`POST /v1/accounts answered ${created.status}: ${JSON.stringify(account)}`);
      keys.push(account.apiKey.key);
    }
    return keys;
  };
  const [plainKeys, floodKeys] = [await freeKeys(), await freeKeys()];
  const result: FloodResult = { alone: [], beside: [], besidePlain: [], sent: 0, statuses: {} };
  /**
   * The reader's latencies while each key sends its kind of request, one after another. The clients run on a thread
   * of their own: on the reader's event loop, their own JavaScript (fetch, the 4 kB bodies) would be timed as the
   * service's, the more so the faster the service refuses them.
   */
  const besideClients = async (keys: string[], kind: ClientsJob['kind']) => {
    const job: ClientsJob = { baseUrl, keys, kind, firstName: Date.now() };
    const clients = new Worker(new URL(import.meta.url), { workerData: { [CLIENTS_JOB]: job } });
    const done = new Promise<Record<number, number>>((resolve, reject) => {
      clients.once('message', resolve);
      clients.once('error', reject);
      clients.once('exit', (code) => reject(new Error(`the flood's clients exited (${code}) before they reported`)));
    });
    // A thread that fails to start rejects `done` before it is ever online.
    await Promise.race([new Promise((resolve) => clients.once('online', resolve)), done]);
    try {
      return await reads(baseUrl, readerKey, seconds);
    } finally {
      clients.postMessage('stop');
      const statuses = await done;
      if (kind === 'flood')
        for (const [status, n] of Object.entries(statuses)) {
          result.sent += n;
          result.statuses[Number(status)] = (result.statuses[Number(status)] ?? 0) + n;
        }
    }
  };
  result.alone = await reads(baseUrl, readerKey, seconds);
  result.besidePlain = await besideClients(plainKeys, 'plain');
  result.beside = await besideClients(floodKeys, 'flood');
  return result;
}

/** What the clients' thread is given: where, whose keys, and what each key sends (`flood`: a new flood document each time). */
interface ClientsJob {
  baseUrl: string;
  keys: string[];
  kind: 'plain' | 'flood';
  /** The first flood document's operation number. */
  firstName: number;
}
const CLIENTS_JOB = 'petstoreBenchClients';

/** On the clients' thread: each key sends one request after another until the reader is done; posts the answers by status. */
async function runClients({ baseUrl, keys, kind, firstName }: ClientsJob): Promise<void> {
  let stopped = false;
  parentPort!.once('message', () => {
    stopped = true;
  });
  let n = firstName;
  const statuses: Record<number, number> = {};
  const send = (key: string) =>
    kind === 'plain'
      ? fetch(`${baseUrl}/v1/pets?limit=5`, { headers: { 'X-API-Key': key } })
      : fetch(`${baseUrl}/graphql`, {
          method: 'POST',
          headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
          body: JSON.stringify({ query: floodDocument(n++) }),
        });
  await Promise.all(
    keys.map(async (key) => {
      while (!stopped) {
        const res = await send(key).catch(() => null);
        await res?.arrayBuffer();
        const status = res?.status ?? 0;
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  parentPort!.postMessage(statuses);
  parentPort!.close();
}

if (!isMainThread && workerData?.[CLIENTS_JOB]) await runClients(workerData[CLIENTS_JOB] as ClientsJob);

/** The flood's rows on one service (`where`): the reader's medians and their ratio, against the target (≤ 2×) or for information. */
export function floodRow(r: FloodResult, where: string, target: boolean): string {
  const alone = percentile(r.alone, 50);
  const beside = percentile(r.beside, 50);
  const ratio = beside / alone;
  const plain = percentile(r.besidePlain, 50);
  const verdict = target ? `≤ 2× ${ratio <= 2 ? '(met)' : '(**missed**)'}` : '(information)';
  return [
    `| ${where}: another customer's GET /v1/pets?limit=5, beside ${FLOOD_CLIENTS} clients sending free documents (${FLOOD_FIELDS} × rateLimit) | ${alone.toFixed(1)} | ${beside.toFixed(1)} | ${ratio.toFixed(2)}× | ${verdict} |`,
    `| ${where}, control: the same read beside ${FLOOD_CLIENTS} clients sending GET /v1/pets?limit=5 | ${alone.toFixed(1)} | ${plain.toFixed(1)} | ${(plain / alone).toFixed(2)}× | (information) |`,
  ].join('\n');
}
