/**
 * `node dist/bench/event-lock.js [--seconds 5] [--connections 16]` (needs PG_URL): what the event writers' commits
 * wait on, and so the cap it puts on a whole deployment's event-writing transactions per second. Three variants:
 * - `advisory lock + NOTIFY`: before 2026-11-26, every event-writing transaction took `pg_advisory_xact_lock` at its
 *   event insert, held to its commit, and NOTIFYed;
 * - `NOTIFY only`: until 2026-11-28, every event-writing transaction still NOTIFYed, and PostgreSQL serialises the
 *   commits of notifying transactions (a lock from before the commit until after its WAL flush);
 * - `neither`: now (each instance announces its commits after them, src/events/outbox-notifier.ts).
 * Each connection loops over an order's last message as the writer sent it (`begin`, a stock decrement, then
 * the variant's lock and NOTIFY, the event insert and the COMMIT as one message), on a database of its own; the
 * server stamps the insert (`clock_timestamp()`) and the client when its commit returned. With a lock of either
 * kind the rate is capped at 1 / (hold time) however many connections or instances write.
 */
import pg from 'pg';
import { benchArgs } from './cli.js';
import { createDatabase, dropDatabase } from '../src/db/pg-admin.js';

const { values } = benchArgs(import.meta.url, { options: { seconds: { type: 'string', default: '5' }, connections: { type: 'string', default: '16' } } });
const base = process.env.PG_URL;
if (!base) throw new Error('Set PG_URL (e.g. postgres://postgres@127.0.0.1:5432/test).');
const name = `petstore_lock_${process.pid}`;
const url = await createDatabase(base, name);
try {
  const setup = new pg.Client({ connectionString: url });
  await setup.connect();
  await setup.query(`create table stock (id int primary key, quantity int); insert into stock select g, 1000000000 from generate_series(1, 100) g;
    create table events (id bigserial primary key, type text, data text, created_at timestamptz)`);
  await setup.end();
  const variants = [
    { label: 'advisory lock + NOTIFY', locked: true, notify: true },
    { label: 'NOTIFY only', locked: false, notify: true },
    { label: 'neither', locked: false, notify: false },
  ];
  for (const { label, locked, notify } of variants) {
    const seconds = Number(values.seconds);
    const clients = await Promise.all(Array.from({ length: Number(values.connections) }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }));
    const holds: number[] = [];
    let commits = 0;
    const until = Date.now() + seconds * 1000;
    await Promise.all(clients.map(async (c, i) => {
      while (Date.now() < until) {
        await c.query('begin');
        await c.query({ name: 'dec', text: 'update stock set quantity = quantity - 1 where id = $1', values: [(i % 100) + 1] });
        const last = `select ${locked ? 'pg_advisory_xact_lock(6192711), ' : ''}${notify ? "pg_notify('petstore_events', '')" : '1'};
          insert into events (type, data, created_at) values ('order.placed', '{"id":1}', clock_timestamp()) returning extract(epoch from clock_timestamp()) * 1000 as at;
          commit`;
        const results = (await c.query(last)) as unknown as Array<{ rows: Array<{ at: string }> }>;
        const lockedAt = Number(results[1].rows[0].at);
        holds.push(Date.now() - lockedAt);
        commits++;
      }
    }));
    await Promise.all(clients.map((c) => c.end()));
    holds.sort((a, b) => a - b);
    const q = (p: number) => holds[Math.min(holds.length - 1, Math.floor(p * holds.length))].toFixed(2);
    console.log(`${label.padEnd(22)}: ${(commits / seconds).toFixed(0)} transactions/s over ${values.connections} connections; ` +
      `insert → commit returned p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, p99 ${q(0.99)} ms`);
  }
} finally {
  await dropDatabase(base, name);
}
