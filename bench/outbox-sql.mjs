/**
 * What the outbox's insert costs SQLite itself, outside the service: the order's write set (the conditional
 * stock decrement, the order insert) in a `BEGIN IMMEDIATE` transaction, N times, on a fresh WAL file per
 * variant of the `events` table, and the CPU per transaction. Prices the schema levers (no `created_at`
 * index, no AUTOINCREMENT) before anyone writes a migration for them.
 *
 *   node bench/outbox-sql.mjs [N=20000]
 */
import Database from 'libsql';
import { mkdtempSync } from 'node:fs'; import { join } from 'node:path'; import { tmpdir } from 'node:os';
const variants = {
  'autoincrement + created_at index (today)': ['create table events (id integer not null primary key autoincrement, type text not null, data text not null, account_id bigint null, created_at datetime not null)', 'create index events_created_at_index on events (created_at)'],
  'autoincrement, no index': ['create table events (id integer not null primary key autoincrement, type text not null, data text not null, account_id bigint null, created_at datetime not null)'],
  'no autoincrement, index': ['create table events (id integer not null primary key, type text not null, data text not null, account_id bigint null, created_at datetime not null)', 'create index events_created_at_index on events (created_at)'],
  'no events at all (baseline: the order alone)': null,
};
const data = JSON.stringify({ id: '123456', petId: '42', quantity: 1, shipDate: new Date().toISOString(), status: 'placed', complete: false });
const N = Number(process.argv[2] ?? 20000);
for (const round of [1, 2]) for (const [name, ddl] of Object.entries(variants)) {
  const db = new Database(join(mkdtempSync(join(tmpdir(), 'ai-')), 'x.db'));
  db.exec('pragma journal_mode = wal'); db.exec('pragma synchronous = normal');
  db.exec('create table orders (id integer primary key autoincrement, pet_id int, quantity int, ship_date int, complete int)');
  db.exec('create table inv (pet_id integer primary key, quantity int)'); db.exec('insert into inv values (42, 100000000)');
  for (const s of ddl ?? []) db.exec(s);
  const dec = db.prepare('update inv set quantity = quantity - ? where pet_id = ? and quantity >= ? returning quantity');
  const ins = db.prepare('insert into orders (pet_id, quantity, ship_date, complete) values (?, ?, ?, ?)');
  const ev = ddl && db.prepare('insert into events (type, data, account_id, created_at) values (?, ?, ?, ?), (?, ?, ?, ?)');
  const t0 = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    db.exec('BEGIN IMMEDIATE');
    dec.all([1, 42, 1]); ins.run([42, 1, Date.now(), 0]);
    if (ev) { const now = Date.now(); ev.run(['order.placed', data, 7, now, 'inventory.changed', data, null, now]); }
    db.exec('COMMIT');
  }
  const u = process.cpuUsage(t0);
  if (round === 2) console.log(`${((u.user + u.system) / N).toFixed(1)} µs CPU per order transaction — ${name}`);
}
