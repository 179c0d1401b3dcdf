import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { projectPath } from '../../src/project-path.js';
import { RawConnection } from './support.js';

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

interface Service {
  child: ChildProcess;
  url: string;
  key: string;
  output: () => string;
  /** Resolves with the first JSON log line whose msg starts with `msg`. */
  logLine(msg: string): Promise<Record<string, any>>;
  exited: Promise<number | null>;
  cleanup(): void;
}

/** `node dist/src/main.js` on a fresh SQLite file and a free port, as an operator would run it. */
async function startService(env: Record<string, string>): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-shutdown-'));
  const port = await freePort();
  const key = `psk_${randomBytes(24).toString('base64url')}`;
  const child = spawn(process.execPath, [projectPath('dist/src/main.js')], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${join(dir, 'petstore.db')}`,
      ADMIN_API_KEY: key,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const logLine = async (msg: string) => {
    for (;;) {
      for (const line of out.split('\n')) {
        if (!line.startsWith('{')) continue;
        const record = JSON.parse(line);
        if (typeof record.msg === 'string' && record.msg.startsWith(msg)) return record;
      }
      if (child.exitCode !== null) throw new Error(`the service exited (${child.exitCode}):\n${out}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await logLine('petstore listening');
  return { child, url: `http://127.0.0.1:${port}`, key, output: () => out, logLine, exited, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function api(s: Service, method: string, path: string, body?: unknown) {
  const res = await fetch(s.url + path, {
    method,
    headers: { 'x-api-key': s.key, 'content-type': 'application/json', connection: 'close' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** Headers sent, body held back: the server has the request (it answered 100 Continue) and waits for the rest. */
async function heldRequest(s: Service, path: string, body: string): Promise<{ conn: RawConnection; rest: string }> {
  const conn = await RawConnection.open(s.url);
  const split = Math.floor(body.length / 2);
  conn.send(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${s.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n${body.slice(0, split)}`,
  );
  await conn.until('100 Continue');
  return { conn, rest: body.slice(split) };
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

      s.child.kill('SIGTERM');
      await s.logLine('shutdown: readiness 503');
      assert.equal(await refusesConnections(s.url), true, 'a new connection was accepted after SIGTERM');

      // The REST order finishes; a readiness probe pipelined behind it on the same connection sees 503.
      rest.conn.send(`${rest.rest}GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const [order, ready] = await rest.conn.responses(2);
      assert.equal(order!.status, 201, order!.body);
      assert.equal(JSON.parse(order!.body).quantity, 2);
      assert.equal(ready!.status, 503);
      assert.equal(JSON.parse(ready!.body).status, 'shutting-down');

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
});
