/**
 * Instructions per request, counted by valgrind's callgrind: a measure that does not move with the
 * neighbours on a shared host, for A/B comparisons of one lever (the wall clock and even CPU time do).
 *
 *   npm run build && node dist/bench/instructions.js [--only floor,rest-ids,rest-ids@against] [--requests 2000] [--warmup 6000] [--batches 1] [--against DIR]
 *     [--env NAME=VALUE …] [--cache-sim]   (KEEP=1 keeps the run's directory and callgrind's dumps in it)
 *
 * Seeds the bench database, starts each server under `valgrind --tool=callgrind --instr-atstart=no` (a service then
 * gets one write, as `npm run bench` gives it: bench/start-server.ts, writeOnce)
 * (nothing is counted while it starts and warms up), sends `--warmup` requests, switches counting on
 * (`callgrind_control -i on`), sends `--requests` identical requests over `--connections` keep-alive
 * connections, switches it off, and prints the instructions (Ir) per request. The load generator runs
 * outside valgrind, so only the server's work is counted. The figure is the main thread's, less V8's
 * JIT compilation (whose amount depends on when tiering happens: it moved whole batches by 20–40%);
 * compare the lowest batch of each build, and levers bigger than the batches' spread.
 *
 * `--cache-sim`: callgrind also simulates the caches (first level and last level, sized after this machine's) and
 * the main thread's misses per request are printed beside the instructions: work that costs a server more than
 * its instructions say (a miss costs tens to hundreds of cycles), and more so on a host whose neighbours share the
 * caches. Slower (about twice), and whole-thread, JIT compilation included.
 *
 * Servers: `floor` (F, bench/ladder-server.ts), `rest-ids` (the service), `gql-ids` (the service, asked
 * the bench's GraphQL read by ids), `rest-ids@against` and `gql-ids@against` (the service built at DIR,
 * `bash bench/build-ref.sh <commit>`), or any such build's absolute directory (asked REST's read).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgs } from './cli.js';
import autocannon from 'autocannon';
import { projectPath } from '../src/project-path.js';
import { seedBenchDatabase } from './seed.js';
import { announcedUrl, benchServiceEnv, checkGraphQLAnswer, idsRead, writeOnce } from './start-server.js';
import { envOption, REST_IDS_PATH, startNodeArgs } from './scenarios.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    only: { type: 'string', default: 'floor,rest-ids' },
    requests: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '6000' },
    connections: { type: 'string', default: '8' },
    against: { type: 'string' },
    /** Repeat the measured batch this many times on the same server (one figure per batch). */
    batches: { type: 'string', default: '1' },
    /** NAME=VALUE for the service's environment (repeatable), e.g. `--env LOG_LEVEL=warn`. */
    env: { type: 'string', multiple: true, default: [] },
    /**
     * Start each server with `--perf-basic-prof`: /tmp/perf-<pid>.map names its JIT code, for bench/ir-compare.ts
     * (kept with KEEP=1, removed otherwise). Logging each piece of code costs instructions of its own: compare
     * counts taken with it only with counts taken with it.
     */
    'perf-map': { type: 'boolean', default: false },
    /** Simulate the caches too (callgrind `--cache-sim=yes`): misses per request beside the instructions. */
    'cache-sim': { type: 'boolean', default: false },
  },
});
const serviceEnvExtra = envOption(args.env);
const REQUESTS = Number(args.requests);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const BATCHES = Number(args.batches);
const log = (line: string) => process.stdout.write(`${line}\n`);

interface Server {
  child: ChildProcess;
  /** valgrind names its control pipes after the process's HOST variable (the service's listen address): callgrind_control must give the same. */
  host: string;
  url: string;
  outFile: string;
  /** The measured request: REST's read by ids, or GraphQL's (`gql-ids`). */
  graphql?: boolean;
}

async function start(name: string, script: string, env: Record<string, string>, work: string, nodeArgs: string[] = []): Promise<Server> {
  const logFile = join(work, `${name}.log`);
  const outFile = join(work, `${name}.callgrind`);
  const fd = openSync(logFile, 'w');
  // Debian's `valgrind` is a shell script that forks the real one: callgrind_control needs the real one's pid.
  const child = spawn(
    existsSync('/usr/bin/valgrind.bin') ? '/usr/bin/valgrind.bin' : 'valgrind',
    ['--tool=callgrind', ...(args['cache-sim'] ? ['--cache-sim=yes'] : []), '--instr-atstart=no', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${outFile}`, process.execPath, ...(args['perf-map'] ? ['--perf-basic-prof', `--logfile=${join(work, `${name}-v8.log`)}`, '--no-logfile-per-isolate'] : []), ...nodeArgs, script],
    { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  return { child, url: await announcedUrl(name, child, logFile, 600_000), outFile, host: env.HOST ?? '' };
}

/** Sends `amount` requests; returns how many were answered 2xx (a slow server under valgrind may lose a few to timeouts). */
async function send(server: Server, key: string, amount: number): Promise<number> {
  const result = await autocannon({ ...idsRead(server.url, key, server.graphql === true), connections: CONNECTIONS, amount, timeout: 120 });
  const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0;
  if (ok < amount * 0.95) throw new Error(`${amount} requests sent, ${ok} answered 2xx (${result.non2xx} other, ${result.errors} errors)`);
  return ok;
}

/** V8's compilers, at every tier, and deoptimisation: work whose amount depends on when tiering happens, not on the request. */
const JIT = /v8::internal::(compiler|maglev|baseline|interpreter::BytecodeGenerator|Parser|ParserBase|Scanner|Compiler|Deoptimizer|Turbofan|OptimizedCompilationJob|CodeGenerator|Assembler|RegExpCompiler)/;

/** The simulated caches' misses of a dump (`--cache-sim`): first-level instruction and data misses, last-level misses. */
interface Misses {
  i1: number;
  d1: number;
  ll: number;
}

/** A dump's misses from its `events:` and `totals:` lines (zero without `--cache-sim`). */
function fileMisses(text: string): Misses {
  const names = /^events: (.*)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
  const totals = /^totals: (.*)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
  const of = (...wanted: string[]) => wanted.reduce((sum, name) => sum + (totals[names.indexOf(name)] ?? 0), 0);
  return { i1: of('I1mr'), d1: of('D1mr', 'D1mw'), ll: of('ILmr', 'DLmr', 'DLmw') };
}

/** A dump file's total Ir, and the part of it in JIT compilation (self costs, from callgrind_annotate). */
function fileIr(file: string): { total: number; jit: number; misses: Misses } {
  const text = readFileSync(file, 'utf8');
  const total = Number(/^totals: (\d+)/m.exec(text)![1]);
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', file], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout;
  let jit = 0;
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
    if (m && JIT.test(m[2]!)) jit += Number(m[1]!.replace(/,/g, ''));
  }
  return { total, jit, misses: fileMisses(text) };
}

/**
 * Ir of dump number `n`, once written, without JIT compilation (V8 tiers functions up and down at
 * moments that depend on timing; the cost moves by tens of percent between batches): the main thread's
 * (file `<out>.<n>-01`), which runs every request, and all threads' (with V8's concurrent marking).
 */
async function dumpedIr(outFile: string, n: number): Promise<{ main: number; all: number; jit: number; misses: Misses }> {
  const dir = outFile.slice(0, outFile.lastIndexOf('/'));
  const prefix = `${outFile.slice(outFile.lastIndexOf('/') + 1)}.${n}-`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const files = readdirSync(dir).filter((f) => f.startsWith(prefix));
    if (files.length && files.every((f) => /^totals: \d+/m.test(readFileSync(join(dir, f), 'utf8')))) {
      const counts = files.map((f) => [f, fileIr(join(dir, f))] as const);
      const main = counts.find(([f]) => f.endsWith('-01'))![1];
      const all = counts.reduce((a, [, c]) => ({ total: a.total + c.total, jit: a.jit + c.jit }), { total: 0, jit: 0 });
      return { main: main.total - main.jit, all: all.total - all.jit, jit: all.jit, misses: main.misses };
    }
    if (Date.now() > deadline) throw new Error(`no totals in ${prefix}*`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Each batch's main-thread misses per request (`--cache-sim`), by server. */
const missesOf = new Map<string, Misses[]>();

async function measure(name: string, server: Server, key: string): Promise<number[]> {
  const pid = String(server.child.pid);
  const control = (...command: string[]) => {
    const { HOST: _, ...env } = process.env;
    const run = spawnSync('callgrind_control', [...command, pid], { encoding: 'utf8', env: server.host ? { ...env, HOST: server.host } : env });
    // It answers OK even when it could not reach the process; its errors go to stderr.
    if (run.status !== 0 || /error|failed/i.test(run.stderr)) throw new Error(`callgrind_control ${command.join(' ')}: ${run.stdout}${run.stderr}`);
  };
  await send(server, key, WARMUP);
  const figures: number[] = [];
  for (let b = 0; b < BATCHES; b++) {
    control('-i', 'on');
    const answered = await send(server, key, REQUESTS);
    control('-i', 'off');
    control('--dump');
    const ir = await dumpedIr(server.outFile, b + 1);
    figures.push(ir.main / answered);
    const perRequest = { i1: ir.misses.i1 / answered, d1: ir.misses.d1 / answered, ll: ir.misses.ll / answered };
    missesOf.set(name, [...(missesOf.get(name) ?? []), perRequest]);
    log(`  ${name.padEnd(18)} batch ${b + 1}: ${Math.round(ir.main / answered).toLocaleString('en')} Ir/request on the main thread, ${Math.round(ir.all / answered).toLocaleString('en')} in all threads, JIT compilation left out (${Math.round(ir.jit / answered).toLocaleString('en')}; ${answered} answered)`);
  }
  return figures;
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'petstore-ir-'));
  const children: ChildProcess[] = [];
  try {
    const db = await seedBenchDatabase(join(work, 'seed.db'));
    const copy = (name: string) => {
      const file = join(work, `${name}.db`);
      copyFileSync(db.file, file);
      return file;
    };
    const serviceEnv = (name: string) => ({ ...benchServiceEnv(copy(name)), ...serviceEnvExtra });
    const ids = args.only.split(',');
    // F answers the service's bytes: taken from a by-ids answer of the service itself, as bench/run.ts does.
    const bodyFile = join(work, 'body.json');
    if (ids.includes('floor')) {
      const { createApp } = await import('../src/app.js');
      const { loadConfig } = await import('../src/config.js');
      const app = await createApp(loadConfig({ DATABASE_URL: `sqlite:${copy('probe')}`, NODE_ENV: 'production', LOG_LEVEL: 'silent' }), { announce: () => {} });
      const { url } = await app.listen(0, '127.0.0.1');
      const res = await fetch(url + REST_IDS_PATH, { headers: { 'X-API-Key': db.enterpriseKey } });
      writeFileSync(bodyFile, Buffer.from(await res.arrayBuffer()));
      await app.close();
    }
    // The servers run side by side (counts do not depend on the load; the run ends sooner).
    const measureOne = async (id: string): Promise<[string, number[]]> => {
      let server: Server;
      if (id === 'floor') {
        server = await start(id, projectPath('dist/bench/ladder-server.js'), { RUNG: 'floor', BODY_FILE: bodyFile, KEY: db.enterpriseKey, DATABASE: copy(id) }, work);
      } else if (id === 'rest-ids' || id === 'gql-ids') {
        server = await start(id, projectPath('dist/src/main.js'), serviceEnv(id), work, startNodeArgs(projectPath('.')));
      } else if (((id === 'rest-ids@against' || id === 'gql-ids@against') && args.against) || id.startsWith('/')) {
        const root = resolve(id.startsWith('/') ? id : args.against!);
        server = await start(id.replace(/\W+/g, '_'), join(root, 'dist/src/main.js'), serviceEnv(id.replace(/\W+/g, '_')), work, startNodeArgs(root));
      } else throw new Error(`unknown server ${id}`);
      children.push(server.child);
      // The service measured as it serves: after a write (bench/start-server.ts, writeOnce).
      if (id !== 'floor') await writeOnce(server.url, db.adminKey);
      server.graphql = id.startsWith('gql-ids');
      if (server.graphql) await checkGraphQLAnswer(server.url, db.enterpriseKey);
      const figures = await measure(id, server, db.enterpriseKey);
      server.child.kill('SIGTERM');
      return [id, figures];
    };
    const results = await Promise.all(ids.map(measureOne));
    log('');
    log('| server | Ir / request, main thread, JIT compilation left out (per batch) |');
    log('|---|---:|');
    for (const [id, figures] of results) log(`| ${id} | ${figures.map((f) => Math.round(f).toLocaleString('en')).join(' · ')} |`);
    if (args['cache-sim']) {
      log('');
      log('| server | main thread per request (per batch): first-level instruction misses · first-level data misses · last-level misses |');
      log('|---|---|');
      const n = (x: number) => Math.round(x).toLocaleString('en');
      for (const [id] of results) log(`| ${id} | ${(missesOf.get(id) ?? []).map((m) => `${n(m.i1)} · ${n(m.d1)} · ${n(m.ll)}`).join(' ; ')} |`);
    }
    const floor = results.find(([id]) => id === 'floor')?.[1];
    const rest = results.find(([id]) => id === 'rest-ids')?.[1];
    if (floor && rest) log(`\nF / REST by instructions: ${((Math.min(...floor) / Math.min(...rest)) * 100).toFixed(0)}%`);
    const gql = results.find(([id]) => id === 'gql-ids')?.[1];
    if (gql && rest) log(`REST / GraphQL by ids, by instructions: ${((Math.min(...rest) / Math.min(...gql)) * 100).toFixed(0)}%`);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    if (!process.env.KEEP) {
      rmSync(work, { recursive: true, force: true });
      for (const child of children) rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
    }
    else log(`kept ${work}`);
  }
}

await main();
