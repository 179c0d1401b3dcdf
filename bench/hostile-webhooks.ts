/**
 * `npm run bench -- --events`, the hostile webhook row: another account's webhook lag while a free
 * account's endpoint never answers (a receiver that accepts the connection and stays silent until the
 * 10 s timeout), subscribed to `inventory.changed` (so everyone's orders feed its queue) and
 * `order.placed`, and sent 40 `redeliver` requests. The polite measurement (measureEventLag) runs
 * beside it unchanged; its webhook p99 is the figure (target: the polite one, ≤ 250 ms).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { measureEventLag, type EventLagResult } from './events.js';

export interface HostileWebhookResult extends EventLagResult {
  /** The answers to the 40 redeliveries, by status. */
  redeliveries: Record<number, number>;
}

export async function measureBesideHangingWebhook(baseUrl: string, politeKey: string, hostileKey: string, seconds: number): Promise<HostileWebhookResult> {
  // Never answers: each attempt to it lasts the whole timeout.
  const hanging: Server = createServer(() => undefined);
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  const api = async (path: string, method = 'GET', body?: object): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${baseUrl}/v1${path}`, { method, headers: { 'X-API-Key': hostileKey, 'Content-Type': 'application/json' }, body: body && JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  const created = await api('/webhooks', 'POST', { url: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hooks`, events: ['inventory.changed', 'order.placed'] });
  if (created.status !== 201) throw new Error(`the hostile endpoint: POST /v1/webhooks answered ${created.status}: ${JSON.stringify(created.body)}`);
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
