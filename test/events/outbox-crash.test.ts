/**
 * The outbox under a crash: a service killed with SIGKILL while orders are being placed leaves no
 * order without its `order.placed` event and no event without its order (they commit together).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { projectPath } from '../../src/project-path.js';
import { Client, startApp } from '../helpers/app.js';
import { walk } from '../rest/support.js';
import { eventually } from './support.js';

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

describe('outbox: a crash never separates a change from its event', () => {
  it('when the service is killed (SIGKILL) while orders are placed, then after a restart every order has its order.placed event and every event its order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-outbox-kill-'));
    const port = await freePort();
    const key = `psk_${randomBytes(24).toString('base64url')}`;
    const database = `sqlite:${join(dir, 'petstore.db')}`;
    const child = spawn(process.execPath, [projectPath('dist/src/main.js')], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: database, ADMIN_API_KEY: key },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    let restarted: Awaited<ReturnType<typeof startApp>> | undefined;
    try {
      const staff = new Client(`http://127.0.0.1:${port}`, key);
      await eventually('the service to listen', () => staff.get('/v1/account', { skipContract: true }).then((r) => r.status === 200).catch(() => false), 50, 200);
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
          const res = await staff.post('/v1/store/orders', { petId: pets[(c + i) % pets.length], quantity: 1 }, { skipContract: true }).catch(() => null);
          if (!res) return;
          if (res.status === 201) placed++;
        }
      });
      await eventually('orders under way', () => placed >= 40, 10, 1000);
      child.kill('SIGKILL');
      await exited;
      await Promise.all(clients);

      restarted = await startApp({ databaseUrl: database, env: { ADMIN_API_KEY: key } });
      const orders = (await walk(restarted.admin, '/v1/store/orders?limit=100')).items.map((o) => o.id).sort((a, b) => a - b);
      const events = (await walk(restarted.admin, '/v1/events?types=order.placed&limit=100')).items.map((e) => e.data.id).sort((a, b) => a - b);
      assert.ok(orders.length >= 40, `${orders.length} orders committed before the kill`);
      assert.deepEqual(events, orders, 'the same orders in the orders table and in the outbox');
      const stock = await Promise.all(pets.map(async (id) => (await restarted!.admin.get(`/v1/store/inventory/${id}`)).body.quantity as number));
      assert.equal(stock.reduce((a, b) => a + b, 0), 4000 - orders.length, 'and the stock they took');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await restarted?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
