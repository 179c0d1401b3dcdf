/**
 * Young collections per request: how often V8 collects the young generation under one scenario's load, what each
 * collection costs, and what requests allocate and leave alive, from V8's own trace (`--trace-gc-nvp`). The
 * instruction counter says how much of a request goes to collections; this says why.
 *
 *   npm run bench:gc -- [--only apollo-pet,gql-pet] [--requests 20000] [--warmup 6000] [--connections 8]
 *     [--node PATH] [--node-args=FLAGS]
 *   npm run bench:gc -- --only gql-pet --node-args=--max-semi-space-size=32     # the service on another young generation
 *
 * Each scenario runs on a server of its own (started as the instruction counter starts it, outside valgrind), one
 * after another: `--warmup` requests, then `--requests` counted. Printed per scenario: young collections per 1,000
 * requests, the main thread's pause per collection, the pause per 1,000 requests, V8's background copying per 1,000
 * requests (Node 24 and later copy on a helper thread while the main thread waits), and bytes per request allocated,
 * surviving a collection and promoted to the old generation. `--node-args` go after a server's own flags (the later
 * V8 flag wins), to every server of the run.
 */
import { spawn } from 'node:child_process';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { benchArgs, measuredCommit, nodeVersion, refuse } from './cli.js';
import { scenarioRequest, TARGET_SCENARIOS } from './scenarios.js';
import { seedBenchDatabase } from './seed.js';
import { announcedUrl, checkAnswer, serverCommand, serverOf, writeOnce } from './start-server.js';

/** One young collection as V8 traces it: `key=value` pairs (Node 20, 22) or a JSON object after `GC: ` (Node 24 and later). */
function youngCollections(trace: string): Array<Record<string, number>> {
  const out: Array<Record<string, number>> = [];
  for (const line of trace.split('\n')) {
    let fields: Record<string, unknown> | undefined;
    const json = line.indexOf('GC: {');
    if (json >= 0) {
      try {
        fields = JSON.parse(line.slice(json + 4)) as Record<string, unknown>;
      } catch {
        continue; // a line that another write cut
      }
    } else if (line.includes(' gc=')) {
      fields = Object.fromEntries(
        line
          .split(/\s+/)
          .map((pair) => pair.split('=') as [string, string?])
          .filter(([, v]) => v !== undefined),
      );
    }
    if (fields?.gc !== 's') continue;
    out.push(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, Number(v)])));
  }
  return out;
}

export interface YoungGc {
  perThousand: number;
  pauseMs: number;
  pausePerThousandMs: number;
  backgroundPerThousandMs: number;
  allocated: number;
  survived: number;
  promoted: number;
}

/** Loads scenario `id` on a server of its own and reads its young collections over the counted requests. */
async function measure(
  id: string,
  work: string,
  db: Awaited<ReturnType<typeof seedBenchDatabase>>,
  options: { requests: number; warmup: number; connections: number; node: string; nodeArgs: string[] },
): Promise<YoungGc> {
  const kind = serverOf(id);
  const database = join(work, `${id}.db`);
  copyFileSync(db.file, database);
  const command = serverCommand(kind, database, db.enterpriseKey);
  const logFile = join(work, `${id}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(options.node, [...command.nodeArgs, ...options.nodeArgs, '--trace-gc-nvp', command.script], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', ...command.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  try {
    const url = await announcedUrl(id, child, logFile, 60_000);
    if (kind === 'service') await writeOnce(url, db.adminKey);
    await checkAnswer(url, db.enterpriseKey, id);
    const load = (amount: number) =>
      autocannon({ ...scenarioRequest(url, db.enterpriseKey, id), connections: options.connections, amount });
    await load(options.warmup);
    const from = statSync(logFile).size;
    const result = await load(options.requests);
    const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0;
    if (ok !== options.requests) throw new Error(`${id}: ${options.requests} sent, ${ok} answered 2xx`);
    // V8 writes the trace line as a collection ends: the last one of the load is in the file at once.
    const collections = youngCollections(readFileSync(logFile).subarray(from).toString('utf8'));
    const sum = (key: string) => collections.reduce((total, c) => total + (c[key] ?? 0), 0);
    const per = (x: number) => x / options.requests;
    return {
      perThousand: per(collections.length) * 1000,
      pauseMs: collections.length ? sum('pause') / collections.length : 0,
      pausePerThousandMs: per(sum('pause')) * 1000,
      backgroundPerThousandMs: per(sum('background.scavenge.parallel')) * 1000,
      allocated: per(sum('allocated')),
      survived: per(sum('new_space_survived')),
      promoted: per(sum('promoted')),
    };
  } finally {
    child.kill('SIGTERM');
  }
}

const { values: args } = benchArgs(import.meta.url, {
  options: {
    only: { type: 'string', default: 'apollo-pet,gql-pet' },
    requests: { type: 'string', default: '20000' },
    warmup: { type: 'string', default: '6000' },
    connections: { type: 'string', default: '8' },
    node: { type: 'string' },
    'node-args': { type: 'string', default: '' },
  },
});
const ids = args.only.split(',');
const unknown = ids.find((id) => !TARGET_SCENARIOS.includes(id));
if (unknown !== undefined) refuse(import.meta.url, `unknown scenario ${unknown} (one of ${TARGET_SCENARIOS.join(', ')})`);
const node = args.node ? resolve(args.node) : process.execPath;
const log = (line: string) => process.stdout.write(`${line}\n`);
log(`young collections: commit ${measuredCommit()}, servers on node ${nodeVersion(node)}, ${new Date().toISOString().slice(0, 10)}`);
const work = mkdtempSync(join(tmpdir(), 'petstore-gc-'));
try {
  const db = await seedBenchDatabase(join(work, 'seed.db'), { manyKeys: 0 });
  const options = {
    requests: Number(args.requests),
    warmup: Number(args.warmup),
    connections: Number(args.connections),
    node,
    nodeArgs: args['node-args'].split(' ').filter(Boolean),
  };
  log('');
  log(
    '| scenario | collections / 1,000 req | pause each (ms) | pause / 1,000 req (ms) | background copying / 1,000 req (ms) | allocated / req | survived / req | promoted / req |',
  );
  log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  for (const id of ids) {
    const gc = await measure(id, work, db, options);
    log(
      `| ${id} | ${gc.perThousand.toFixed(1)} | ${gc.pauseMs.toFixed(2)} | ${gc.pausePerThousandMs.toFixed(1)} | ${gc.backgroundPerThousandMs.toFixed(1)} | ${kb(gc.allocated)} | ${kb(gc.survived)} | ${kb(gc.promoted)} |`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
