import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startApp, type TestApp } from '../helpers/app.js';
import { walk } from './support.js';

/** The keys printed at first start, in order of appearance. */
const keysIn = (lines: string[]) => lines.join('\n').match(/psk_[A-Za-z0-9_-]+/g) ?? [];

describe('REST first start on an empty database (SPEC §5)', () => {
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
});
