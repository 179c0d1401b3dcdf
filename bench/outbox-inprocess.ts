/**
 * What the outbox costs an order inside the process, without HTTP: `StoreService.placeOrder` on the
 * benchmark's seeded database (seeded by each build, so each has its own schema; one copy per variant), with the outbox's writes on and off, in
 * interleaved batches in one process, and the CPU per order of each batch. The HTTP benchmark's
 * `order with outbox / without` carries the whole request around the same difference, and its rounds
 * move by tens of per cent on a shared machine; this isolates the order's transaction and what the
 * outbox adds to it. `--against DIR` adds the same two variants from another build (bench/build-ref.sh).
 *
 *   node dist/bench/outbox-inprocess.js [--rounds 14] [--batch 2000] [--against "$(bash bench/build-ref.sh main)"]
 */
import 'reflect-metadata';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgs } from './cli.js';
import { projectPath } from '../src/project-path.js';
import { PET_COUNT } from './seed.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '14' },
    batch: { type: 'string', default: '2000' },
    against: { type: 'string' },
  },
});

interface Variant {
  name: string;
  place(petId: number): Promise<unknown>;
  close(): Promise<unknown>;
  cpu: number[];
}

/** The order path of one build (its own modules, so two builds can run side by side), on its own copy of the database. */
async function variant(name: string, root: string, file: string, outbox: boolean): Promise<Variant> {
  const at = (path: string) => import(join(root, 'dist/src', path));
  const [{ loadConfig }, { createOrm }, { createWriter }, { createReader }, { StoreService }] = await Promise.all([
    at('config.js'),
    at('db/orm.js'),
    at('db/writer.js'),
    at('db/reader.js'),
    at('domain/store.service.js'),
  ]);
  const config = loadConfig({ DATABASE_URL: `sqlite:${file}`, NODE_ENV: 'production', LOG_LEVEL: 'silent' });
  const orm = await createOrm(config);
  const reader = await createReader(orm, config.database);
  const store = new StoreService(() => orm.em.fork(), reader, createWriter(orm, () => undefined), undefined, outbox);
  // The benchmark's enterprise customer (the second account the seed creates).
  const actor = { accountId: 2, role: 'customer' };
  return {
    name,
    place: (petId) => store.placeOrder(actor, { petId, quantity: 1 }),
    close: async () => {
      reader.close();
      await orm.close(true);
    },
    cpu: [],
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const work = mkdtempSync(join(tmpdir(), 'petstore-outbox-'));
try {
  const builds: Array<[string, string]> = [['this build', projectPath('.')], ...(args.against ? [['--against', resolve(args.against)] as [string, string]] : [])];
  const variants: Variant[] = [];
  for (const [label, root] of builds) {
    const { seedBenchDatabase } = await import(join(root, 'dist/bench/seed.js'));
    const seed: { file: string } = await seedBenchDatabase(join(work, `seed-${variants.length}.db`));
    const copy = () => {
      const file = join(work, `${variants.length}.db`);
      copyFileSync(seed.file, file);
      return file;
    };
    variants.push(await variant(`${label}, outbox on`, root, copy(), true));
    variants.push(await variant(`${label}, outbox off`, root, copy(), false));
  }
  let pet = 0;
  const batch = async (v: Variant, n: number) => {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) {
      pet = (pet % PET_COUNT) + 1;
      await v.place(pet);
    }
    const used = process.cpuUsage(start);
    return (used.user + used.system) / n;
  };
  const size = Number(args.batch);
  for (const v of variants) await batch(v, size); // warm-up
  for (let round = 0; round < Number(args.rounds); round++) {
    // Alternating the order, so neither variant always runs right after the other.
    for (const v of round % 2 ? [...variants].reverse() : variants) v.cpu.push(await batch(v, size));
  }
  process.stdout.write(`CPU µs per order (median of ${args.rounds} batches of ${size}; placeOrder in-process, SQLite):\n`);
  for (const v of variants) process.stdout.write(`  ${v.name.padEnd(26)} ${median(v.cpu).toFixed(1).padStart(6)}   batches: ${v.cpu.map((x) => x.toFixed(0)).join(' ')}\n`);
  for (let i = 0; i < variants.length; i += 2) {
    const on = variants[i]!;
    const off = variants[i + 1]!;
    const ratios = on.cpu.map((c, r) => off.cpu[r]! / c);
    process.stdout.write(
      `  ${on.name.replace(', outbox on', '')}: the outbox adds ${(median(on.cpu) - median(off.cpu)).toFixed(1)} µs; without / with ${(median(ratios) * 100).toFixed(0)}% (batch ratios ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})\n`,
    );
  }
  for (const v of variants) await v.close();
} finally {
  rmSync(work, { recursive: true, force: true });
}
