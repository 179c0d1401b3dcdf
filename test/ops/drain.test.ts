/**
 * Shutdown drains keep-alive clients (docs/OPERATIONS.md, "Health and shutdown"): on SIGTERM every response carries `Connection: close`,
 * idle keep-alive sockets close after a short idle grace (never while a request is on them), in-flight work
 * finishes or is refused with 503 UNAVAILABLE before the database closes, never a 500, and nothing is
 * half-written.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import { encodeCursor } from '../../src/domain/pagination.js';
import { heldRequest, RawConnection, startService, type Service } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';

interface Answer {
  status: number;
  connection: string | undefined;
  body: any;
}

async function send(agent: Agent, s: Service, method: string, path: string, body?: unknown, key = s.key): Promise<Answer> {
  const { origin } = new URL(s.url);
  const res = await agent.request({
    origin,
    path,
    method: method as 'GET',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  const connection = res.headers.connection;
  return {
    status: res.statusCode,
    connection: Array.isArray(connection) ? connection.join(',') : connection,
    body: text ? JSON.parse(text) : undefined,
  };
}

async function ok(agent: Agent, s: Service, method: string, path: string, body?: unknown) {
  const r = await send(agent, s, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/**
 * A shop to put load on: a pet with `stock` in a category named `label`, and the key of an enterprise
 * customer (`label` shop) whose limits the load never reaches.
 */
async function shop(agent: Agent, s: Service, { label, petName, stock }: { label: string; petName: string; stock: number }) {
  const category = await ok(agent, s, 'POST', '/v1/categories', { name: label });
  const pet = await ok(agent, s, 'POST', '/v1/pets', { name: petName, categoryId: category.id });
  await ok(agent, s, 'PUT', `/v1/store/inventory/${pet.id}`, { quantity: stock });
  const account = await ok(agent, s, 'POST', '/v1/accounts', {
    name: `${label} shop`,
    role: 'customer',
    plan: 'enterprise',
    limits: { perMinute: 1_000_000, perDay: 10_000_000 },
  });
  return { pet: pet as { id: number }, shopKey: account.apiKey.key as string };
}

/** Resolves true when `done` settles first, false after `ms` (a bound for the test, not a speed check). */
const within = (done: Promise<unknown>, ms: number) =>
  Promise.race([done.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);

describe('ops: SIGTERM drains keep-alive clients', () => {
  it('when SIGTERM arrives, then idle keep-alive sockets close after the short idle grace while a request is still in flight, and its answer carries Connection: close', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '60000' });
    const agent = new Agent({ connections: 4, keepAliveTimeout: 60_000, pipelining: 1 });
    let disconnects = 0;
    agent.on('disconnect', () => disconnects++);
    try {
      // Four keep-alive sockets in the agent's pool, and one raw one, all idle.
      const warm = await Promise.all([0, 1, 2, 3].map(() => send(agent, s, 'GET', '/v1/categories')));
      assert.ok(warm.every((r) => r.status === 200 && r.connection === 'keep-alive'));
      const idle = await RawConnection.open(s.url);
      idle.send('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      assert.equal((await idle.response()).headers.connection, 'keep-alive');
      const held = await heldRequest(s, '/v1/categories', JSON.stringify({ name: 'Drained' }));

      s.child.kill('SIGTERM');
      await s.logLine('shutdown: readiness 503');
      // The grace period is a minute and a request is in flight: the idle sockets still close now.
      assert.ok(await within(idle.untilClosed(), 10_000), 'the idle keep-alive socket stayed open during the drain');
      for (let i = 0; i < 200 && disconnects < warm.length; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(disconnects, warm.length, 'pooled keep-alive sockets stayed open during the drain');
      assert.equal(s.child.exitCode, null, 'the process should still be draining the held request');

      held.conn.send(held.rest);
      const [created] = await held.conn.responses(1);
      assert.equal(created!.status, 201, created!.body);
      assert.equal(created!.headers.connection, 'close');
      assert.equal(await s.exited, 0, s.output());
    } finally {
      await agent.close().catch(() => undefined);
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  it('when a client is still sending its request during the drain, then its socket is not closed as idle, and the request is answered with Connection: close', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '60000' });
    const conn = await RawConnection.open(s.url);
    try {
      // One answer first: the process is serving, its signal handlers in place, before the signal is sent.
      conn.send('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      assert.equal((await conn.response()).headers.connection, 'keep-alive');
      conn.discard();
      // The next request line and its headers trickle in over 2.5 s, more than twice the idle grace of a second, a
      // piece every 250 ms (a quarter of the grace: a slow machine has room to be late).
      conn.send('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      s.child.kill('SIGTERM');
      const drained = s.logLine('shutdown: readiness 503');
      for (let i = 0; i < 10; i++) {
        await new Promise((r) => setTimeout(r, 250));
        assert.ok(
          !conn.socket.destroyed && !conn.error,
          `the socket was closed while its request was arriving (after ${(i + 1) * 250} ms)`,
        );
        conn.send(`X-Slow-${i}: ${i}\r\n`);
      }
      await drained;
      conn.send('\r\n');
      const answer = await conn.response();
      assert.equal(answer.status, 200, answer.body);
      assert.equal(answer.headers.connection, 'close');
      assert.equal(await s.exited, 0, s.output());
    } finally {
      conn.socket.destroy();
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  it('when a WebSocket client never answers the close frame, then SIGTERM still starts the HTTP drain within about a second', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '2000' });
    const socket = connect(Number(new URL(s.url).port), '127.0.0.1');
    try {
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        `GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\n` +
          'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n',
      );
      await new Promise((resolve) => socket.once('data', resolve));
      // A masked text frame with connection_init; then the client goes silent (it reads, never answers).
      const payload = Buffer.from(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': s.key } }));
      const mask = randomBytes(4);
      socket.write(
        Buffer.concat([
          Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]),
          mask,
          payload.map((b, i) => b ^ mask[i % 4]!),
        ]),
      );
      await new Promise((r) => setTimeout(r, 300));
      const signalled = Date.now();
      s.child.kill('SIGTERM');
      await s.logLine('shutdown: readiness 503');
      const waited = Date.now() - signalled;
      assert.ok(waited < 2500, `the HTTP drain started ${waited} ms after SIGTERM: a silent WebSocket client held it`);
      assert.ok(await within(s.exited, 10_000), 'the process did not exit');
    } finally {
      socket.destroy();
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  it('when keep-alive load continues past SHUTDOWN_GRACE_MS, then no answer is a 500, answers during the drain carry Connection: close, the unfinished request gets 503 UNAVAILABLE, and nothing is half-written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-drain-'));
    const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
    const s = await startService({ SHUTDOWN_GRACE_MS: '1000' }, { databaseUrl });
    const agent = new Agent({ connections: 8, keepAliveTimeout: 60_000, pipelining: 1 });
    let restarted: Service | undefined;
    try {
      const { pet, shopKey } = await shop(agent, s, { label: 'Load', petName: 'Busy', stock: 100_000 });

      let shutdownSeen = false;
      const answers: Array<Answer & { sentAfterShutdown: boolean }> = [];
      const worker = async (w: number) => {
        for (let i = 0; i < 1000; i++) {
          const sentAfterShutdown = shutdownSeen;
          try {
            const r =
              (w + i) % 2 === 0
                ? await send(agent, s, 'POST', '/v1/store/orders', { petId: pet.id, quantity: 1 + (i % 3) }, shopKey)
                : await send(agent, s, 'GET', '/v1/categories', undefined, shopKey);
            answers.push({ ...r, sentAfterShutdown });
          } catch {
            return; // the server no longer takes connections
          }
        }
      };
      const load = Array.from({ length: 8 }, (_, w) => worker(w));
      // A request that never completes keeps the drain busy past the grace period.
      const stuck = await heldRequest(s, '/v1/store/orders', JSON.stringify({ petId: pet.id, quantity: 1 }));
      await new Promise((r) => setTimeout(r, 300));
      s.child.kill('SIGTERM');
      await s.logLine('shutdown: readiness 503');
      shutdownSeen = true;
      await Promise.all(load);
      const [refused] = await stuck.conn.responses(1);
      assert.equal(await s.exited, 0, s.output());

      assert.ok(answers.length > 0);
      assert.deepEqual(
        answers.filter((a) => a.status >= 500),
        [],
        'a request was answered 5xx',
      );
      const late = answers.filter((a) => a.sentAfterShutdown);
      assert.deepEqual(
        late.filter((a) => a.connection !== 'close'),
        [],
        'an answer during the drain kept the connection alive',
      );
      assert.equal(refused!.status, 503, refused!.body);
      const body = JSON.parse(refused!.body);
      assert.deepEqual([body.code, body.status], ['UNAVAILABLE', 503]);
      assert.equal(body.requestId, refused!.headers['x-request-id']);
      assert.ok(refused!.headers['retry-after']);

      // Nothing half-written: every order answered 201 exists, and the stock matches the orders.
      restarted = await startService({}, { databaseUrl, key: s.key });
      const orders: Array<{ id: number; quantity: number }> = [];
      for (let after = 0, page = 0; page < 200; page++) {
        const batch = (await ok(
          agent,
          restarted,
          'GET',
          `/v1/store/orders?limit=100${after ? `&cursor=${encodeURIComponent(encodeCursor(after))}` : ''}`,
        )) as typeof orders;
        orders.push(...batch);
        if (batch.length < 100) break;
        after = batch[batch.length - 1]!.id;
      }
      const ids = new Set(orders.map((o) => o.id));
      for (const a of answers.filter((x) => x.status === 201))
        assert.ok(ids.has(a.body.id), `order ${a.body.id} was answered 201 but is not stored`);
      const stock = await ok(agent, restarted, 'GET', `/v1/store/inventory/${pet.id}`);
      assert.equal(stock.quantity, 100_000 - orders.reduce((sum, o) => sum + o.quantity, 0));
    } finally {
      await agent.close().catch(() => undefined);
      for (const x of [s, restarted]) x?.child.kill('SIGKILL');
      s.cleanup();
      restarted?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('when SIGTERM arrives mid-load on 16 keep-alive clients (reads, keyed orders, GraphQL), then no request on a reused socket is reset, every answer from the signal on carries Connection: close, and every order stored was answered or replays with its key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-keepalive-'));
    const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
    const s = await startService({ SHUTDOWN_GRACE_MS: '10000' }, { databaseUrl });
    const agent = new Agent({ connections: 16, keepAliveTimeout: 60_000, pipelining: 1 });
    let restarted: Service | undefined;
    try {
      const { pet, shopKey } = await shop(agent, s, { label: 'Keep-alive', petName: 'Steady', stock: 1_000_000 });
      const { origin } = new URL(s.url);

      const answers: Array<{
        kind: string;
        status: number;
        connection?: string;
        sentAt: number;
        receivedAt: number;
        body: any;
        idempotencyKey?: string;
      }> = [];
      const failures: Array<{ kind: string; code: string; idempotencyKey?: string; client: number; request: number }> = [];
      const warm = new Set<number>();
      const client = async (c: number) => {
        for (let i = 0; i < 2000; i++) {
          const kind = ['read', 'order', 'graphql'][(c + i) % 3]!;
          const idempotencyKey = kind === 'order' ? `drain-${c}-${i}` : undefined;
          const sentAt = performance.now();
          const request =
            kind === 'read'
              ? { path: `/v1/pets/${pet.id}`, method: 'GET' }
              : kind === 'order'
                ? { path: '/v1/store/orders', method: 'POST', body: JSON.stringify({ petId: pet.id, quantity: 1 }) }
                : {
                    path: '/graphql',
                    method: 'POST',
                    body: JSON.stringify({ query: `{ pet(id: "${globalId('Pet', pet.id)}") { id name } }` }),
                  };
          try {
            const res = await agent.request({
              origin,
              ...request,
              method: request.method as 'GET',
              headers: {
                'x-api-key': shopKey,
                'content-type': 'application/json',
                ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
              },
            });
            const text = await res.body.text();
            const connection = res.headers.connection;
            const receivedAt = performance.now();
            warm.add(c);
            answers.push({
              kind,
              status: res.statusCode,
              connection: Array.isArray(connection) ? connection.join(',') : connection,
              sentAt,
              receivedAt,
              body: text ? JSON.parse(text) : undefined,
              idempotencyKey,
            });
          } catch (error) {
            const e = error as { code?: string; cause?: { code?: string } };
            failures.push({ kind, code: e.cause?.code ?? e.code ?? String(error), idempotencyKey, client: c, request: i });
            // A refused new connection: the server no longer takes them; this client is done.
            if ((e.cause?.code ?? e.code) === 'ECONNREFUSED') return;
          }
          if (s.child.exitCode !== null) return;
        }
      };
      const load = Array.from({ length: 16 }, (_, c) => client(c));
      // Every client has its keep-alive connection (a connection the server has not accepted yet is reset by
      // the kernel when the listener closes: no request on it was ever the server's).
      for (let n = 0; warm.size < 16 && failures.length === 0 && n < 3000; n++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 300));
      s.child.kill('SIGTERM');
      await Promise.all(load);
      assert.equal(await s.exited, 0, s.output());

      // The first answer with Connection: close proves the drain had begun; every request sent after it
      // (on a socket still open) must be told to close too.
      const closing = answers.filter((a) => a.connection === 'close');
      assert.ok(closing.length > 0, 'no answer carried Connection: close: the load did not reach the drain');
      const drainSeenAt = Math.min(...closing.map((a) => a.receivedAt));
      // Only a refused new connection may fail: never a reset or a closed socket on a request sent on a kept-alive one.
      assert.deepEqual(
        failures.filter((f) => f.code !== 'ECONNREFUSED'),
        [],
        'a request lost its answer to a closed connection',
      );
      assert.deepEqual(
        answers.filter((a) => a.status >= 500),
        [],
        'a request was answered 5xx',
      );
      const late = answers.filter((a) => a.sentAt > drainSeenAt);
      assert.deepEqual(
        late.filter((a) => a.connection !== 'close'),
        [],
        'an answer after the signal kept the connection alive',
      );

      // Every order answered 201 is stored; every stored order was answered, or replays with its key.
      restarted = await startService({}, { databaseUrl, key: s.key });
      const answered = new Map(
        answers.filter((a) => a.kind === 'order' && a.status === 201).map((a) => [a.body.id as number, a.idempotencyKey]),
      );
      const replayed = new Set<number>();
      const unanswered = [...failures.filter((f) => f.kind === 'order'), ...answers.filter((a) => a.kind === 'order' && a.status !== 201)];
      for (const { idempotencyKey } of unanswered) {
        const again = await agent.request({
          origin: new URL(restarted.url).origin,
          path: '/v1/store/orders',
          method: 'POST',
          headers: { 'x-api-key': shopKey, 'content-type': 'application/json', 'idempotency-key': idempotencyKey! },
          body: JSON.stringify({ petId: pet.id, quantity: 1 }),
        });
        const body = (await again.body.json()) as { id: number };
        assert.ok(again.statusCode === 201 || again.statusCode === 200, `the replay of ${idempotencyKey}: ${again.statusCode}`);
        replayed.add(body.id);
      }
      const stored: number[] = [];
      for (let after = 0, page = 0; page < 500; page++) {
        const batch = (
          await send(
            agent,
            restarted,
            'GET',
            `/v1/store/orders?limit=100${after ? `&cursor=${encodeURIComponent(encodeCursor(after))}` : ''}`,
            undefined,
            shopKey,
          )
        ).body as Array<{ id: number }>;
        stored.push(...batch.map((o) => o.id));
        if (batch.length < 100) break;
        after = batch[batch.length - 1]!.id;
      }
      for (const id of answered.keys()) assert.ok(stored.includes(id), `order ${id} was answered 201 but is not stored`);
      for (const id of stored) assert.ok(answered.has(id) || replayed.has(id), `order ${id} is stored but was never answered`);
    } finally {
      await agent.close().catch(() => undefined);
      for (const x of [s, restarted]) x?.child.kill('SIGKILL');
      s.cleanup();
      restarted?.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
