/**
 * `node dist/bench/webhook-statements.js [orders]`: SQL statements and CPU per order placed while one
 * webhook endpoint receives every order.placed, worker included (its relay, lanes and records), on an
 * in-process app over a fresh SQLite file; orders one at a time, 50 ms apart, as `--events` places them.
 * Counts knex's `query` events (the ORM's and the plain-SQL writer's statements alike), by SQL shape.
 */
import 'reflect-metadata';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';

const orders = Number(process.argv[2] ?? 50);
const dir = mkdtempSync(join(tmpdir(), 'petstore-hook-sql-'));
const adminKey = `psk_${randomBytes(24).toString('base64url')}`;
const config = loadConfig({
  NODE_ENV: 'production',
  DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
  LOG_LEVEL: 'silent',
  HOST: '127.0.0.1',
  SEED_DEMO: 'false',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  ADMIN_API_KEY: adminKey,
});
const app = await createApp(config, { announce: () => undefined });
const { url } = await app.listen(0, '127.0.0.1');
let received = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    received++;
    res.end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
try {
  const call = async (path: string, body: unknown, method = 'POST', key = adminKey) => {
    const res = await fetch(url + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return res.json() as Promise<any>;
  };
  const category = await call('/v1/categories', { name: 'Counted' });
  const pet = await call('/v1/pets', { name: 'Counted', categoryId: category.id });
  await call(`/v1/store/inventory/${pet.id}`, { quantity: orders * 2 }, 'PUT');
  const customer = (await call('/v1/accounts', { name: 'Counted', role: 'customer', plan: 'pro' })).apiKey.key as string;
  await call('/v1/webhooks', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/h`, events: ['order.placed'] }, 'POST', customer);
  await new Promise((r) => setTimeout(r, 500));
  let statements = 0;
  const shapes = new Map<string, number>();
  app.orm.em.getConnection().getKnex().client.on('query', (q: { sql: string }) => {
    statements++;
    const shape = q.sql.replace(/\s+/g, ' ').slice(0, 60);
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  });
  const cpu = process.cpuUsage();
  for (let i = 0; i < orders; i++) {
    await call('/v1/store/orders', { petId: pet.id, quantity: 1 }, 'POST', customer);
    await new Promise((r) => setTimeout(r, 50));
  }
  for (let i = 0; i < 500 && received < orders; i++) await new Promise((r) => setTimeout(r, 20));
  const used = process.cpuUsage(cpu);
  process.stdout.write(
    `${orders} orders, ${received} delivered: ${(statements / orders).toFixed(1)} SQL statements and ${((used.user + used.system) / 1000 / orders).toFixed(2)} ms of CPU per order (service and worker)\n`,
  );
  for (const [shape, n] of [...shapes].sort((a, b) => b[1] - a[1])) process.stdout.write(`${(n / orders).toFixed(2)}  ${shape}\n`);
} finally {
  await app.close();
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
}
