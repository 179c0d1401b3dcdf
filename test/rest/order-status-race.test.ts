import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { onOwnPostgres, untilBackend } from '../helpers/services.js';
import { stockOf } from './support.js';

/**
 * An order racing a status change of its pet on PostgreSQL (SQLite has one writer at a time). A status change
 * takes the pet's inventory row first, then writes the pet (the lock order of every stock and status change);
 * an order that arrives meanwhile waits for that row. When the change commits, the order must see the pet as it
 * is now: a pet just marked sold is not sold again, and its stock stays.
 */
describe('REST orders racing a status change (PostgreSQL)', async () => {
  let t: TestApp;
  let db: pg.Client;
  let customer: Client;
  const skip = await onOwnPostgres('race', {
    async setup(url) {
      t = await startApp({ databaseUrl: url });
      db = new pg.Client({ connectionString: url });
      await db.connect();
      customer = (await createAccount(t)).client;
    },
    async teardown() {
      await db?.end();
      await t?.close();
    },
  });

  /** Until a backend of this database (not ours) waits for a lock: the order, for the inventory row. */
  const someoneWaits = () => untilBackend(db, "wait_event_type = 'Lock'", 'no order waited for the inventory row');

  for (const withKey of [false, true]) {
    it(`when the pet is marked sold while an order${withKey ? ' with an idempotency key' : ''} waits for it, then the order is refused (409 PET_NOT_AVAILABLE) and the stock stays`, {
      skip,
    }, async () => {
      const { petId } = await createPet(t, { stock: 5 });
      await db.query('begin');
      await db.query('update inventory set quantity = quantity where pet_id = $1', [petId]);
      await db.query("update pets set status = 'sold' where id = $1", [petId]);
      const headers = withKey ? { 'Idempotency-Key': `race-${randomBytes(6).toString('hex')}` } : undefined;
      const ordering = customer.post('/v1/store/orders', { petId, quantity: 1 }, { headers });
      try {
        await someoneWaits();
      } finally {
        await db.query('commit');
      }
      const res = await ordering;
      assert.equal(res.status, 409, res.text);
      assert.equal(res.body.code, 'PET_NOT_AVAILABLE');
      assert.deepEqual(await stockOf(t, petId), { quantity: 5, status: 'sold' });
    });
  }
});
