/**
 * The subscription client of docs/EVENTS.md, run as it stands in its own Node process (the Node running
 * the tests: on Node 20, which has no WebSocket of its own, it must bring `ws`), with BASE and CUSTOMER
 * as `npm start`'s export line sets them: it must print the customer's order event as the page shows it.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { doc, pattern } from '../helpers/readme.js';
import { eventually } from './support.js';

/** docs/EVENTS.md's JavaScript block that imports `graphql-ws`, and the `// → ` line it ends with. */
function subscriberCode(): { code: string; expected: string } {
  const code = doc('EVENTS.md')
    .split('```js\n')
    .slice(1)
    .map((part) => part.split('```')[0]!)
    .find((c) => c.includes("from 'graphql-ws'"));
  assert.ok(code, 'docs/EVENTS.md has a subscription example');
  const expected = /^\/\/ → (.+)$/m.exec(code)?.[1];
  assert.ok(expected, 'the example shows what it prints');
  return { code, expected };
}

describe('docs/EVENTS.md: the subscription example', () => {
  let t: TestApp;
  let subscriber: ChildProcess;
  let output = '';
  // Written next to the compiled tests, so `graphql-ws` and `ws` resolve from the project's node_modules,
  // as they do for a file saved in the project's directory.
  const file = fileURLToPath(new URL('./docs-subscribe.mjs', import.meta.url));

  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
  });
  after(async () => {
    subscriber?.kill();
    await t.close();
    rmSync(file, { force: true });
  });

  it('when it runs with BASE and CUSTOMER set and the customer places an order, then it prints the order event as the page shows', async () => {
    const customerKey = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(t.announced.join('\n'))?.[1];
    assert.ok(customerKey, 'the demo customer key is announced');
    const { code, expected } = subscriberCode();
    writeFileSync(file, code);
    subscriber = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', BASE: t.url, CUSTOMER: customerKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    subscriber.stdout!.on('data', (d) => (output += d));
    subscriber.stderr!.on('data', (d) => (output += d));

    // Subscribed once the service counts the subscription (its metrics gauge), so the order below is pushed.
    await eventually(`the subscription open (output so far: ${output})`, async () =>
      /^petstore_graphql_subscriptions 1$/m.test(await (await fetch(`${t.url}/metrics`)).text()),
    );
    const category = (await t.admin.post('/v1/categories', { name: 'Subscribed' })).body;
    const pet = (await t.admin.post('/v1/pets', { name: 'Watched', categoryId: category.id })).body;
    const order = await new Client(t.url, customerKey).post('/v1/store/orders', { petId: pet.id, quantity: 1 });
    assert.equal(order.status, 201, order.text);

    const line = await eventually('the event printed', () => output.split('\n').find((l) => l.includes('order.placed')));
    assert.match(line, pattern(expected));
    assert.equal(JSON.parse(line).orderUpdated.data.id, globalId('Order', order.body.id));
  });
});
