/**
 * Event writers do not take turns (no lock from the event's insert to the commit): on PostgreSQL two
 * transactions may commit in the other order than their events' ids, or than their transactions'. A reader
 * (the feed, the subscription stream, the webhook relay) must never pass over an event that commits late:
 * readers read below the snapshot's xmin, in (transaction id, id) order, and the feed resumes after an id.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { EventsService, recordEvent } from '../../src/domain/events.service.js';
import type { EventPosition } from '../../src/domain/event-position.js';
import type { EntityManager } from '@mikro-orm/knex';

describe('events on PostgreSQL: transactions that commit in the other order', async () => {
  const pg = await postgresUrl();
  const skip = skipUnless(pg, 'PostgreSQL');
  const name = `petstore_late_${process.pid}_${randomBytes(3).toString('hex')}`;
  let t: TestApp;
  before(async () => {
    if (!skip) t = await startApp({ databaseUrl: await createDatabase(pg!, name) });
  });
  after(async () => {
    if (skip) return;
    await t?.close();
    await dropDatabase(pg!, name);
  });

  const feed = async (after: number) => {
    const res = await t.admin.get(`/v1/events?types=pet.updated&limit=100&after=${after}`);
    assert.equal(res.status, 200, res.text);
    return res.body as Array<{ id: number; data: { name: string } }>;
  };
  const stream = (position: EventPosition) => new EventsService(t.app.orm.em.fork()).eventsAfter(position, 100);
  const names = (events: Array<{ data: Record<string, unknown> }>) => events.map((e) => e.data.name);

  /** A transaction left open after `work`, until `commit` is called; resolves `open` once `work` is done. */
  function openTransaction(work: (em: EntityManager) => Promise<void>) {
    let commit!: () => void;
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const held = new Promise<void>((resolve) => (commit = resolve));
    const done = t.app.orm.em.fork().transactional(async (em) => {
      await work(em as EntityManager);
      opened();
      await held;
    });
    return { open, commit, done };
  }
  const pet = (em: EntityManager, label: string) => recordEvent(em, 'pet.updated', { id: 1, name: label, categoryId: 1, status: 'available' });

  it('when the transaction with the smaller event id commits last, then a reader that read in between skips it not, and reads both in order', { skip }, async () => {
    const mark = (await feed(0)).at(-1)?.id ?? 0;
    const position = await new EventsService(t.app.orm.em.fork()).newestPosition();
    const early = openTransaction((em) => pet(em, 'A: smaller id, commits last'));
    await early.open;
    await t.app.orm.em.fork().transactional((em) => pet(em, 'B: greater id, commits first'));

    // B has committed, A has not: nobody reads B yet (A's transaction holds the horizon below B's).
    assert.deepEqual(names(await feed(mark)), []);
    assert.deepEqual((await stream(position)).events, []);

    early.commit();
    await early.done;
    const both = await feed(mark);
    assert.deepEqual(names(both), ['A: smaller id, commits last', 'B: greater id, commits first']);
    assert.ok(both[0].id < both[1].id);
    assert.deepEqual(names((await stream(position)).events), names(both));
    assert.deepEqual(names(await feed(both[0].id)), ['B: greater id, commits first']);
  });

  it('when a transaction that began first writes its event after another commits, then both are read, in transaction order, and the feed resumes after either id', { skip }, async () => {
    const mark = (await feed(0)).at(-1)?.id ?? 0;
    const position = await new EventsService(t.app.orm.em.fork()).newestPosition();
    // C gets its transaction id first (a write), D then writes and commits its event; only then does C write its own.
    let write!: () => void;
    const writeNow = new Promise<void>((resolve) => (write = resolve));
    const c = openTransaction(async (em) => {
      await em.execute('select pg_current_xact_id()');
      await writeNow;
      await pet(em, 'C: began first, greater id');
    });
    await t.app.orm.em.fork().transactional((em) => pet(em, 'D: began second, smaller id'));
    assert.deepEqual(names(await feed(mark)), []);
    write();
    await c.open;
    assert.deepEqual(names(await feed(mark)), []);
    c.commit();
    await c.done;

    const both = await feed(mark);
    assert.deepEqual(names(both), ['C: began first, greater id', 'D: began second, smaller id']);
    assert.ok(both[0].id > both[1].id, 'the ids are in the other order than the reads');
    assert.deepEqual(names((await stream(position)).events), names(both));
    assert.deepEqual(names(await feed(both[0].id)), ['D: began second, smaller id']);
    assert.deepEqual(names(await feed(both[1].id)), []);
  });
});
