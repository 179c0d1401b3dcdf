/**
 * WebSocket connections are bounded: per client address until `connection_init` is accepted (the
 * address as the HTTP pipeline resolves it, TRUST_PROXY included), and a banned key or one over its
 * rate limit is refused at `connection_init` (4403 / 4429). Real sockets (the `ws` package).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { Client, startApp, type TestApp } from '../helpers/app.js';

type Outcome = { ws: WebSocket; opened: boolean; status?: number; body?: string };

/** Opens a raw graphql-ws socket (sending nothing): opened, or refused at the upgrade with an HTTP status. */
function rawSocket(t: TestApp, sockets: WebSocket[], forwardedFor?: string, origin?: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${t.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', {
      headers: forwardedFor ? { 'X-Forwarded-For': forwardedFor } : {},
      ...(origin === undefined ? {} : { origin }),
    });
    sockets.push(ws);
    ws.on('open', () => resolve({ ws, opened: true }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c));
      res.on('end', () => resolve({ ws, opened: false, status: res.statusCode, body }));
    });
    ws.on('error', () => undefined);
  });
}

/** Sends connection_init with `key` on an open socket: acknowledged, or closed with a code and reason. */
function init(ws: WebSocket, key: string): Promise<{ ack: boolean; code?: number; reason?: string }> {
  return new Promise((resolve) => {
    ws.on('message', (raw) => JSON.parse(String(raw)).type === 'connection_ack' && resolve({ ack: true }));
    ws.on('close', (code, reason) => resolve({ ack: false, code, reason: String(reason) }));
    ws.send(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': key } }));
  });
}

describe("subscription sockets: from browser pages, only the origins CORS_ORIGINS allows (and the service's own)", () => {
  let t: TestApp;
  const sockets: WebSocket[] = [];
  before(async () => {
    t = await startApp({ env: { CORS_ORIGINS: 'https://app.example.com' } });
  });
  after(async () => {
    for (const ws of sockets) ws.terminate();
    await t.close();
  });

  it("when a page of another origin opens a socket, then the upgrade is refused 403 FORBIDDEN naming CORS_ORIGINS; an allowed origin, the service's own host and a client without Origin connect", async () => {
    const port = new URL(t.url).port;
    for (const origin of ['https://evil.example', 'null', `${t.url}.evil.example`, `http://localhost:${port}`]) {
      const refused = await rawSocket(t, sockets, undefined, origin);
      assert.deepEqual([refused.opened, refused.status], [false, 403], origin);
      const body = JSON.parse(refused.body!);
      assert.equal(body.code, 'FORBIDDEN');
      assert.match(body.message, /CORS_ORIGINS/);
    }
    // The service's own host name, whatever scheme and port a proxy in front shows the page on.
    for (const origin of ['https://app.example.com', t.url, 'https://127.0.0.1', undefined]) {
      const outcome = await rawSocket(t, sockets, undefined, origin);
      assert.equal(outcome.opened, true, String(origin));
      assert.deepEqual(await init(outcome.ws, t.adminKey), { ack: true }, String(origin));
    }
  });
});

describe('subscription sockets: bounded per address before connection_init, behind a trusted proxy', () => {
  let t: TestApp;
  const sockets: WebSocket[] = [];
  before(async () => {
    t = await startApp({ env: { TRUST_PROXY: 'loopback', SUBSCRIPTION_SOCKETS_PER_ADDRESS: '3', SUBSCRIPTION_INIT_TIMEOUT_MS: '30000' } });
  });
  after(async () => {
    for (const ws of sockets) ws.terminate();
    await t.close();
  });

  it('when one address holds 3 sockets without connection_init, then its 4th is refused with 429 while another address still connects, and an accepted key frees a place', async () => {
    const first = await Promise.all([1, 2, 3].map(() => rawSocket(t, sockets, '203.0.113.7')));
    assert.deepEqual(
      first.map((s) => s.opened),
      [true, true, true],
    );
    const refused = await rawSocket(t, sockets, '203.0.113.7');
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body!).code, 'RATE_LIMITED');
    assert.equal((await rawSocket(t, sockets, '203.0.113.8')).opened, true);
    // Once its key is accepted a socket counts for its account, no longer for its address.
    assert.deepEqual(await init(first[0]!.ws, t.adminKey), { ack: true });
    assert.equal((await rawSocket(t, sockets, '203.0.113.7')).opened, true);
  });

  it('when IPv6 addresses of one /64 open sockets without connection_init, then they share one cap, as they share the rate limits', async () => {
    const opened = [];
    for (const address of ['2001:db8:1:1::1', '2001:db8:1:1::1', '2001:db8:1:1::2', '2001:db8:1:1::3'])
      opened.push((await rawSocket(t, sockets, address)).opened);
    assert.deepEqual(opened, [true, true, true, false]);
    assert.equal((await rawSocket(t, sockets, '2001:db8:1:2::1')).opened, true, 'another /64 is another client');
  });

  it('when a socket sends connection_init without a key, then it is closed 4403 and counts a failed authentication against its address', async () => {
    const before = await fetch(`${t.url}/v1/account`, { headers: { 'x-api-key': 'not-a-key', 'x-forwarded-for': '198.51.100.9' } });
    const remaining = Number(before.headers.get('x-ratelimit-remaining'));
    const { ws } = await rawSocket(t, sockets, '198.51.100.9');
    const answer = await new Promise<{ code: number; reason: string }>((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
      ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    });
    assert.equal(answer.code, 4403);
    assert.match(answer.reason, /^UNAUTHENTICATED/);
    const after = await fetch(`${t.url}/v1/rate_limit`, { headers: { 'x-forwarded-for': '198.51.100.9' } });
    assert.equal(Number(after.headers.get('x-ratelimit-remaining')), remaining - 1);
  });
});

describe('subscription sockets: without a trusted proxy, and keys refused at connection_init', () => {
  let t: TestApp;
  const sockets: WebSocket[] = [];
  before(async () => {
    // BAN_THRESHOLD 1: the second request refused while limited bans the key.
    t = await startApp({ env: { SUBSCRIPTION_SOCKETS_PER_ADDRESS: '2', SUBSCRIPTION_INIT_TIMEOUT_MS: '1000', BAN_THRESHOLD: '1' } });
  });
  after(async () => {
    for (const ws of sockets) ws.terminate();
    await t.close();
  });
  async function freeCustomer(name: string) {
    const res = await t.admin.post('/v1/accounts', { name, role: 'customer', plan: 'free' });
    assert.equal(res.status, 201, res.text);
    return { key: res.body.apiKey.key as string, client: new Client(t.url, res.body.apiKey.key) };
  }
  /** Spends the free plan's 60 points of this minute. */
  async function exhaust(client: Client) {
    let remaining = '';
    for (let i = 0; i < 60; i++) remaining = (await client.get('/v1/pets?limit=1')).headers.get('x-ratelimit-remaining') ?? '';
    assert.equal(remaining, '0');
  }

  it('when a client forges X-Forwarded-For, then its sockets still count for its own address; a socket that sends no connection_init is closed with 4408', async () => {
    const held = await Promise.all(['198.51.100.1', '198.51.100.2'].map((a) => rawSocket(t, sockets, a)));
    assert.deepEqual(
      held.map((s) => s.opened),
      [true, true],
    );
    assert.equal((await rawSocket(t, sockets, '198.51.100.3')).status, 429);
    const code = await new Promise<number>((resolve) => held[0]!.ws.once('close', resolve));
    assert.equal(code, 4408);
  });

  it('when a key is over its rate limit, then connection_init is refused with 4429 naming the limit', async () => {
    const { key, client } = await freeCustomer('Over the limit');
    await exhaust(client);
    const socket = await rawSocket(t, sockets);
    const answer = await init(socket.ws, key);
    assert.equal(answer.code, 4429);
    assert.match(answer.reason!, /^RATE_LIMITED: Rate limit exceeded \(60 per minute\); retry in \d+ seconds/);
  });

  it('when a key is banned, then connection_init is refused with 4403, while another key of the same address is acknowledged', async () => {
    const { key, client } = await freeCustomer('Banned');
    await exhaust(client);
    let code = (await client.get('/v1/pets?limit=1')).body.code;
    assert.equal(code, 'RATE_LIMITED');
    for (let i = 0; i < 5 && code !== 'API_KEY_BANNED'; i++) code = (await client.get('/v1/pets?limit=1')).body.code;
    assert.equal(code, 'API_KEY_BANNED');
    const answer = await init((await rawSocket(t, sockets)).ws, key);
    assert.equal(answer.code, 4403);
    assert.match(answer.reason!, /^API_KEY_BANNED: .*banned/);
    assert.deepEqual(await init((await rawSocket(t, sockets)).ws, t.adminKey), { ack: true });
  });
});
