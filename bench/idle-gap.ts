/**
 * What a read costs right after the service sat idle, against the same read with no gap: the service's CPU µs per
 * request over 3 s of the 10-id REST read (32 connections) after each idle spell, and over the 3 s after that.
 *
 *   npm run build && node dist/bench/idle-gap.js [--gaps 5,20,35,50] [--node-args=--no-flush-bytecode]
 *
 * Written for the full `npm run bench` of 2026-11-29 (docs/PERFORMANCE-LOG.md), where the service's REST read, the
 * first of its scenarios after ~45 s of serving nothing, cost ~30% more than its limiter-off twin round after round.
 * One run of this tool showed it (50 s after shorter gaps: 167 against 132 with no gap and 121–126 after shorter
 * gaps, 138 in the 3 s after); a lone 50 s gap did not, with or without the V8 flags tried. Kept to chase it: the
 * gaps and the node flags are options.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchArgs, refuse } from './cli.js';
import { cpuMs } from './idle.js';
import { seedBenchDatabase } from './seed.js';
import { benchServer, loadIds } from './start-server.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    /** Idle spells in seconds, in order, each followed by two measured loads. */
    gaps: { type: 'string', default: '5,20,35,50' },
    /** Node flags for the service, after its start command's own. */
    'node-args': { type: 'string', default: '' },
  },
});
const gaps = args.gaps.split(',').map(Number);
if (gaps.some((gap) => !Number.isFinite(gap) || gap < 0)) refuse(import.meta.url, `--gaps takes seconds separated by commas, got ${JSON.stringify(args.gaps)}`);
const log = (line: string) => process.stdout.write(`${line}\n`);

const work = mkdtempSync(join(tmpdir(), 'petstore-idle-gap-'));
const db = await seedBenchDatabase(join(work, 'seed.db'));
const server = await benchServer('memory', db.file, db, work, { nodeArgs: args['node-args'].split(' ').filter(Boolean) });
try {
  const pid = server.child.pid!;
  const measure = async (label: string) => {
    const before = cpuMs(pid);
    const requests = await loadIds('rest-ids', server.url, db.enterpriseKey, 32, 3);
    log(`${label.padEnd(20)} ${(((cpuMs(pid) - before) * 1000) / requests).toFixed(0).padStart(4)} CPU µs/request`);
  };
  await measure('warm-up');
  await measure('no gap');
  for (const gap of gaps) {
    await new Promise((resolve) => setTimeout(resolve, gap * 1000));
    await measure(`after ${gap} s idle`);
    await measure('  the 3 s after');
  }
} finally {
  server.child.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
}
