/**
 * CPU per request by thread: where a server's CPU goes (its main thread's user and system time, and each other
 * thread's), read from /proc/<pid>/task/<tid>/stat before and after a measured load. It tells JavaScript on the
 * main thread (user time) from the kernel's part (system time: socket writes, the log file) and from V8's and
 * libuv's helper threads, which a CPU profile of the main thread cannot.
 *
 *   npm run build && node dist/bench/threads.js [--only floor,rest-ids,gql-ids] [--warmup 3] [--duration 6] [--connections 10] [--env NAME=VALUE …] [--node PATH] [--by-thread]
 *
 * Seeds the bench database, starts each server as `npm run bench` does (production mode, its start command's node
 * flags, the request log to a file), loads it with the 10-id read for `--warmup` seconds, then measures for
 * `--duration` seconds. Servers: `floor` (F, bench/ladder-server.ts), `rest-ids` (the service, read through REST) and
 * `gql-ids` (the service, the same ten pets through GraphQL, the bench's `gql-ids`). `--node` runs the servers on
 * another node (`--node "$(npx -y node@24 -p process.execPath)"`). Like every CPU
 * figure on a shared host, it moves with the neighbours: start from a quiet machine and compare within one run.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs } from './cli.js';
import { seedBenchDatabase } from './seed.js';
import { envOption } from './scenarios.js';
import { benchServer, loadIds, nodeVersion } from './start-server.js';
import { cpuSplit, mainThreadSleeps, threadsCpu } from './idle.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    only: { type: 'string', default: 'floor,rest-ids' },
    warmup: { type: 'string', default: '3' },
    duration: { type: 'string', default: '6' },
    connections: { type: 'string', default: '10' },
    /** NAME=VALUE for the service's environment (repeatable), e.g. `--env LOG_LEVEL=warn`. */
    env: { type: 'string', multiple: true, default: [] },
    /** Also each other thread's CPU per request, by its id and name (V8's compiler and GC helpers, libuv's pool …). */
    'by-thread': { type: 'boolean', default: false },
    /** The node that runs the servers (default: this one). */
    node: { type: 'string', default: process.execPath },
  },
});
const serviceEnv = envOption(args.env);
const log = (line: string) => process.stdout.write(`${line}\n`);

const work = mkdtempSync(join(tmpdir(), 'petstore-threads-'));
try {
  const db = await seedBenchDatabase(join(work, 'seed.db'));
  const load = (name: string, url: string, seconds: number) => loadIds(name, url, db.enterpriseKey, Number(args.connections), seconds);
  log(`CPU µs per request by thread (${args.duration} s measured after ${args.warmup} s of warm-up, ${args.connections} connections, node ${nodeVersion(args.node)})`);
  for (const name of args.only.split(',')) {
    const file = join(work, `${name}.db`);
    copyFileSync(db.file, file);
    const server = await benchServer(name, file, db, work, { serviceEnv, node: args.node });
    try {
      await load(name, server.url, Number(args.warmup));
      const before = threadsCpu(server.child.pid!);
      const sleepsBefore = mainThreadSleeps(server.child.pid!);
      const ok = await load(name, server.url, Number(args.duration));
      const after = threadsCpu(server.child.pid!);
      const sleeps = mainThreadSleeps(server.child.pid!) - sleepsBefore;
      const perRequest = (ms: number) => ((ms * 1000) / ok).toFixed(1);
      const { mainUser, mainSystem, others, byThread: spentBy } = cpuSplit(server.child.pid!, before, after);
      const byThread = [...spentBy].map(([thread, spent]) => `${thread} ${perRequest(spent)}`);
      log(
        `  ${name.padEnd(9)} ${ok} requests: main thread ${perRequest(mainUser)} user + ${perRequest(mainSystem)} system, ` +
          `other threads ${perRequest(others)}, in all ${perRequest(mainUser + mainSystem + others)} µs per request; ` +
          `the main thread slept ${(sleeps / ok).toFixed(3)} times per request`,
      );
      if (args['by-thread']) log(`            other threads (tid name µs per request): ${byThread.join(', ') || 'none'}`);
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
