/**
 * The resuming subscriber of docs/EVENTS.md ("Resuming a subscription"), run as it stands in its own Node process
 * against a spawned service that is SIGKILLed and restarted: it prints every event the key may see exactly once, in order.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { doc } from '../helpers/readme.js';
import { freePort, startService, type Service } from '../ops/support.js';
import { eventually, openSubscriptions, subscribe, wsClient } from './support.js';
import type { Client as WsClient } from 'graphql-ws';

describe('docs/EVENTS.md: the resuming subscriber', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-docs-resume-'));
  const file = fileURLToPath(new URL('./docs-resume.mjs', import.meta.url));
  const services: Service[] = [];
  const held: WsClient[] = [];
  let subscriber: ChildProcess | undefined;
  after(async () => {
    for (const c of held) await c.dispose();
    subscriber?.kill();
    for (const s of services) {
      s.child.kill('SIGKILL');
      s.cleanup();
    }
    rmSync(dir, { recursive: true, force: true });
    rmSync(file, { force: true });
  });

  it('when the service is killed and restarted, then it prints every event once, in the order of the feed', async () => {
    const code = doc('EVENTS.md')
      .split('```js\n')
      .slice(1)
      .map((part) => part.split('```')[0]!)
      .find((c) => c.includes('events(after: $after)'));
    assert.ok(code, 'docs/EVENTS.md has the resuming example');
    writeFileSync(file, code);
    const port = await freePort();
    const env = { SUBSCRIPTION_POLL_MS: '20', SEED_DEMO: 'false' };
    const options = { databaseUrl: `sqlite:${join(dir, 'petstore.db')}`, port };
    const first = await startService(env, options);
    services.push(first);
    const staff = new Client(first.url, first.key);
    const customer = (await staff.post('/v1/accounts', { name: 'Reader', role: 'customer', plan: 'pro' })).body.apiKey.key as string;
    let output = '';
    subscriber = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', BASE: first.url, CUSTOMER: customer },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    subscriber.stdout!.on('data', (d) => (output += d));
    subscriber.stderr!.on('data', (d) => (output += d));
    const printed = () =>
      output
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l).id as string);
    await eventually('the subscription open', async () =>
      /^petstore_graphql_subscriptions 1$/m.test(await (await fetch(`${first.url}/metrics`)).text()),
    );
    const category = async (c: Client) => assert.equal((await c.post('/v1/categories', { name: `Docs ${Math.random()}` })).status, 201);
    for (let i = 0; i < 3; i++) await category(staff);
    await eventually(`3 events printed (${output})`, () => printed().length >= 3);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await startService(env, { ...options, key: first.key });
    services.push(second);
    const again = new Client(second.url, first.key);
    for (let i = 0; i < 3; i++) await category(again);
    const feed = (await new Client(second.url, customer).get('/v1/events?limit=100')).body.map((e: { id: number }) => e.id);
    assert.equal(feed.length, 6);
    await eventually(`6 events printed (${output})`, () => printed().length >= 6, 100, 300);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(
      printed(),
      feed.map((id: number) => globalId('Event', id)),
    );
  });

  it("when the plan's subscriptions are all open, then it says it was refused and stops, paying for one start", async () => {
    const service = services.at(-1)!;
    subscriber?.kill();
    await eventually('the first subscriber gone', async () => (await openSubscriptions(service.url)) === 0);
    const staff = new Client(service.url, service.key);
    const key = (await staff.post('/v1/accounts', { name: 'Holder', role: 'customer', plan: 'free' })).body.apiKey.key as string;
    // The free plan's two subscriptions, held by another connection of the same account.
    const { client } = wsClient(service.url, key);
    held.push(client);
    for (let i = 0; i < 2; i++) assert.deepEqual((await subscribe(client, 'subscription { events { id } }')).errors, []);
    const used = async () => (await new Client(service.url, key).get('/v1/rate_limit')).body.resources.minute.used as number;
    const before = await used();
    const run = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', BASE: service.url, CUSTOMER: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    run.stdout!.on('data', (d) => (output += d));
    run.stderr!.on('data', (d) => (output += d));
    const exit = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        run.kill();
        resolve(null);
      }, 10_000);
      run.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    assert.equal(exit, 0, `it ends by itself: ${output}`);
    assert.match(output, /^refused: PLAN_LIMIT_REACHED /m);
    assert.equal((await used()) - before, 1, 'one refused start, not one a second');
  });
});
