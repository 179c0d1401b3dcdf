/**
 * Where SQLite spends the outbox's share of an order, statement by statement, on the benchmark's own database
 * (seeded by this build, `npm run build` first): the service's order transaction (the conditional stock
 * decrement, the order insert, the events insert, COMMIT) on the writer's pragmas, N times, with and without the
 * events insert, each on a fresh copy; the CPU per transaction and per step (process.cpuUsage around each, which
 * adds ~1 µs per step to every figure alike).
 *
 *   node bench/outbox-sql-steps.mjs [N=30000]
 */
import Database from 'libsql';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'; import { join } from 'node:path'; import { tmpdir } from 'node:os';
import { seedBenchDatabase, PET_COUNT } from '../dist/bench/seed.js';
const N = Number(process.argv[2] ?? 30000);
const work = mkdtempSync(join(tmpdir(), 'outbox-steps-'));
const seed = await seedBenchDatabase(join(work, 'seed.db'));
const order = JSON.stringify({ id: 123456, petId: 42, quantity: 1, shipDate: null, complete: false });
const stock = JSON.stringify({ petId: 42, quantity: 999000, status: 'available' });
const cpu = () => { const c = process.cpuUsage(); return c.user + c.system; };
for (const round of [1, 2]) for (const events of [false, true]) {
  const file = join(work, `${round}-${events}.db`); copyFileSync(seed.file, file);
  const db = new Database(file);
  for (const p of ['pragma journal_mode = wal', 'pragma synchronous = normal', 'pragma foreign_keys = on', 'pragma busy_timeout = 5']) db.exec(p);
  const dec = db.prepare("update inventory set quantity = quantity - ? where pet_id = ? and quantity >= ? and exists (select 1 from pets p where p.id = inventory.pet_id and p.status = 'available') returning quantity");
  const ins = db.prepare('insert into orders (pet_id, account_id, quantity, ship_date, complete, created_at) values (?, ?, ?, ?, ?, ?) returning id');
  const ev = db.prepare('insert into events (type, data, account_id, created_at) values (?, ?, ?, ?), (?, ?, ?, ?)');
  const steps = { begin: 0, decrement: 0, 'order insert': 0, 'events insert': 0, commit: 0 };
  let pet = 0; const start = cpu();
  for (let i = 0; i < N; i++) {
    pet = (pet % PET_COUNT) + 1;
    let t = cpu(); const lap = (k) => { const n = cpu(); steps[k] += n - t; t = n; };
    db.exec('BEGIN IMMEDIATE'); lap('begin');
    dec.all([1, pet, 1]); lap('decrement');
    ins.all([pet, 2, 1, null, 0, Date.now()]); lap('order insert');
    if (events) { const now = Date.now(); ev.run(['order.placed', order, 2, now, 'inventory.changed', stock, null, now]); lap('events insert'); }
    db.exec('COMMIT'); lap('commit');
  }
  const total = (cpu() - start) / N;
  db.close();
  if (round === 2) console.log(`${total.toFixed(1)} µs CPU per order transaction ${events ? 'with' : 'without'} the events — ${Object.entries(steps).filter(([, v]) => v).map(([k, v]) => `${k} ${(v / N).toFixed(1)}`).join(', ')}`);
}
rmSync(work, { recursive: true, force: true });
