/**
 * Event writers do not take turns (no lock from the event's insert to the commit): on PostgreSQL two
 * transactions may commit in the other order than their events' ids, or than their transactions'. A reader
 * (the feed, the subscription stream, the webhook relay) must never pass over an event that commits late:
 * readers read below the snapshot's xmin, in (transaction id, id) order, and the feed resumes after an id. A feed
 * read waits a bounded while for events committed behind an older transaction (read your writes on any instance).
 */
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startApp, type TestApp } from '../helpers/app.js';
import { onOwnPostgres } from '../helpers/services.js';
import { setTimeout } from 'node:timers/promises';
import { EventsService, FEED_SETTLE_MS, recordEvent } from '../../src/domain/events.service.js';
import type { EventPosition } from '../../src/domain/event-position.js';
import type { EntityManager } from '@mikro-orm/knex';
import pgDriver from 'pg';
import { eventually, startReceiver, subscribe, verified, wsClient } from './support.js';

describe('events on PostgreSQL: transactions that commit in the other order', async () => {
  let t: TestApp;
  let databaseUrl: string;
  const skip = await onOwnPostgres('late', {
    // Polls a minute apart: what reaches the stream or a webhook here comes from a wake-up or a held read's retry.
    setup: async (url) => {
      t = await startApp({
        databaseUrl: (databaseUrl = url),
        env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_POLL_MS: '60000', SUBSCRIPTION_POLL_MS: '60000' },
      });
    },
    teardown: async () => {
      await t?.close();
    },
  });

  const feed = async (after: number) => {
    const res = await t.admin.get(`/v1/events?types=pet.updated&limit=100&after=${after}`);
    assert.equal(res.status, 200, res.text);
    return res.body as Array<{ id: number; data: { name: string } }>;
  };
  const stream = (position: EventPosition) => new EventsService(t.app.orm.em.fork()).eventsAfter(position, 100);
  const names = (events: Array<{ data: Record<string, unknown> }>) => events.map((e) => e.data.name);

  /** What lets a test's open transactions end when an assertion failed before it did (else closing the app would wait on them). */
  const releases: Array<() => void> = [];
  afterEach(() => {
    for (const release of releases.splice(0)) release();
  });

  /** A transaction left open after `work`, until `commit` is called; resolves `open` once `work` is done. */
  function openTransaction(work: (em: EntityManager) => Promise<void>) {
    let commit!: () => void;
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const held = new Promise<void>((resolve) => (commit = resolve));
    releases.push(commit);
    const done = t.app.orm.em.fork().transactional(async (em) => {
      await work(em as EntityManager);
      opened();
      await held;
    });
    return { open, commit, done };
  }
  const pet = (em: EntityManager, label: string) =>
    recordEvent(em, 'pet.updated', { id: 1, name: label, categoryId: 1, status: 'available' });

  it('when the transaction with the smaller event id commits last, then a reader that read in between skips it not, and reads both in order', {
    skip,
  }, async () => {
    const mark = (await feed(0)).at(-1)?.id ?? 0;
    const position = await new EventsService(t.app.orm.em.fork()).newestPosition();
    const early = openTransaction((em) => pet(em, 'A: smaller id, commits last'));
    await early.open;
    await t.app.orm.em.fork().transactional((em) => pet(em, 'B: greater id, commits first'));

    // B has committed, A has not: the stream reads nothing yet (A's transaction holds the horizon below B's);
    // a feed read waits for A (a client that saw B's change answered reads it on the feed, at once or A's end).
    assert.deepEqual((await stream(position)).events, []);
    let answered = false;
    const reading = feed(mark).then((events) => {
      answered = true;
      return events;
    });
    await setTimeout(200);
    assert.equal(answered, false, 'the feed waits for the transaction that began first');
    early.commit();
    await early.done;
    const both = await reading;
    assert.deepEqual(names(both), ['A: smaller id, commits last', 'B: greater id, commits first']);
    assert.ok(both[0].id < both[1].id);
    assert.deepEqual(names((await stream(position)).events), names(both));
    assert.deepEqual(names(await feed(both[0].id)), ['B: greater id, commits first']);
  });

  it('when a transaction that began first writes its event after another commits, then both are read, in transaction order, and the feed resumes after either id', {
    skip,
  }, async () => {
    const mark = (await feed(0)).at(-1)?.id ?? 0;
    const position = await new EventsService(t.app.orm.em.fork()).newestPosition();
    // C gets its transaction id first (a write), D then writes and commits its event; only then does C write its own.
    let write!: () => void;
    const writeNow = new Promise<void>((resolve) => (write = resolve));
    releases.unshift(() => write());
    let hasId!: () => void;
    const cHasId = new Promise<void>((resolve) => (hasId = resolve));
    const c = openTransaction(async (em) => {
      await em.execute('select pg_current_xact_id()');
      hasId();
      await writeNow;
      await pet(em, 'C: began first, greater id');
    });
    // D begins only once C holds its transaction id (else D would simply be the older one).
    await cHasId;
    await t.app.orm.em.fork().transactional((em) => pet(em, 'D: began second, smaller id'));
    // C stays open past the feed's wait: the page holds what may be read (nothing), D comes on a later read.
    const started = Date.now();
    assert.deepEqual(names(await feed(mark)), []);
    assert.ok(Date.now() - started >= FEED_SETTLE_MS, 'the feed waited its while for C before answering');
    write();
    await c.open;
    assert.deepEqual((await stream(position)).events, []);
    const reading = feed(mark);
    await setTimeout(100);
    c.commit();
    await c.done;

    const both = await reading;
    assert.deepEqual(names(both), ['C: began first, greater id', 'D: began second, smaller id']);
    assert.ok(both[0].id > both[1].id, 'the ids are in the other order than the reads');
    assert.deepEqual(names((await stream(position)).events), names(both));
    assert.deepEqual(names(await feed(both[0].id)), ['D: began second, smaller id']);
    assert.deepEqual(names(await feed(both[1].id)), []);
  });

  it('when an event commits behind an older transaction, then the subscription stream and the webhook relay get it soon after that transaction ends, not at their next poll', {
    skip,
  }, async () => {
    const receiver = await startReceiver();
    const { client } = wsClient(t.url, t.adminKey);
    try {
      const hook = (await t.admin.post('/v1/webhooks', { url: receiver.url, events: ['category.created'] })).body;
      const sub = await subscribe(client, 'subscription { events(types: ["category.created"]) { data { ... on Category { name } } } }');
      // An older transaction of another process (its own connection) holds a transaction id, and so the readers'
      // horizon, and writes nothing: its end notifies nobody and wakes nothing here.
      const other = new pgDriver.Client({ connectionString: databaseUrl });
      await other.connect();
      releases.push(() => void other.end());
      await other.query('begin');
      await other.query('select pg_current_xact_id()');
      const name = `Held ${randomBytes(3).toString('hex')}`;
      assert.equal((await t.admin.post('/v1/categories', { name })).status, 201);
      // The commit woke both readers; what they read is behind the older transaction: nothing yet.
      await setTimeout(300);
      assert.equal(sub.results.length, 0, 'nothing is pushed while an older transaction may still write an earlier event');
      assert.equal(receiver.received.length, 0);
      await other.query('commit');
      await other.end();
      // Both readers poll a minute apart here: only the held read's retry brings the event within seconds.
      const started = Date.now();
      await eventually('the held event pushed', () => sub.results.length >= 1, 50, 100);
      await eventually('the held event delivered', () => receiver.received.length >= 1, 50, 100);
      assert.ok(Date.now() - started < 5_000, 'soon after the older transaction ended, not at the minute poll');
      assert.equal(sub.results[0].data.events.data.name, name);
      assert.equal(verified(hook.secret, receiver.received[0]!).data.name, name);
      sub.dispose();
    } finally {
      await client.dispose();
      await receiver.close();
    }
  });
});
