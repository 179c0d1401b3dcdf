import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heldRequest, RawConnection, startService, type Service } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';

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
        JSON.stringify({
          query: `mutation { placeOrder(input: {petId: "${globalId('Pet', pet.body.id)}", quantity: 1}) { id quantity complete } }`,
        }),
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
      assert.deepEqual(JSON.parse(placed!.body).data.placeOrder, {
        id: JSON.parse(placed!.body).data.placeOrder.id,
        quantity: 1,
        complete: false,
      });

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
      const sent = (await stuck.conn.untilClosed()).replace('HTTP/1.1 100 Continue\r\n\r\n', '');
      assert.doesNotMatch(sent, /HTTP\/1\.1 2/);
      // Its 503 keeps the headers of the key it was charged to (the staff key's plan: 1,000 a minute), not the address's.
      assert.match(sent, /^HTTP\/1\.1 503 /, sent);
      for (const header of ['x-ratelimit-limit: 1000', 'x-ratelimit-resource: minute'])
        assert.ok(sent.toLowerCase().includes(`\r\n${header}\r\n`), sent);
      // A write is not said to be undone (its transaction may still commit): the client is told how to repeat it safely.
      assert.match(
        JSON.parse(sent.slice(sent.indexOf('\r\n\r\n') + 4)).message,
        /may still be applied: repeat it with the same Idempotency-Key/,
      );
      assert.equal(await s.exited, 0, s.output());
    } finally {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  it('when a GraphQL request from Apollo Client 4 is unfinished after SHUTDOWN_GRACE_MS, then its 503 is graphql-response+json, which the client reads', async () => {
    const s = await startService({ SHUTDOWN_GRACE_MS: '500' });
    try {
      const accept = 'Accept: application/graphql-response+json,application/json;q=0.9\r\n';
      const stuck = await heldRequest(s, '/graphql', JSON.stringify({ query: '{ viewer { id } }' }), accept);
      s.child.kill('SIGINT');
      const sent = (await stuck.conn.untilClosed()).replace('HTTP/1.1 100 Continue\r\n\r\n', '');
      assert.match(sent, /^HTTP\/1\.1 503 /, sent);
      assert.match(sent, /\r\ncontent-type: application\/graphql-response\+json; charset=utf-8\r\n/i, sent);
      // An API answer: the client address's rate-limit headers (no failed authentication from it: the whole window).
      for (const header of ['x-ratelimit-limit: 30', 'x-ratelimit-remaining: 30'])
        assert.ok(sent.toLowerCase().includes(`\r\n${header}\r\n`), sent);
      const [error] = JSON.parse(sent.slice(sent.indexOf('\r\n\r\n') + 4)).errors;
      assert.equal(error.extensions.code, 'UNAVAILABLE');
      // A query is told nothing about changes; a mutation how to repeat it safely.
      assert.match(error.message, /if it was a mutation, its change may still be applied: repeat it with the same idempotencyKey/);
      assert.equal(await s.exited, 0, s.output());
    } finally {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
  });

  describe('a signal while the service starts', () => {
    /**
     * A Redis that accepts connections and never answers. With a long Redis command timeout the start waits the full
     * 2 s for it (the rate limiter's client, then the subscription slots'), and its first connection tells that the
     * start has reached the rate limiter: after the database, the migrations and the first start's accounts, before
     * the GraphQL schema and the listen.
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
        env: { REDIS_URL: `redis://127.0.0.1:${(server.address() as AddressInfo).port}`, REDIS_COMMAND_TIMEOUT_MS: '60000' },
        /** Resolves once the service connects; fails if it exits first. */
        reachedBy: (s: Service) =>
          Promise.race([
            startReachedIt,
            s.exited.then((code) => {
              throw new Error(`the service exited (${code}) before it reached Redis:\n${s.output()}`);
            }),
          ]),
        close: () => {
          for (const socket of sockets) socket.destroy();
          server.close();
        },
      };
    }

    it('when SIGTERM arrives while the first start waits for Redis, then it says so, stops cleanly once built (exit 0, never listening) and the next start on the same file serves', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'petstore-early-stop-'));
      const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
      const redis = await hungRedis();
      let key = '';
      try {
        const s = await startService(redis.env, { databaseUrl, listening: false });
        key = s.key;
        try {
          await redis.reachedBy(s);
          s.child.kill('SIGTERM');
          assert.equal(await s.exited, 0, s.output());
          assert.match(s.stderr(), /got SIGTERM while starting: it stops once the start is done/);
          assert.match(s.output(), /"msg":"shutting down"/);
          assert.doesNotMatch(s.output(), /petstore listening|Petstore API on/);
        } finally {
          s.child.kill('SIGKILL');
          s.cleanup();
        }
      } finally {
        redis.close();
      }
      const again = await startService({}, { databaseUrl, key });
      try {
        const res = await fetch(`${again.url}/v1/pets`, { headers: { 'x-api-key': key } });
        assert.equal(res.status, 200, await res.text());
      } finally {
        again.child.kill('SIGKILL');
        again.cleanup();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("when the signal comes again a second later while the start waits, then the process ends at once with the signal's exit status; a repeat within the second (a forwarded copy) does not", async () => {
      const redis = await hungRedis();
      try {
        const s = await startService(redis.env, { listening: false });
        try {
          await redis.reachedBy(s);
          // Ctrl-C under npm: the terminal's SIGINT and npm's forwarded one, back to back: one stop, not two.
          s.child.kill('SIGINT');
          s.child.kill('SIGINT');
          await new Promise((resolve) => setTimeout(resolve, 1200));
          assert.equal(s.child.exitCode, null, `ended on a repeated signal:\n${s.output()}`);
          s.child.kill('SIGTERM');
          assert.equal(await s.exited, 128 + 15, s.output());
          assert.doesNotMatch(s.output(), /petstore listening/);
        } finally {
          s.child.kill('SIGKILL');
          s.cleanup();
        }
      } finally {
        redis.close();
      }
    });
  });
});
