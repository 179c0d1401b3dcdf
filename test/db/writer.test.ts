import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { NotNullConstraintViolationException } from '@mikro-orm/core';
import { createWriter } from '../../src/db/writer.js';
import { createAccount, createPet, recordSql, startApp, type TestApp } from '../helpers/app.js';
import { walk } from '../rest/support.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';

/**
 * The plain-SQL writer's last writes (`runLast`: the outbox's events). On PostgreSQL they travel with
 * the COMMIT as one message with their parameters inlined as literals, so what a client stored must
 * come back byte for byte, and a failure among them must undo the whole transaction.
 */
const NASTY = `O'Brien \\ "quoted" $$ $1 ? ; commit; -- é 🐶 \n\t end`;

for (const database of ['SQLite', 'PostgreSQL'] as const) {
  describe(`writer: last writes go with the commit (${database})`, async () => {
    const pg = database === 'PostgreSQL' ? await postgresUrl() : undefined;
    const skip = database === 'PostgreSQL' ? skipUnless(pg, 'PostgreSQL') : false;
    const name = `petstore_writer_${process.pid}_${randomBytes(3).toString('hex')}`;
    let t: TestApp;

    before(async () => {
      if (skip) return;
      t = await startApp(pg ? { databaseUrl: await createDatabase(pg, name) } : {});
    });
    after(async () => {
      if (skip) return;
      await t?.close();
      if (pg) await dropDatabase(pg, name);
    });

    it('when an event with quotes, backslashes, placeholders and a semicolon is written last, then the feed returns it unchanged', {
      skip,
    }, async () => {
      const writer = createWriter(t.app.orm, () => undefined);
      // A pet as the feed shows it, its name full of what an inlined literal must survive.
      const data = { id: 424242, name: NASTY, categoryId: 1, status: 'available' };
      const at = new Date('2026-11-26T10:20:30.456Z');
      await writer.transaction(async (tx) => {
        await tx.runLast('insert into events (type, data, account_id, created_at) values (?, ?, ?, ?)', [
          'pet.updated',
          JSON.stringify(data),
          null,
          at,
        ]);
      });
      const res = await t.admin.get('/v1/events?types=pet.updated');
      assert.equal(res.status, 200);
      const event = res.body.find((e: { data: { id?: number } }) => e.data.id === 424242);
      assert.ok(event, `the event is in the feed: ${JSON.stringify(res.body)}`);
      assert.deepEqual(event.data, data);
      assert.equal(event.createdAt, at.toISOString());
    });

    it('when a last write fails, then the writes before it in the transaction are undone too', { skip }, async () => {
      const writer = createWriter(t.app.orm, () => undefined);
      const before = await t.admin.get('/v1/categories?limit=100');
      let insertedBefore = 0;
      await assert.rejects(
        writer.transaction(async (tx) => {
          insertedBefore = await tx.run('insert into categories (name, name_key, description, created_at) values (?, ?, ?, ?)', [
            'Doomed',
            'doomed',
            null,
            new Date(),
          ]);
          // type is not null: the last write fails, after the insert above has run.
          await tx.runLast('insert into events (type, data, account_id, created_at) values (?, ?, ?, ?)', [null, '{}', null, new Date()]);
        }),
        // The database refused the last write (not, say, the writer before sending anything).
        NotNullConstraintViolationException,
      );
      assert.equal(insertedBefore, 1, 'the first write ran inside the transaction');
      const afterwards = await t.admin.get('/v1/categories?limit=100');
      assert.deepEqual(afterwards.body, before.body);
      // The connection went back to the pool usable: the next transaction commits.
      await writer.transaction((tx) =>
        tx.run('insert into categories (name, name_key, description, created_at) values (?, ?, ?, ?)', ['Kept', 'kept', null, new Date()]),
      );
      const kept = await t.admin.get('/v1/categories?limit=100');
      assert.ok(kept.body.some((c: { name: string }) => c.name === 'Kept'));
    });

    it('when the first statement (sent with the BEGIN on PostgreSQL) carries a nasty string or fails, then it is stored unchanged or nothing is, and the connection stays usable', {
      skip,
    }, async () => {
      const writer = createWriter(t.app.orm, () => undefined);
      const [row] = await writer.transaction(async (tx) => {
        const inserted = await tx.all<{ id: number | string }>(
          'insert into categories (name, name_key, description, created_at) values (?, ?, ?, ?) returning id',
          [NASTY, `k${randomBytes(4).toString('hex')}`, NASTY, new Date()],
        );
        await tx.run('update categories set description = ? where id = ?', [`${NASTY}!`, Number(inserted[0]!.id)]);
        return inserted;
      });
      const stored = await t.admin.get(`/v1/categories/${Number(row!.id)}`);
      assert.equal(stored.body.name, NASTY);
      assert.equal(stored.body.description, `${NASTY}!`);

      const before = await t.admin.get('/v1/categories?limit=100');
      await assert.rejects(
        writer.transaction((tx) =>
          tx.run('insert into categories (name, name_key, description, created_at) values (?, ?, ?, ?)', [
            null,
            'nameless',
            null,
            new Date(),
          ]),
        ),
        NotNullConstraintViolationException,
      );
      assert.deepEqual((await t.admin.get('/v1/categories?limit=100')).body, before.body);
      // A transaction that writes nothing commits nothing, and the next one commits.
      assert.equal(await writer.transaction(async () => 42), 42);
      await writer.transaction((tx) =>
        tx.run('insert into categories (name, name_key, description, created_at) values (?, ?, ?, ?)', [
          'After',
          'after',
          null,
          new Date(),
        ]),
      );
      assert.ok((await t.admin.get('/v1/categories?limit=100')).body.some((c: { name: string }) => c.name === 'After'));
    });

    it('when an order is placed without a key, then (PostgreSQL) it is one statement, no BEGIN or COMMIT, and its events say what REST says, the last unit included', {
      skip,
    }, async () => {
      const { petId } = await createPet(t, { stock: 3 });
      const { client } = await createAccount(t);
      const from = Math.max(0, ...(await walk(t.admin, '/v1/events?limit=100')).items.map((e) => e.id));
      assert.equal((await client.get('/v1/pets?limit=1')).status, 200, 'the key is looked up (and cached) before');
      const sql = recordSql(t.app);
      sql.start();
      const first = await client.post('/v1/store/orders', { petId, quantity: 1, shipDate: '2031-02-03T04:05:06.789Z' });
      const statements = sql.stop();
      assert.equal(first.status, 201, first.text);
      // The app's own database: under `npm run test:postgres` the "SQLite" suite's app runs on PostgreSQL too.
      if (createWriter(t.app.orm, () => undefined).dialect === 'postgresql') {
        assert.equal(statements.length, 1, statements.join('\n---\n'));
        assert.match(statements[0]!, /insert into orders[\s\S]*insert into events/);
        // Announced after the commit (src/events/outbox-notifier.ts): a NOTIFY would make the commits take turns.
        assert.doesNotMatch(statements[0]!, /notify/i);
      } else {
        assert.deepEqual(
          statements.map((s) => s.split(/\s/)[0]!.toLowerCase()),
          ['update', 'insert', 'insert', 'commit;'],
        );
      }
      const last = await client.post('/v1/store/orders', { petId, quantity: 2 });
      assert.equal(last.status, 201, last.text);
      const refused = await client.post('/v1/store/orders', { petId, quantity: 1 });
      assert.equal(refused.status, 409, refused.text);

      const events = (await walk(t.admin, `/v1/events?after=${from}&types=order.placed,inventory.changed&limit=100`)).items.filter(
        (e) => e.data.petId === petId,
      );
      assert.deepEqual(
        events.map((e) => e.type),
        ['order.placed', 'inventory.changed', 'order.placed', 'inventory.changed'],
      );
      // The same JSON text as REST's answer, key order included (a webhook's body carries it as stored).
      assert.equal(JSON.stringify(events[0].data), JSON.stringify(first.body));
      assert.equal(JSON.stringify(events[2].data), JSON.stringify(last.body));
      assert.deepEqual(events[1].data, { petId, quantity: 2, status: 'available' });
      const inventory = await t.admin.get(`/v1/store/inventory/${petId}`);
      assert.deepEqual(inventory.body, { petId, quantity: 0, status: 'pending' });
      assert.equal(JSON.stringify(events[3].data), JSON.stringify(inventory.body));
    });
  });
}
