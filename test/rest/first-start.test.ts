import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { walk } from './support.js';
import { startService } from '../ops/support.js';

/** Waits until the process output holds a match of `re` (the start prints this line just after it listens). */
async function printed(output: () => string, re: RegExp): Promise<RegExpExecArray> {
  for (let i = 0; i < 400; i++) {
    const match = re.exec(output());
    if (match) return match;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`never printed ${re}:\n${output()}`);
}

/** The keys printed at first start, in order of appearance. */
const keysIn = (lines: string[]) => lines.join('\n').match(/psk_[A-Za-z0-9_-]+/g) ?? [];

describe('REST first start on an empty database', () => {
  const apps: TestApp[] = [];
  after(async () => {
    for (const app of apps.reverse()) await app.close();
  });
  const start = async (options: Parameters<typeof startApp>[0]) => {
    const t = await startApp(options);
    apps.push(t);
    return t;
  };

  it('when no ADMIN_API_KEY is set, then a generated psk_ staff key is announced once, and it works', async () => {
    const t = await start({ env: { ADMIN_API_KEY: '' } });
    const keys = keysIn(t.announced);
    assert.equal(keys.length, 1, t.announced.join('\n'));
    const staff = new Client(t.url, keys[0]!);
    const me = await staff.get('/v1/account');
    assert.equal(me.status, 200);
    assert.equal(me.body.role, 'staff');
    assert.equal(me.body.plan, 'business');
    assert.equal((await staff.post('/v1/categories', { name: 'Works' })).status, 201);
    // No demo data unless asked for.
    assert.deepEqual((await staff.get('/v1/pets')).body, []);

    // A second instance on the same database announces nothing: the database is no longer empty.
    const again = await start({ databaseUrl: t.config.database.url, env: { ADMIN_API_KEY: '' } });
    assert.deepEqual(again.announced, []);
    assert.equal((await new Client(again.url, keys[0]!).get('/v1/account')).status, 200);
  });

  it('when ADMIN_API_KEY is set, then that key is the staff key and it is not printed', async () => {
    const t = await start({});
    assert.equal(keysIn(t.announced).length, 0, t.announced.join('\n'));
    assert.ok(t.announced.length > 0, 'the start still says what it did');
    assert.equal((await t.admin.get('/v1/account')).body.role, 'staff');
  });

  it('when SEED_DEMO=true, then a demo customer key is announced, it works as a customer, and demo pets and stock exist', async () => {
    const t = await start({ env: { ADMIN_API_KEY: '', SEED_DEMO: 'true' } });
    const keys = keysIn(t.announced);
    assert.equal(keys.length, 2, t.announced.join('\n'));
    const [staffKey, demoKey] = keys as [string, string];
    const staff = new Client(t.url, staffKey);
    const demo = new Client(t.url, demoKey);

    const me = await demo.get('/v1/account');
    assert.equal(me.status, 200);
    assert.equal(me.body.role, 'customer');

    const pets = (await walk(demo, '/v1/pets?limit=100')).items;
    assert.ok(pets.length >= 3, JSON.stringify(pets));
    assert.ok((await demo.get('/v1/categories')).body.length >= 1);
    const inventory = (await walk(staff, '/v1/store/inventory?limit=100')).items;
    assert.equal(inventory.length, pets.length);
    for (const item of inventory) {
      const pet = pets.find((p: { id: number }) => p.id === item.petId);
      assert.equal(item.status, pet.status);
      if (item.status === 'available') assert.ok(item.quantity > 0, JSON.stringify(item));
    }

    // The walkthrough works with the demo key: order an available pet.
    const available = inventory.find((i: { status: string }) => i.status === 'available');
    const order = await demo.post('/v1/store/orders', { petId: available.petId, quantity: 1 });
    assert.equal(order.status, 201, order.text);
  });

  it('when the service process starts on an empty database outside production, then it prints an export line with its address and both keys, which work; a later start prints the address and how to get a key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-first-start-'));
    const databaseUrl = `sqlite:${join(dir, 'petstore.db')}`;
    const first = await startService({ NODE_ENV: 'development', ADMIN_API_KEY: '', SEED_DEMO: 'true' }, { databaseUrl });
    try {
      const [, base, staffKey, customerKey] = await printed(
        first.output,
        /^ {2}export BASE=(\S+) STAFF=(psk_[\w-]+) CUSTOMER=(psk_[\w-]+)$/m,
      );
      assert.equal(base, first.url);
      // The same keys as the lines that announce them, and they work with their roles.
      assert.deepEqual(first.output().match(/X-API-Key: (psk_[\w-]+)/g), [`X-API-Key: ${staffKey}`, `X-API-Key: ${customerKey}`]);
      assert.equal((await new Client(base!, staffKey!).get('/v1/account')).body.role, 'staff');
      assert.equal((await new Client(base!, customerKey!).get('/v1/account')).body.role, 'customer');
      assert.doesNotMatch(first.output(), /npm run admin/);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0);

      const later = await startService({ NODE_ENV: 'development', ADMIN_API_KEY: '', SEED_DEMO: 'true' }, { databaseUrl });
      try {
        await printed(later.output, /^ {2}export BASE=http:\/\/127\.0\.0\.1:\d+$/m);
        await printed(later.output, /printed only on the first start\. A new staff key: npm run admin -- issue-staff-key/);
        assert.doesNotMatch(later.output(), /psk_/, 'no key is printed again');
      } finally {
        later.child.kill('SIGTERM');
        await later.exited;
        later.cleanup();
      }
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
      first.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
