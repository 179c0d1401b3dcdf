/**
 * Webhook endpoints beyond the free plan: the endpoint caps of the other plans (docs/EVENTS.md, "Plan caps"),
 * the secret shown only at creation and rotation, and a changed URL checked as a new one is (https, public
 * addresses only) on both facades. Every URL stored is a loopback one (no event is raised here either).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client, createAccount, startApp, type TestApp } from '../helpers/app.js';
import { assertError } from '../rest/support.js';
import { gql } from '../graphql/support.js';
import { globalId } from '../../src/graphql/global-id.js';

/** A loopback address nothing listens on, accepted with WEBHOOK_ALLOW_PRIVATE. */
const LOOPBACK = 'https://127.0.0.1:9/petstore';

describe('webhooks: plan caps and secrets', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  });
  after(() => t.close());

  for (const [plan, cap] of [
    ['pro', 5],
    ['business', 20],
  ] as const) {
    it(`when a ${plan} account registers more than ${cap} endpoints, then the one past ${cap} is PLAN_LIMIT_REACHED (409) and nothing more is created`, async () => {
      const buyer = (await createAccount(t, { name: `Hooks ${plan}`, plan })).client;
      for (let i = 0; i < cap; i++) {
        const res = await buyer.post('/v1/webhooks', { url: `${LOOPBACK}/${i}`, events: ['pet.*'] });
        assert.equal(res.status, 201, `endpoint ${i + 1} of ${cap}: ${res.text}`);
      }
      const refused = await buyer.post('/v1/webhooks', { url: `${LOOPBACK}/over`, events: ['pet.*'] });
      assertError(refused, 409, 'PLAN_LIMIT_REACHED');
      assert.equal((await buyer.get('/v1/webhooks?limit=100')).body.length, cap);
      // Deleting one frees its place.
      const first = (await buyer.get('/v1/webhooks?limit=1')).body[0];
      assert.equal((await buyer.delete(`/v1/webhooks/${first.id}`)).status, 204);
      assert.equal((await buyer.post('/v1/webhooks', { url: `${LOOPBACK}/again`, events: ['pet.*'] })).status, 201);
    });
  }

  it('when endpoints are listed or read after their creation or a rotation, then no secret is shown', async () => {
    const buyer = (await createAccount(t, { name: 'Secretive', plan: 'pro' })).client;
    const created = await buyer.post('/v1/webhooks', { url: LOOPBACK, events: ['order.*'] });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^whsec_/);
    const rotated = await buyer.post(`/v1/webhooks/${created.body.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, created.body.secret);
    for (const res of [await buyer.get('/v1/webhooks'), await buyer.get(`/v1/webhooks/${created.body.id}`)]) {
      assert.equal(res.status, 200, res.text);
      assert.doesNotMatch(res.text, /whsec_|"secret"/, `a read shows the secret: ${res.text}`);
    }
  });
});

describe('webhooks: a changed URL is checked as a new one', () => {
  // The endpoint is registered by an instance that allows private addresses, then moved through one that does not
  // (the default), on the same database file.
  const dir = mkdtempSync(join(tmpdir(), 'petstore-hooks-'));
  const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
  const env = { ADMIN_API_KEY: `psk_${randomBytes(24).toString('base64url')}` };
  let t: TestApp;
  let buyer: Client;
  let id: number;
  before(async () => {
    const first = await startApp({ databaseUrl, env: { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' } });
    buyer = (await createAccount(first, { name: 'Mover', plan: 'pro' })).client;
    const created = await buyer.post('/v1/webhooks', { url: LOOPBACK, events: ['order.*'] });
    assert.equal(created.status, 201, created.text);
    id = created.body.id;
    await first.close();
    t = await startApp({ databaseUrl, env });
    buyer = new Client(t.url, buyer.key);
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when an endpoint is moved by PATCH or updateWebhook to a plain-http or private address, then it is VALIDATION_FAILED and the URL stays', async () => {
    for (const url of [
      'http://127.0.0.1:9/petstore',
      'https://127.0.0.1/x',
      'https://10.0.0.1/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:127.0.0.1]/x',
      'https://localhost./x',
    ]) {
      const res = await buyer.patch(`/v1/webhooks/${id}`, { url });
      assertError(res, 400, 'VALIDATION_FAILED');
      assert.deepEqual(
        res.body.details.map((d: { path: string }) => d.path),
        ['url'],
        url,
      );
    }
    const gid = globalId('WebhookEndpoint', id);
    const viaGraphql = await gql(buyer, 'mutation($id: ID!) { updateWebhook(id: $id, input: {url: "https://127.0.0.1/y"}) { url } }', {
      id: gid,
    });
    assert.equal(viaGraphql.status, 200, viaGraphql.text);
    assert.equal(viaGraphql.body.data?.updateWebhook, null);
    assert.equal(viaGraphql.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED');
    assert.equal((await buyer.get(`/v1/webhooks/${id}`)).body.url, LOOPBACK);
  });
});
