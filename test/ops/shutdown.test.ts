import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heldRequest, RawConnection, startService, type Service } from './support.js';

async function api(s: Service, method: string, path: string, body?: unknown) {
  const res = await fetch(s.url + path, {
    method,
    headers: { 'x-api-key': s.key, 'content-type': 'application/json', connection: 'close' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const refusesConnections = (url: string) =>
  new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });

describe('ops: graceful shutdown of the real process', () => {
  it('when SIGTERM arrives with a REST and a GraphQL order in flight, then readiness is 503, new connections are refused, both orders complete, and the process exits 0', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '60000' });
    try {
      const category = await api(s, 'POST', '/v1/categories', { name: 'Shutdown' });
      const pet = await api(s, 'POST', '/v1/pets', { name: 'Drain', categoryId: category.body.id });
      assert.equal((await api(s, 'PUT', `/v1/store/inventory/${pet.body.id}`, { quantity: 5 })).status, 200);

      const rest = await heldRequest(s, '/v1/store/orders', JSON.stringify({ petId: pet.body.id, quantity: 2 }));
      const gql = await heldRequest(
        s,
        '/graphql',
        JSON.stringify({ query: `mutation { placeOrder(input: {petId: "${pet.body.id}", quantity: 1}) { id quantity complete } }` }),
      );
      // A readiness probe whose headers are still arriving when the signal comes.
      const probe = await RawConnection.open(s.url);
      probe.send('GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n');

      s.child.kill('SIGTERM');
      await s.logLine('shutdown: readiness 503');
      assert.equal(await refusesConnections(s.url), true, 'a new connection was accepted after SIGTERM');

      // The REST order finishes. (A request pipelined behind it is no longer answered: during the drain
      // every response carries `Connection: close`, so the connection ends after this one.)
      rest.conn.send(rest.rest);
      const [order] = await rest.conn.responses(1);
      assert.equal(order!.status, 201, order!.body);
      assert.equal(JSON.parse(order!.body).quantity, 2);
      assert.equal(order!.headers.connection, 'close');
      await rest.conn.untilClosed();

      // The readiness probe sees 503.
      probe.send('\r\n');
      const [ready] = await probe.responses(1);
      assert.equal(ready!.status, 503);
      assert.equal(JSON.parse(ready!.body).status, 'shutting-down');
      assert.equal(ready!.headers.connection, 'close');

      gql.conn.send(gql.rest);
      const [placed] = await gql.conn.responses(1);
      assert.equal(placed!.status, 200, placed!.body);
      assert.deepEqual(JSON.parse(placed!.body).data.placeOrder, { id: JSON.parse(placed!.body).data.placeOrder.id, quantity: 1, complete: false });

      assert.equal(await s.exited, 0, s.output());
      assert.ok(!s.output().includes(s.key), 'the API key reached the output');
      // Every request left one JSON line with its request id; both held orders among them.
      const requests = s
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .filter((r) => r.msg === 'request');
      assert.ok(requests.every((r) => typeof r.requestId === 'string' && r.requestId.length > 0));
      assert.ok(requests.some((r) => r.route === 'POST /v1/store/orders' && r.status === 201));
      assert.ok(requests.some((r) => r.facade === 'graphql' && r.status === 200));
    } finally {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  it('when a request is still unfinished after SHUTDOWN_GRACE_MS, then its connection is cut and the process still exits 0', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '500' });
    try {
      const stuck = await heldRequest(s, '/v1/categories', JSON.stringify({ name: 'Never sent in full' }));
      s.child.kill('SIGINT');
      const sent = await stuck.conn.untilClosed();
      assert.doesNotMatch(sent.replace('HTTP/1.1 100 Continue\r\n\r\n', ''), /HTTP\/1\.1 2/);
      assert.equal(await s.exited, 0, s.output());
    } finally {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  describe('a signal while the service starts', () => {
    /**
     * A Redis that accepts connections and never answers: the start waits for it (up to 2 s, then serves on the
     * insurance limiters), and its first connection tells that the start has reached the rate limiter, after the
     * database, the migrations and the first start's accounts, before the GraphQL schema and the listen.
     */
    async function hungRedis() {
      const sockets = new Set<Socket>();
      let reached!: () => void;
      const startReachedIt = new Promise<void>((resolve) => (reached = resolve));
      const server = createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => undefined);
        reached();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return {
        url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`,
        startReachedIt,
        close: () => {
          for (const socket of sockets) socket.destroy();
          server.close();
        },
      };
    }

    it('when SIGTERM arrives while the first start waits for Redis, then it stops cleanly once built (exit 0, never listening) and the next start on the same file serves', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-early-stop-'));
      const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
      const redis = await hungRedis();
      const s = await startService({ REDIS_URL: redis.url }, { databaseUrl, listening: false });
      try {
        await redis.startReachedIt;
        s.child.kill('SIGTERM');
        assert.equal(await s.exited, 0, s.output());
        assert.match(s.output(), /"msg":"shutting down"/);
        assert.doesNotMatch(s.output(), /petstore listening|Petstore API on/);
      } finally {
        s.child.kill('SIGKILL');
        s.cleanup();
        redis.close();
      }
      const again = await startService({}, { databaseUrl, key: s.key });
      try {
        const res = await fetch(`${again.url}/v1/pets`, { headers: { 'x-api-key': s.key } });
        assert.equal(res.status, 200, await res.text());
      } finally {
        again.child.kill('SIGKILL');
        again.cleanup();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("when a second signal follows the first while the start waits, then the process ends at once with the signal's exit status (a stuck start can still be stopped)", async () => {
      const redis = await hungRedis();
      const s = await startService({ REDIS_URL: redis.url }, { listening: false });
      try {
        await redis.startReachedIt;
        s.child.kill('SIGTERM');
        s.child.kill('SIGINT');
        // Which of the two the process handles last is the kernel's order, not the sender's.
        const status = await s.exited;
        assert.ok(status === 128 + 2 || status === 128 + 15, `exit status ${status}:\n${s.output()}`);
        assert.doesNotMatch(s.output(), /petstore listening/);
      } finally {
        s.child.kill('SIGKILL');
        s.cleanup();
        redis.close();
      }
    });
  });
});

