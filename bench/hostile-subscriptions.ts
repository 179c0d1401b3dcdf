/**
 * `npm run bench -- --events`, the hostile subscription row: another customer's `GET /v1/pets?limit=5`
 * median, alone and then while one business account holds 20 heavy `inventoryChanged` subscriptions
 * (15 aliased `pets(first: 100)` under the pet's category: 16 points over HTTP) and places its own
 * orders on that pet at 2 per second. Each pushed answer is charged (15 points), so the account's budget
 * runs out and its subscriptions end with RATE_LIMITED; like an attacker, it subscribes again a second
 * later. Target: the reader's median at most twice its median alone.
 */
import { WebSocket } from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { percentile } from './events.js';

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

export async function measureBesideHeavySubscriptions(baseUrl: string, adminKey: string, readerKey: string, seconds: number): Promise<HostileSubscriptionResult> {
  const created = await fetch(`${baseUrl}/v1/accounts`, {
    method: 'POST',
    headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `Bench hostile subscriber ${Date.now()}`, role: 'customer', plan: 'business' }),
  });
  const account = (await created.json()) as { apiKey?: { key: string } };
  if (created.status !== 201 || !account.apiKey) throw new Error(`POST /v1/accounts answered ${created.status}: ${JSON.stringify(account)}`);
  const key = account.apiKey.key;
  const api = async (path: string, method = 'GET', body?: object) => {
    const res = await fetch(`${baseUrl}/v1${path}`, { method, headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  const [pet] = (await api('/pets?limit=1')).body as Array<{ id: number }>;
  const petId = String(pet!.id);

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
