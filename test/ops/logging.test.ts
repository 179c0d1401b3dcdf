import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createAccount, type TestApp } from '../helpers/app.js';
import { LogCapture } from './support.js';

describe('ops: request logs', () => {
  let t: TestApp;
  const logs = new LogCapture();
  before(async () => {
    t = await startApp({ env: { LOG_LEVEL: 'debug' }, logStream: logs });
  });
  after(() => t.close());

  it('when a REST request is answered, then one JSON line names its request id, route template, facade, status, duration and account', async () => {
    const res = await t.admin.get('/v1/categories/999', { headers: { 'x-request-id': 'ops-log-rest-1' } });
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-request-id'), 'ops-log-rest-1');
    const lines = logs.records().filter((r) => r.requestId === 'ops-log-rest-1' && r.msg === 'request');
    assert.equal(lines.length, 1);
    const line = lines[0]!;
    assert.equal(line.method, 'GET');
    assert.equal(line.route, 'GET /v1/categories/{categoryId}');
    assert.equal(line.facade, 'rest');
    assert.equal(line.status, 404);
    assert.equal(line.errorCode, 'NOT_FOUND');
    assert.equal(line.accountId, 1);
    assert.equal(typeof line.durationMs, 'number');
    assert.equal(line.service, 'petstore');
  });

  it('when a GraphQL request is answered, then its line has the facade and the operation name', async () => {
    const res = await t.admin.graphql('query WhoAmI { viewer { name } }', undefined, { headers: { 'x-request-id': 'ops-log-gql-1' } });
    assert.equal(res.status, 200);
    const line = logs.requestLine('ops-log-gql-1');
    assert.ok(line, 'no request line');
    assert.equal(line.facade, 'graphql');
    assert.equal(line.operationName, 'WhoAmI');
    assert.equal(line.route, 'POST /graphql');
    assert.equal(line.status, 200);
  });

  it('when X-Request-Id is malformed or too long, then a fresh id is generated, echoed and logged', async () => {
    for (const given of ['bad id with spaces', 'x'.repeat(129), '<script>']) {
      const res = await t.anonymous.get('/healthz', { headers: { 'x-request-id': given }, skipContract: true });
      const id = res.headers.get('x-request-id')!;
      assert.notEqual(id, given);
      assert.match(id, /^[0-9a-f-]{36}$/);
      assert.ok(logs.requestLine(id), `no line for ${id}`);
    }
  });

  it('when requests carry API keys (valid, unknown, newly created), then no key appears anywhere in the log', async () => {
    const customer = await createAccount(t, { role: 'customer' });
    await customer.client.get('/v1/account');
    await customer.client.graphql('{ viewer { apiKey { prefix } } }');
    const unknown = `psk_${'Z'.repeat(30)}`;
    await t.anonymous.get('/v1/account', { key: unknown });
    await t.anonymous.graphql('{ viewer { name } }', undefined, { key: unknown });
    // The key also travels in a body: it must not be logged from there either.
    await t.admin.post('/v1/categories', { name: customer.key });
    assert.ok(logs.lines.length > 5);
    for (const secret of [t.adminKey, customer.key, unknown]) {
      assert.ok(!logs.text.includes(secret), 'a key reached the log');
    }
  });

  it('when the logger is given a secret-bearing object, then the key fields are redacted', async () => {
    t.app.logger.info({ apiKey: t.adminKey, headers: { 'x-api-key': t.adminKey }, account: { key: t.adminKey } }, 'redaction probe');
    const probe = logs.records().find((r) => r.msg === 'redaction probe')!;
    assert.equal(probe.apiKey, '[redacted]');
    assert.equal(probe.headers['x-api-key'], '[redacted]');
    assert.equal(probe.account.key, '[redacted]');
    assert.ok(!logs.text.includes(t.adminKey));
  });
});
