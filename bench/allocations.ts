/**
 * Bytes allocated per request, by function: what each request leaves for the garbage collector. Where a CPU
 * profile shows where time goes, this shows the allocations that cost GC time and cache misses later, in code the
 * profile charges nothing to.
 *
 *   npm run build && node dist/bench/allocations.js [--only floor,rest-ids,gql-ids] [--warmup 3] [--duration 5] [--connections 8] [--top 25] [--env NAME=VALUE …] [--node PATH]
 *
 * Seeds the bench database, starts each server as the bench does (bench/start-server.ts) with
 * bench/allocation-sampler.ts loaded, loads it with the 10-id read (REST's, or GraphQL's for `gql-ids`) for `--warmup` seconds, then samples V8's
 * allocations (one sample per 4 KB on average, collected objects included) for `--duration` seconds of the same
 * load, and prints the bytes per request in all and of the `--top` functions that allocated most themselves.
 * Allocation counts do not move with the neighbours as CPU time does.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './cli.js';
import { projectPath } from '../src/project-path.js';
import { seedBenchDatabase } from './seed.js';
import { envOption } from './scenarios.js';
import { benchServer, loadIds, nodeVersion } from './start-server.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    only: { type: 'string', default: 'floor,rest-ids' },
    warmup: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '8' },
    top: { type: 'string', default: '25' },
    /** NAME=VALUE for the service's environment (repeatable), e.g. `--env LOG_LEVEL=warn`; F gets none. */
    env: { type: 'string', multiple: true, default: [] },
    /** The node that runs the servers (default: this one), e.g. `--node "$(npx -y node@24 -p process.execPath)"`. */
    node: { type: 'string', default: process.execPath },
  },
});
const log = (line: string) => process.stdout.write(`${line}\n`);

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** Self bytes by function (`name file:line`, paths shortened to the package or the project file). */
function bytesByFunction(head: ProfileNode): Map<string, number> {
  const out = new Map<string, number>();
  const root = projectPath('.');
  const walk = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const path = url.startsWith('file:') ? fileURLToPath(url) : url;
    const inProject = path.startsWith(`${root}/`) ? relative(root, path) : path;
    const file = inProject.startsWith('node_modules/') ? inProject.slice('node_modules/'.length) : inProject;
    const name = `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''}`;
    out.set(name, (out.get(name) ?? 0) + node.selfSize);
    node.children.forEach(walk);
  };
  walk(head);
  return out;
}

const sampler = projectPath('dist/bench/allocation-sampler.js');
const work = mkdtempSync(join(tmpdir(), 'petstore-allocations-'));
try {
  const db = await seedBenchDatabase(join(work, 'seed.db'));
  const load = (name: string, url: string, seconds: number) => loadIds(name, url, db.enterpriseKey, Number(args.connections), seconds);
  log(`Bytes allocated per request (${args.duration} s sampled after ${args.warmup} s of warm-up, ${args.connections} connections, node ${nodeVersion(args.node)})`);
  for (const name of args.only.split(',')) {
    const file = join(work, `${name}.db`);
    copyFileSync(db.file, file);
    const profileFile = join(work, `${name}.heapprofile`);
    const server = await benchServer(name, file, db, work, {
      serviceEnv: envOption(args.env),
      env: { ALLOCATION_PROFILE: profileFile },
      nodeArgs: ['--import', sampler],
      node: args.node,
    });
    const logged = (line: string) => readFileSync(join(work, `${name}.log`), 'utf8').includes(line);
    const waitFor = async (what: string, done: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`${name}: ${what} within 10 s (bench/allocation-sampler.ts; its log: ${join(work, `${name}.log`)})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    try {
      await load(name, server.url, Number(args.warmup));
      server.child.kill('SIGUSR2');
      await waitFor('allocation sampling did not start', () => logged('allocation sampling started'));
      const ok = await load(name, server.url, Number(args.duration));
      server.child.kill('SIGUSR2');
      await waitFor('no allocation profile was written', () => existsSync(profileFile));
      const bytes = bytesByFunction((JSON.parse(readFileSync(profileFile, 'utf8')) as { head: ProfileNode }).head);
      const perRequest = (b: number) => Math.round(b / ok);
      const total = [...bytes.values()].reduce((a, b) => a + b, 0);
      log(`  ${name}: ${ok} requests, ${perRequest(total)} bytes per request`);
      for (const [fn, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, Number(args.top))) log(`    ${String(perRequest(b)).padStart(7)}  ${fn}`);
    } finally {
      server.child.kill('SIGTERM');
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
