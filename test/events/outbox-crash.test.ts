/**
 * The outbox under a crash: a service killed with SIGKILL while orders are being placed leaves no
 * order without its `order.placed` event and no event without its order (they commit together).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, startApp } from '../helpers/app.js';
import { walk } from '../rest/support.js';
import { startService } from '../ops/support.js';
import { eventually } from './support.js';

describe('outbox: a crash never separates a change from its event', () => {
  it('when the service is killed (SIGKILL) while orders are placed, then after a restart every order has its order.placed event and every event its order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-outbox-kill-'));
    const database = `sqlite:${join(dir, 'petstore.db')}`;
    const service = await startService({}, { databaseUrl: database });
    const { child, key } = service;
    let restarted: Awaited<ReturnType<typeof startApp>> | undefined;
    try {
      const staff = new Client(service.url, key);
      const cat = (await staff.post('/v1/categories', { name: 'Crash' })).body;
      const pets: number[] = [];
      for (let i = 0; i < 4; i++) {
        const pet = (await staff.post('/v1/pets', { name: `Crash ${i}`, categoryId: cat.id })).body;
        await staff.put(`/v1/store/inventory/${pet.id}`, { quantity: 1000 });
        pets.push(pet.id);
      }
      // Orders keep coming from 8 clients until the process dies under them.
      let placed = 0;
      const clients = Array.from({ length: 8 }, async (_, c) => {
        for (let i = 0; i < 500; i++) {
          const res = await staff
            .post('/v1/store/orders', { petId: pets[(c + i) % pets.length], quantity: 1 }, { skipContract: true })
            .catch(() => null);
          if (!res) return;
          if (res.status === 201) placed++;
        }
      });
      await eventually('orders under way', () => placed >= 40, 10, 1000);
      child.kill('SIGKILL');
      await service.exited;
      await Promise.all(clients);

      restarted = await startApp({ databaseUrl: database, env: { ADMIN_API_KEY: key } });
      const orders = (await walk(restarted.admin, '/v1/store/orders?limit=100')).items.map((o) => o.id).sort((a, b) => a - b);
      const events = (await walk(restarted.admin, '/v1/events?types=order.placed&limit=100')).items
        .map((e) => e.data.id)
        .sort((a, b) => a - b);
      assert.ok(orders.length >= 40, `${orders.length} orders committed before the kill`);
      assert.deepEqual(events, orders, 'the same orders in the orders table and in the outbox');
      const stock = await Promise.all(
        pets.map(async (id) => (await restarted!.admin.get(`/v1/store/inventory/${id}`)).body.quantity as number),
      );
      assert.equal(
        stock.reduce((a, b) => a + b, 0),
        4000 - orders.length,
        'and the stock they took',
      );
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await restarted?.close();
      service.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
