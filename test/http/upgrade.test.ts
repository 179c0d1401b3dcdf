import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { startApp, type TestApp } from '../helpers/app.js';

/** Sends a request with `Upgrade` headers and reads the plain answer (status, headers, body). */
function upgradeRequest(
  url: string,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers: { Connection: 'Upgrade', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('upgrade', () => reject(new Error('the server switched protocols')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Only a WebSocket upgrade of /graphql is taken by the subscription server: any other request that
 * asks for an upgrade (curl's `Upgrade: h2c`) is answered as the plain request it also is.
 */
describe('requests that ask for a protocol upgrade', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t?.close());

  it('when a REST GET asks to upgrade to h2c (curl --http2), then it is served as usual, in JSON with a request id', async () => {
    const res = await upgradeRequest(t.url, '/v1/account', { Upgrade: 'h2c', 'X-API-Key': t.adminKey });
    assert.equal(res.status, 200, res.body);
    assert.equal(JSON.parse(res.body).role, 'staff');
    assert.ok(res.headers['x-request-id']);
  });

  it('when a WebSocket upgrade targets another path, then it is the plain 404 in the error shape, not a bare 400', async () => {
    const res = await upgradeRequest(t.url, '/v1/nowhere', {
      Upgrade: 'websocket',
      'Sec-WebSocket-Version': '13',
      'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
    });
    assert.equal(res.status, 404);
    const body = JSON.parse(res.body);
    assert.equal(body.code, 'NOT_FOUND');
    assert.equal(body.requestId, res.headers['x-request-id']);
  });
});
