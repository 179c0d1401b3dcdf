/**
 * Requests Node's HTTP parser refuses before the app sees them (oversized headers, a slow client,
 * bytes that are not HTTP) answer the Error shape with a request id, like every other refusal.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { STATUS_OF } from '../../src/http/error-status.js';
import { RawConnection } from './support.js';

/** Everything the server sent before closing, parsed as one response. */
async function refusal(conn: RawConnection, shape: 'rest' | 'graphql' = 'rest', type = 'application/json') {
  const sent = await conn.untilClosed();
  const end = sent.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no response: ${JSON.stringify(sent.slice(0, 200))}`);
  const [statusLine, ...lines] = sent.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  const status = Number(statusLine!.split(' ')[1]);
  assert.equal(headers['content-type'], `${type}; charset=utf-8`, sent);
  const parsed = JSON.parse(sent.slice(end + 4));
  // GraphQL's shape carries the same fields: the message, and code, status and requestId in `extensions`.
  if (shape === 'graphql') assert.equal(parsed.errors?.length, 1, sent);
  const body = shape === 'graphql' ? { message: parsed.errors[0].message, ...parsed.errors[0].extensions } : parsed;
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'requestId', 'status']);
  assert.equal(body.status, status);
  assert.equal(STATUS_OF[body.code as keyof typeof STATUS_OF], status, 'the code is in the catalogue with this status');
  assert.equal(body.requestId, headers['x-request-id']);
  assert.equal(headers.connection, 'close');
  assert.equal(headers['x-content-type-options'], 'nosniff', "an API answer's security headers");
  return { status, body, headers };
}

/** The address limiter's three headers, as numbers (undefined when absent). */
const addressWindow = (headers: Record<string, string>) =>
  ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((name) => (name in headers ? Number(headers[name]) : undefined));

describe('ops: refusals by the HTTP parser answer the Error shape', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { HEADERS_TIMEOUT_MS: '300', REQUEST_TIMEOUT_MS: '600' } });
  });
  after(() => t.close());

  it('when the request headers are too large, then the answer is 431 HEADERS_TOO_LARGE with a request id', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const { status, body } = await refusal(conn);
    assert.deepEqual([status, body.code], [431, 'HEADERS_TOO_LARGE']);
  });

  it("when a GraphQL GET has a query too long for the request line, then the 431 is in GraphQL's error shape (errors[0].extensions)", async () => {
    const conn = await RawConnection.open(t.url);
    conn.send(`GET /graphql?query=${encodeURIComponent(`{ ${'pets { edges { cursor } } '.repeat(800)}}`)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    const { status, body } = await refusal(conn, 'graphql');
    assert.deepEqual([status, body.code], [431, 'HEADERS_TOO_LARGE']);
  });

  it('when a client never finishes its headers, then the answer is 408 REQUEST_TIMEOUT with a request id', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send('GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const { status, body } = await refusal(conn);
    assert.deepEqual([status, body.code], [408, 'REQUEST_TIMEOUT']);
  });

  it('when a client never finishes its body, then the answer is 408 REQUEST_TIMEOUT and nothing is created', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    const conn = await RawConnection.open(t.url);
    const body = JSON.stringify({ name: 'Never finished' });
    conn.send(
      `POST /v1/categories HTTP/1.1\r\nHost: x\r\nX-API-Key: ${t.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    const answer = await refusal(conn);
    assert.deepEqual([answer.status, answer.body.code], [408, 'REQUEST_TIMEOUT']);
    assert.equal((await t.admin.get('/v1/categories')).body.length, before);
  });

  it('when the bytes are not HTTP, then the answer is 400 VALIDATION_FAILED with a request id', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send('HELLO THERE\r\n\r\n');
    const { status, body } = await refusal(conn);
    assert.deepEqual([status, body.code], [400, 'VALIDATION_FAILED']);
  });

  it('when a keep-alive connection already served a request and then sends garbage, then the garbage still gets the Error shape', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    const ok = await conn.response();
    assert.equal(ok.status, 200);
    conn.discard();
    conn.send('GET / HTTP/9.9.9\r\n\r\n');
    const { status } = await refusal(conn);
    assert.equal(status, 400);
  });

  it('when an HTTP/1.1 request has no Host header, then the answer is 400 VALIDATION_FAILED in the Error shape, and nothing is created', async () => {
    const before = (await t.admin.get('/v1/categories')).body.length;
    const body = JSON.stringify({ name: 'No host' });
    const conn = await RawConnection.open(t.url);
    conn.send(
      `POST /v1/categories HTTP/1.1\r\nX-API-Key: ${t.adminKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    const { status, body: error } = await refusal(conn);
    assert.deepEqual([status, error.code], [400, 'VALIDATION_FAILED']);
    assert.match(error.message, /Host header/);
    assert.equal((await t.admin.get('/v1/categories')).body.length, before);
  });

  it("when a request has two Host headers, then the answer is 400 VALIDATION_FAILED in the facade's Error shape", async () => {
    for (const [path, shape] of [
      ['/v1/pets', 'rest'],
      ['/graphql?query=%7B__typename%7D', 'graphql'],
    ] as const) {
      const conn = await RawConnection.open(t.url);
      conn.send(`GET ${path} HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\napollo-require-preflight: true\r\n\r\n`);
      const { status, body } = await refusal(conn, shape);
      assert.deepEqual([status, body.code], [400, 'VALIDATION_FAILED']);
      assert.match(body.message, /more than one Host header/);
    }
  });

  it('when a GraphQL client asks for graphql-response+json (Apollo Client 4), then the refusals the server writes itself answer in it', async () => {
    // Apollo Client 4 reads a non-2xx answer's `errors` only from application/graphql-response+json.
    const accept = 'application/graphql-response+json,application/json;q=0.9';
    const tooLarge = await RawConnection.open(t.url);
    tooLarge.send(`POST /graphql HTTP/1.1\r\nHost: x\r\nAccept: ${accept}\r\nX-API-Key: ${'k'.repeat(20_000)}\r\n\r\n`);
    const large = await refusal(tooLarge, 'graphql', 'application/graphql-response+json');
    assert.deepEqual([large.status, large.body.code], [431, 'HEADERS_TOO_LARGE']);
    const twoHosts = await RawConnection.open(t.url);
    twoHosts.send(`GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: a\r\nHost: b\r\nAccept: ${accept}\r\n\r\n`);
    const hosts = await refusal(twoHosts, 'graphql', 'application/graphql-response+json');
    assert.deepEqual([hosts.status, hosts.body.code], [400, 'VALIDATION_FAILED']);
    // REST has one media type, whatever is asked.
    const rest = await RawConnection.open(t.url);
    rest.send(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAccept: ${accept}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.equal((await refusal(rest)).status, 431);
  });

  it("when the server refuses a request under /v1 or /graphql itself, then the answer carries the client address's rate-limit headers, as every API answer", async () => {
    // One failed authentication from this address: the refusals show it, as the API's own answers do.
    const failed = await fetch(`${t.url}/v1/account`, { headers: { 'x-api-key': 'not-a-key' } });
    assert.equal(failed.status, 401);
    const window = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'].map((name) => Number(failed.headers.get(name)));
    assert.equal(window[1], window[0]! - 1);
    const tooLarge = await RawConnection.open(t.url);
    tooLarge.send(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const twoHosts = await RawConnection.open(t.url);
    twoHosts.send('GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n');
    for (const [conn, shape, status] of [
      [tooLarge, 'rest', 431],
      [twoHosts, 'graphql', 400],
    ] as const) {
      const answer = await refusal(conn, shape);
      assert.equal(answer.status, status);
      const [limit, remaining, reset] = addressWindow(answer.headers);
      assert.deepEqual([limit, remaining], window.slice(0, 2), `${status}: ${JSON.stringify(answer.headers)}`);
      assert.ok(Math.abs(reset! - window[2]!) <= 1);
    }
    // Bytes that name no API path are no API answer: no rate-limit headers (nor has a 408: Node gives no bytes with it).
    const garbage = await RawConnection.open(t.url);
    garbage.send('HELLO THERE\r\n\r\n');
    assert.deepEqual(addressWindow((await refusal(garbage)).headers), [undefined, undefined, undefined]);
  });

  it('when an HTTP/1.0 request has no Host header, then it is served (HTTP/1.0 does not require one)', async () => {
    const conn = await RawConnection.open(t.url);
    conn.send('GET /healthz HTTP/1.0\r\n\r\n');
    assert.equal((await conn.response()).status, 200);
    conn.discard();
  });
});

describe('ops: refusals by the HTTP parser behind a trusted proxy', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { TRUST_PROXY: '1' } });
  });
  after(() => t.close());

  it("when a forwarded request's headers are too large, then its 431 shows the forwarded client's window, not the proxy's", async () => {
    const client = '203.0.113.7';
    for (let i = 0; i < 2; i++) {
      const failed = await fetch(`${t.url}/v1/account`, { headers: { 'x-api-key': 'not-a-key', 'x-forwarded-for': client } });
      assert.equal(failed.status, 401);
    }
    const conn = await RawConnection.open(t.url);
    conn.send(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${client}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    const answer = await refusal(conn);
    assert.equal(answer.status, 431);
    assert.deepEqual(addressWindow(answer.headers).slice(0, 2), [30, 28]);
    // The proxy's own address has failed nothing; a forwarding header too long to be a proxy's is ignored, as on a request.
    const direct = await RawConnection.open(t.url);
    direct.send(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    assert.deepEqual(addressWindow((await refusal(direct)).headers).slice(0, 2), [30, 30]);
    const oversized = await RawConnection.open(t.url);
    oversized.send(
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${Array(200).fill(client).join(', ')}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.deepEqual(addressWindow((await refusal(oversized)).headers).slice(0, 2), [30, 30]);
  });
});
