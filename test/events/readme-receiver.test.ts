/**
 * The webhook receiver of docs/EVENTS.md, run as it stands in its own Node process: it
 * must accept a real delivery of the service, verified with `standardwebhooks`, and refuse a forgery.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startApp, type TestApp } from '../helpers/app.js';
import { doc } from '../helpers/readme.js';
import { freePort } from '../ops/support.js';
import { eventually } from './support.js';

/** docs/EVENTS.md's JavaScript block that imports `standardwebhooks`. */
function receiverCode(): string {
  const code = doc('EVENTS.md')
    .split('```js\n')
    .slice(1)
    .map((part) => part.split('```')[0]!)
    .find((c) => c.includes("from 'standardwebhooks'"));
  assert.ok(code, 'docs/EVENTS.md has a receiver example');
  return code;
}

describe('README: the webhook receiver example', () => {
  let t: TestApp;
  let receiver: ChildProcess;
  let output = '';
  let url = '';
  let secret = '';

  before(async () => {
    t = await startApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '20' } });
    const created = await t.admin.post('/v1/webhooks', { url: 'http://127.0.0.1:9/not-yet', events: ['category.created'] });
    assert.equal(created.status, 201, created.text);
    secret = created.body.secret;
    // Written next to the compiled tests, so `standardwebhooks` resolves from the project's node_modules.
    const file = fileURLToPath(new URL('./readme-receiver.mjs', import.meta.url));
    writeFileSync(file, receiverCode());
    const port = await freePort();
    url = `http://127.0.0.1:${port}/hooks`;
    receiver = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port), PETSTORE_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    receiver.stdout!.on('data', (d) => (output += d));
    receiver.stderr!.on('data', (d) => (output += d));
    await eventually('the receiver listening', () =>
      fetch(url, { method: 'POST', body: '{}' })
        .then((r) => r.status === 400)
        .catch(() => false),
    );
    assert.equal((await t.admin.patch(`/v1/webhooks/${created.body.id}`, { url })).status, 200);
  });
  after(async () => {
    receiver?.kill();
    await t.close();
  });

  it('when a category is created, then the README receiver verifies the signed delivery, prints the event and acknowledges it', async () => {
    const category = (await t.admin.post('/v1/categories', { name: 'Received', description: 'by the README' })).body;
    await eventually('the receiver printing the event', () => output.includes('category.created'));
    assert.match(output, new RegExp(`category\\.created \\{ id: ${category.id}, name: 'Received'`));
    const webhooks = (await t.admin.get('/v1/webhooks')).body;
    const log = await eventually('the logged attempt', async () => {
      const res = await t.admin.get(`/v1/webhooks/${webhooks[0].id}/deliveries`);
      return res.body.find((d: any) => d.status === 'succeeded');
    });
    assert.equal(log.responseStatus, 204);
  });

  it('when a request carries a forged signature, then the README receiver answers 400 and prints nothing', async () => {
    const before = output;
    const body = JSON.stringify({ id: 999, type: 'order.placed', createdAt: new Date().toISOString(), data: {} });
    const res = await fetch(url, {
      method: 'POST',
      body,
      headers: {
        'webhook-id': '999',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': 'v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
      },
    });
    assert.equal(res.status, 400);
    assert.equal(output, before);
  });
});
