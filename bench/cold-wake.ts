/**
 * What the first piece of work after an idle spell costs, against the same work done again at once: an idle
 * service's CPU is its wake-ups (the outbox readers' polls, the pool's reaper, the metrics' sampler), and on a host
 * that makes the first touch of memory after idleness dear, each wake-up costs what it touches, not what it computes.
 *
 *   npm run build && node dist/bench/cold-wake.js [--rounds 5] [--idle-ms 2000]
 *
 * Each round sleeps `--idle-ms`, then measures the process's CPU (`process.cpuUsage`, all threads) for: a loop of
 * arithmetic (~35 µs when warm), the webhook reader's per-run EntityManager fork (src/events/commit-signal.ts's
 * `readerFork`, on the service's own ORM over a scratch SQLite file), the same fork again, and the loop again.
 */
import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './cli.js';
import { loadConfig } from '../src/config.js';
import { createOrm } from '../src/db/orm.js';
import { readerFork } from '../src/events/commit-signal.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '5' }, 'idle-ms': { type: 'string', default: '2000' } } });

const dir = mkdtempSync(join(tmpdir(), 'petstore-cold-wake-'));
process.env.DATABASE_URL = `sqlite:${join(dir, 'scratch.db')}`;
const orm = await createOrm(loadConfig());
let sink = 0;
const arithmetic = () => {
  let x = 0;
  for (let i = 0; i < 20_000; i++) x += Math.sqrt(i);
  sink += x;
};
const fork = () => void readerFork(orm);
const cpuMicros = (work: () => void) => {
  const before = process.cpuUsage();
  work();
  const used = process.cpuUsage(before);
  return used.user + used.system;
};

try {
  for (let i = 0; i < 2000; i++) {
    fork();
    arithmetic();
  }
  console.log(`node ${process.version}; CPU µs of each step after ${args['idle-ms']} ms idle (warm: the same step right after)`);
  for (let round = 1; round <= Number(args.rounds); round++) {
    await new Promise((resolve) => setTimeout(resolve, Number(args['idle-ms'])));
    const cold = cpuMicros(arithmetic);
    const forkCold = cpuMicros(fork);
    const forkWarm = cpuMicros(fork);
    const warm = cpuMicros(arithmetic);
    console.log(`  round ${round}: arithmetic ${cold} (warm ${warm}), EntityManager fork ${forkCold} (warm ${forkWarm})`);
  }
} finally {
  await orm.close();
  rmSync(dir, { recursive: true, force: true });
}
if (sink < 0) console.log(sink);
