import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createAccount, type TestApp } from '../helpers/app.js';
import { sample } from './support.js';

const scrape = async (t: TestApp) => {
  const res = await t.anonymous.get('/metrics', { skipContract: true });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return res.text;
};

describe('ops: /metrics', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { BAN_THRESHOLD: '2' } });
  });
  after(() => t.close());

  it('when requests went through both facades, then /metrics counts them by facade, operation template and status, without a key', async () => {
    const before = await scrape(t);
    const labels = { facade: 'rest', operation: 'GET /v1/categories/{categoryId}', status: '404' };
    const start = sample(before, 'petstore_http_requests_total', labels) ?? 0;
    await t.admin.get('/v1/categories/424242');
    await t.admin.get('/v1/categories/434343');
    await t.admin.graphql('query Anything { categories { edges { node { id } } } }');
    await t.admin.graphql('{ nope }');
    const after = await scrape(t);
    assert.equal(sample(after, 'petstore_http_requests_total', labels), start + 2);
    assert.equal(sample(after, 'petstore_http_request_duration_seconds_count', labels), start + 2);
    assert.ok((sample(after, 'petstore_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }) ?? 0) >= 2);
    // GraphQL: labelled by operation type and root field, never by the client's operation name.
    assert.equal(sample(after, 'petstore_http_requests_total', { facade: 'graphql', operation: 'query categories', status: '200' }), 1);
    assert.equal(sample(after, 'petstore_http_requests_total', { facade: 'graphql', operation: 'unresolved', status: '400' }), 1);
    assert.ok(!after.includes('Anything'));
    // Raw paths never become labels.
    assert.ok(!after.includes('424242'));
  });

  it('when a key is refused by the limiter and then banned, then refusals and bans are counted by plan', async () => {
    const { client } = await createAccount(t, { role: 'customer', plan: 'enterprise', limits: { perMinute: 2, perDay: 100 } });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await client.get('/v1/account')).status);
    assert.deepEqual(statuses.slice(0, 2), [200, 200]);
    const body = (await client.get('/v1/account')).body;
    assert.equal(body.code, 'API_KEY_BANNED');
    const text = await scrape(t);
    assert.equal(sample(text, 'petstore_rate_limit_refusals_total', { plan: 'enterprise', code: 'RATE_LIMITED' }), 2);
    assert.equal(sample(text, 'petstore_rate_limit_bans_total', { plan: 'enterprise' }), 1);
    assert.ok((sample(text, 'petstore_rate_limit_refusals_total', { plan: 'enterprise', code: 'API_KEY_BANNED' }) ?? 0) >= 3);
  });

  it('when scraped, then database pool, limiter store, shutdown and process metrics are present', async () => {
    const text = await scrape(t);
    for (const state of ['used', 'free', 'pending']) {
      assert.equal(typeof sample(text, 'petstore_db_pool_connections', { state }), 'number', state);
    }
    assert.equal(
      sample(text, 'petstore_limiter_store_up', { store: 'memory' }) ?? sample(text, 'petstore_limiter_store_up', { store: 'redis' }),
      1,
    );
    assert.equal(sample(text, 'petstore_shutting_down'), 0);
    assert.match(text, /^process_cpu_user_seconds_total /m);
    assert.match(text, /^nodejs_heap_size_used_bytes /m);
    // The event-loop-lag monitor still reports (it samples every 100 ms: src/observability/metrics.ts).
    assert.match(text, /^nodejs_eventloop_lag_p99_seconds \d/m);
  });

  it('when two apps run in one process, then each has its own registry', async () => {
    const other = await startApp();
    try {
      await other.admin.get('/v1/store/orders/515151');
      const mine = await scrape(t);
      const theirs = await scrape(other);
      const labels = { facade: 'rest', operation: 'GET /v1/store/orders/{orderId}', status: '404' };
      assert.equal(sample(theirs, 'petstore_http_requests_total', labels), 1);
      assert.equal(sample(mine, 'petstore_http_requests_total', labels), undefined);
    } finally {
      await other.close();
    }
  });
});

describe('ops: /metrics switched off', () => {
  it('when METRICS_ENABLED=false, then /metrics is 404 NOT_FOUND in the error shape', async () => {
    const t = await startApp({ env: { METRICS_ENABLED: 'false' } });
    try {
      const res = await t.anonymous.get('/metrics', { skipContract: true });
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'NOT_FOUND');
    } finally {
      await t.close();
    }
  });
});
