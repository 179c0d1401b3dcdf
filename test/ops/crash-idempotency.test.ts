/**
 * Idempotency survives a crash (docs/API.md, "Idempotency keys"): a real process placing orders under load is killed with
 * SIGKILL (twice) or stopped with SIGTERM past its grace period (once), restarted on the same database,
 * and every key that got no answer (or a 503 from the shutdown) is retried with the same payload. Each key places its order once: the orders in the database are exactly the keys answered
 * 201, the stock matches them, and no key stays 409 IN_FLIGHT beyond the request timeout.
 * On SQLite by default, on PostgreSQL when TEST_DATABASE_URL is set (`npm run test:postgres`).
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { startService, type Service } from './support.js';

const REQUEST_TIMEOUT_MS = 3000;
const WORKERS = 16;
const ROUNDS = 3;
const STOCK = 100_000;

interface Answer {
  status: number;
  body: any;
}

async function call(s: Service, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(s.url + path, {
    method,
    headers: { 'x-api-key': s.key, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function ok(s: Service, method: string, path: string, body?: unknown): Promise<any> {
  const r = await call(s, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

describe('ops: idempotency keys across a crash (SIGKILL) or a cut-off shutdown of the real process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-crash-'));
  const pg = process.env.TEST_DATABASE_URL;
  const pgName = `petstore_crash_${process.pid}_${randomBytes(3).toString('hex')}`;
  const services: Service[] = [];
  after(async () => {
    for (const s of services) {
      s.child.kill('SIGKILL');
      await s.exited;
      s.cleanup();
    }
    if (pg) await dropDatabase(pg, pgName);
    rmSync(dir, { recursive: true, force: true });
  });

  it('when the process is killed mid-load (SIGKILL, SIGTERM past the grace period, SIGKILL) and every unanswered key is retried after a restart, then each key placed exactly one order and the stock agrees', async () => {
    const databaseUrl = pg ? await createDatabase(pg, pgName) : `sqlite:${join(dir, 'petstore.db')}`;
    const env = { REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: '2000', SEED_DEMO: 'false', SHUTDOWN_GRACE_MS: '50' };
    const first = await startService(env, { databaseUrl });
    services.push(first);

    const category = await ok(first, 'POST', '/v1/categories', { name: 'Crash' });
    const pet = await ok(first, 'POST', '/v1/pets', { name: 'Phoenix', categoryId: category.id });
    await ok(first, 'PUT', `/v1/store/inventory/${pet.id}`, { quantity: STOCK });
    const account = await ok(first, 'POST', '/v1/accounts', {
      name: 'Busy shop',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1_000_000, perDay: 10_000_000 },
    });

    // Every key's payload (quantities 1..3, so the stock check weighs each order).
    const payloads = new Map<string, { petId: number; quantity: number }>();
    const answered = new Map<string, Answer>();
    // Three rounds of load, each ended while requests are in flight (the middle one by SIGTERM with a 50 ms grace
    // period, so the drain cuts requests off), each restarting on the same database.
    let service = first;
    for (let round = 0; round < ROUNDS; round++) {
      if (round > 0) {
        service = await startService(env, { databaseUrl, key: first.key });
        services.push(service);
      }
      const shop = { ...service, key: account.apiKey.key as string };
      let placed = 0;
      let stop = false;
      const worker = async (w: number) => {
        for (let i = 0; i < 500 && !stop; i++) {
          const key = `crash-${round}-${w}-${i}`;
          payloads.set(key, { petId: pet.id, quantity: 1 + ((w + i) % 3) });
          try {
            const r = await call(shop, 'POST', '/v1/store/orders', payloads.get(key), { 'idempotency-key': key });
            answered.set(key, r);
            if (r.status === 201) placed++;
          } catch {
            return; // the process died with this request in flight: the key is unanswered
          }
        }
      };
      const load = Array.from({ length: WORKERS }, (_, w) => worker(w));
      for (let i = 0; i < 300 && placed < 30; i++) await new Promise((r) => setTimeout(r, 20));
      service.child.kill(round === 1 ? 'SIGTERM' : 'SIGKILL');
      stop = true;
      await Promise.all(load);
      await service.exited;
      assert.ok(placed > 0, `round ${round}: no order was placed before the kill`);
    }
    // A shutdown may refuse what it could not finish with 503 UNAVAILABLE; that key is retried like an unanswered one.
    for (const [key, r] of answered) {
      if (r.status === 503 && r.body.code === 'UNAVAILABLE') answered.delete(key);
      else assert.equal(r.status, 201, `${key}: ${JSON.stringify(r.body)}`);
    }

    const second = await startService(env, { databaseUrl, key: first.key });
    services.push(second);
    const retrying = { ...second, key: account.apiKey.key as string };
    const unanswered = [...payloads.keys()].filter((k) => !answered.has(k));
    assert.ok(unanswered.length > 0, 'the kill left no request unanswered');
    const restartedAt = Date.now();
    await Promise.all(
      unanswered.map(async (key) => {
        // Bounded: an abandoned claim frees its key within the request timeout.
        for (let attempt = 0; attempt < 100; attempt++) {
          const r = await call(retrying, 'POST', '/v1/store/orders', payloads.get(key), { 'idempotency-key': key });
          if (r.status !== 409 || r.body.code !== 'IDEMPOTENCY_KEY_IN_FLIGHT') {
            assert.equal(r.status, 201, `${key}: ${JSON.stringify(r.body)}`);
            answered.set(key, r);
            return;
          }
          assert.ok(Date.now() - restartedAt < REQUEST_TIMEOUT_MS + 5000, `${key} still answers 409 IN_FLIGHT after the request timeout`);
          await new Promise((r) => setTimeout(r, 250));
        }
        assert.fail(`${key} was never answered`);
      }),
    );

    // Every key answered 201 exactly once in effect: one order per key, no other orders.
    const orders: Array<{ id: number; quantity: number }> = [];
    for (let cursor: string | undefined, page = 0; page < 100; page++) {
      const res = await fetch(`${second.url}/v1/store/orders?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, {
        headers: { 'x-api-key': second.key },
      });
      assert.equal(res.status, 200);
      orders.push(...((await res.json()) as typeof orders));
      const next = /<[^>]*[?&]cursor=([^&>]+)[^>]*>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
      if (!next) break;
      cursor = decodeURIComponent(next[1]!);
    }
    const answeredIds = new Set([...answered.values()].map((r) => r.body.id as number));
    assert.equal(answeredIds.size, payloads.size, 'two keys were answered with the same order');
    assert.equal(orders.length, payloads.size, `${orders.length} orders in the database for ${payloads.size} keys`);
    assert.deepEqual(new Set(orders.map((o) => o.id)), answeredIds);
    const sold = orders.reduce((sum, o) => sum + o.quantity, 0);
    const stock = await ok(second, 'GET', `/v1/store/inventory/${pet.id}`);
    assert.equal(stock.quantity, STOCK - sold, 'the stock does not match the orders');
    for (const [key, r] of answered) assert.equal(r.body.quantity, payloads.get(key)!.quantity, key);
  });
});
