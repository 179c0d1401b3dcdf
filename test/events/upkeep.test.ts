/**
 * The outbox's upkeep also purges every account's expired idempotency records, in bounded batches: an
 * account that stops ordering leaves nothing behind past the retention (on SQLite and on PostgreSQL).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { createAccount, createPet, recordSql, startApp, type TestApp } from '../helpers/app.js';
import { startOutboxUpkeep } from '../../src/events/outbox-upkeep.js';
import { purgeExpiredIdempotencyRecords } from '../../src/domain/idempotency.service.js';

describe('events: the upkeep purges expired idempotency records of every account', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const records = async (accountId: number) =>
    Number(
      (
        await t.app.orm.em
          .getConnection()
          .execute<{ n: number | string }[]>('select count(*) as n from idempotency_records where account_id = ?', [accountId])
      )[0]!.n,
    );
  async function order(client: { post: (p: string, b: unknown, o: object) => Promise<{ status: number }> }, petId: number, n: number) {
    for (let i = 0; i < n; i++)
      assert.equal(
        (await client.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'idempotency-key': randomUUID() } })).status,
        201,
      );
  }
  const age = (accountId: number) =>
    t.app.orm.em.fork().nativeUpdate('IdempotencyRecord', { account: accountId }, { expiresAt: new Date(Date.now() - 1000) });

  it('when an account that stopped ordering has expired records, then the upkeep drops them and keeps the live ones of others', async () => {
    const { petId } = await createPet(t, { stock: 100 });
    const quiet = await createAccount(t, { name: 'Quiet' });
    const busy = await createAccount(t, { name: 'Busy' });
    await order(quiet.client, petId, 12);
    await age(quiet.accountId);
    await order(busy.client, petId, 3);
    assert.equal(await records(quiet.accountId), 12);

    const stop = startOutboxUpkeep(t.app.orm, pino({ level: 'silent' }), 3_600_000);
    await stop();
    assert.equal(await records(quiet.accountId), 0, "the quiet account's expired records are gone");
    assert.equal(await records(busy.accountId), 3, 'live records stay');
  });

  it('when many records are expired, then they go in deletes of at most one batch each', async () => {
    const { petId } = await createPet(t, { stock: 100 });
    const a = await createAccount(t, { name: 'Batch A' });
    const b = await createAccount(t, { name: 'Batch B' });
    const c = await createAccount(t, { name: 'Batch C' });
    await order(a.client, petId, 7);
    await order(b.client, petId, 5);
    await age(a.accountId);
    await age(b.accountId);
    await order(c.client, petId, 1);
    const sql = recordSql(t.app);
    sql.start();
    const n = await purgeExpiredIdempotencyRecords(t.app.orm.em.fork(), new Date(), 5);
    const ran = sql.stop();
    assert.equal(n, 12, ran.join('\n'));
    const deletes = ran.filter((s) => /^delete from .?idempotency_records/i.test(s));
    assert.equal(deletes.length, 3, deletes.join('\n'));
    assert.equal(await records(a.accountId), 0);
    assert.equal(await records(b.accountId), 0);
    assert.equal(await records(c.accountId), 1);
  });
});
