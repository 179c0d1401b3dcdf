/**
 * The instruction counter: instructions per request, counted by valgrind's callgrind, the figure the targets are
 * judged by (it does not move with the neighbours on a shared host; the wall clock and even CPU time do).
 * `npm run bench` runs it over the targets' scenarios; alone, for an A/B of one lever:
 *
 *   npm run bench:instructions -- [--only floor,rest-ids,apollo-ids,gql-ids,apollo-pet,gql-pet] [--requests 2000] [--warmup 6000] [--batches 3]
 *     [--node PATH] [--against DIR] [--against-node-args=FLAGS] [--env NAME=VALUE …] [--cache-sim] [--functions N] [--idle-seconds N] [--parallel N]
 *     (KEEP=1 keeps the run's directory and callgrind's dumps in it)
 *   npm run bench:instructions -- --only rest-ids,rest-ids@against --against /tmp/petstore-ref
 *
 * Seeds the bench database, starts each server under `valgrind --tool=callgrind --instr-atstart=no` (nothing is
 * counted while it starts and warms up; the service first gets one write, bench/start-server.ts's writeOnce), sends
 * `--warmup` requests, switches counting on (`callgrind_control -i on`), sends `--requests` identical requests over
 * `--connections` keep-alive connections, switches it off, and prints the instructions (Ir) per request. The load
 * generator runs outside valgrind, so only the server's work is counted. The figure is the main thread's, less V8's
 * JIT compilation (whose amount depends on when tiering happens); with several batches, the lowest counts.
 *
 * `--functions N`: each server runs with V8's `--perf-basic-prof`, whose map names the JavaScript callgrind knows only by
 * address, and each scenario's N costliest functions (self Ir per request, its lowest batch) are printed: where the
 * instructions go. The map makes V8 report every object a young collection moves, so the collector's share reads higher
 * than in a plain count; judge the targets by a run without it.
 *
 * `--idle-seconds N`: right after the batches, N seconds are counted without requests and printed as Ir per second on
 * the main thread: the server's time-driven work (its timers), which weighs the more on a request the slower valgrind runs.
 *
 * `--cache-sim`: callgrind also simulates the caches and the main thread's misses per request are printed beside the
 * instructions (work that costs more than its instructions say). Slower, and whole-thread, JIT compilation included.
 *
 * Scenarios (bench/scenarios.ts): `floor` (F, bench/ladder-server.ts), `apollo-ids` and `apollo-pet` (F_apollo,
 * bench/apollo-floor.ts), `rest-ids`, `gql-ids` and `gql-pet` (the service), any of the service's with `@against`
 * (the service built in DIR: a checkout of another commit with its node_modules and `npm run build` done).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs, measuredCommit, nodeVersion } from './cli.js';
import autocannon from 'autocannon';
import { seedBenchDatabase } from './seed.js';
import { announcedUrl, benchServiceEnv, checkAnswer, serverCommand, serverOf, writeOnce } from './start-server.js';
import { envOption, scenarioRequest, startNodeArgs, TARGET_SCENARIOS } from './scenarios.js';

export interface CountOptions {
  requests: number;
  warmup: number;
  connections: number;
  batches: number;
  /** The build `@against` scenarios run. */
  against?: string;
  /** Node flags after the `@against` build's own start flags (a later V8 flag wins). */
  againstNodeArgs?: string[];
  /** Node flags after this build's service's start flags (`npm run bench --node-args`, which its loaded servers get too). */
  serviceNodeArgs?: string[];
  /** Added to the service's environment. */
  env?: Record<string, string>;
  cacheSim?: boolean;
  /** The node binary the servers run on (default: the counter's own). */
  node?: string;
  /** After the batches, count this many seconds without requests: the main thread's time-driven work (its timers). */
  idleSeconds?: number;
  /** Name the JavaScript that runs (V8's `--perf-basic-prof` map) and keep each scenario's `functions` costliest. */
  functions?: number;
  /** Keep the work directory (callgrind's dumps). */
  keep?: boolean;
  /** Servers counted at once (default: the machine's cores). */
  parallel?: number;
}

const log = (line: string) => process.stdout.write(`${line}\n`);

interface Server {
  child: ChildProcess;
  /** valgrind names its control pipes after the process's HOST variable (the service's listen address): callgrind_control must give the same. */
  host: string;
  url: string;
  outFile: string;
}

/** The simulated caches' misses per request (`--cache-sim`): first-level instruction and data misses, last-level misses. */
export interface Misses {
  i1: number;
  d1: number;
  ll: number;
}

/** One scenario's count: the main thread's instructions per request of each batch (JIT compilation left out), and misses. */
export interface Count {
  batches: number[];
  /** Each batch's seconds (wall clock, under valgrind). */
  seconds: number[];
  /** With `idleSeconds`: the main thread's instructions per second without requests. */
  idlePerSecond?: number;
  misses: Misses[];
  /** With `functions`: the lowest batch's costliest functions on the main thread, self Ir per request. */
  functions?: Array<{ name: string; ir: number }>;
  /** With `functions`: every function's self Ir per request on the main thread, summed by FUNCTION_GROUPS. */
  groups?: Map<string, number>;
}

/** Under valgrind a server starts some 50× slower, and slower still on a busy host: it has half an hour to listen. */
async function start(
  name: string,
  script: string,
  env: Record<string, string>,
  work: string,
  nodeArgs: string[],
  { cacheSim = false, node = process.execPath }: Pick<CountOptions, 'cacheSim' | 'node'>,
): Promise<Server> {
  const logFile = join(work, `${name}.log`);
  const outFile = join(work, `${name}.callgrind`);
  const fd = openSync(logFile, 'w');
  // Debian's `valgrind` is a shell script that forks the real one: callgrind_control needs the real one's pid.
  const child = spawn(
    existsSync('/usr/bin/valgrind.bin') ? '/usr/bin/valgrind.bin' : 'valgrind',
    [
      '--tool=callgrind',
      ...(cacheSim ? ['--cache-sim=yes'] : []),
      '--instr-atstart=no',
      '--separate-threads=yes',
      '--smc-check=all-non-file',
      `--callgrind-out-file=${outFile}`,
      node,
      ...nodeArgs,
      script,
    ],
    { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  return { child, url: await announcedUrl(name, child, logFile, 1_800_000), outFile, host: env.HOST ?? '' };
}

/** Sends `amount` of scenario `id`'s request; returns how many were answered 2xx (a slow server under valgrind may lose a few to timeouts). */
async function send(server: Server, id: string, key: string, amount: number, connections: number): Promise<number> {
  const result = await autocannon({ ...scenarioRequest(server.url, key, id.replace('@against', '')), connections, amount, timeout: 120 });
  const ok = (result as unknown as Record<string, number>)['2xx'] ?? 0;
  if (ok < amount * 0.95)
    throw new Error(`${id}: ${amount} requests sent, ${ok} answered 2xx (${result.non2xx} other, ${result.errors} errors)`);
  return ok;
}

/** V8's compilers, at every tier, and deoptimisation: work whose amount depends on when tiering happens, not on the request. */
const JIT =
  /v8::internal::(compiler|maglev|baseline|interpreter::BytecodeGenerator|Parser|ParserBase|Scanner|Compiler|Deoptimizer|Turbofan|OptimizedCompilationJob|CodeGenerator|Assembler|RegExpCompiler)/;

/** A dump's misses from its `events:` and `totals:` lines (zero without `--cache-sim`). */
function fileMisses(text: string): Misses {
  const names = /^events: (.*)$/m.exec(text)?.[1]?.trim().split(/\s+/) ?? [];
  const totals = /^totals: (.*)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
  const of = (...wanted: string[]) => wanted.reduce((sum, name) => sum + (totals[names.indexOf(name)] ?? 0), 0);
  return { i1: of('I1mr'), d1: of('D1mr', 'D1mw'), ll: of('ILmr', 'DLmr', 'DLmw') };
}

/** callgrind_annotate's listing as [function, self Ir] pairs (its `PROGRAM TOTALS` line left out). */
function annotatedCosts(file: string): Array<[string, number]> {
  const listing = spawnSync('callgrind_annotate', ['--threshold=100', file], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout;
  const costs: Array<[string, number]> = [];
  for (const line of listing.split('\n')) {
    const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*?)(?: \[[^\]]*\])?$/.exec(line);
    if (m && m[2] !== 'PROGRAM TOTALS') costs.push([m[2]!, Number(m[1]!.replace(/,/g, ''))]);
  }
  return costs;
}

/** A dump file's total Ir, the part of it in JIT compilation, and its functions' self Ir (from callgrind_annotate). */
function fileIr(file: string): { total: number; jit: number; misses: Misses; costs: Array<[string, number]> } {
  const text = readFileSync(file, 'utf8');
  const total = Number(/^totals: (\d+)/m.exec(text)![1]);
  const costs = annotatedCosts(file);
  const jit = costs.reduce((sum, [name, ir]) => (JIT.test(name) ? sum + ir : sum), 0);
  return { total, jit, misses: fileMisses(text), costs };
}

/** Where a function's instructions are counted in `--functions`' summary: the first group whose pattern its name matches. */
const FUNCTION_GROUPS: ReadonlyArray<readonly [string, RegExp]> = [
  ['young collections', /Scaveng|IterateObjectCache|OnMoveEvent|SizeFromMap|IteratePointers|Evacuate|SemiSpaceCopy|MutablePage/],
  ['header names lower-cased', /StringToLowerCase/],
  // Node's checks of a header's value and name (_http_common's two regular expressions), as each Node names them.
  ['header names and values checked', /\[\^\\t\\x20-\\x7e|\^\[\\\^_`a-zA-Z/],
  [
    'strings joined and flattened',
    /StringAdd|WriteToFlat|NewRawOneByteString|SlowFlatten|NewConsString|InternalizeString|ComputeAndSetRawHash|MakeThin/,
  ],
  // GetProperty is V8's generic property load; in these servers nearly all of it is a promise resolved with an object
  // looking up the object's `then` (its callers: ResolvePromise, PromiseAll).
  ['promises and microtasks', /Promise|Microtask|AsyncFunction|Await|GetProperty/],
  ['other JavaScript', /^JS /],
];

/**
 * Self Ir by function, V8's compiled JavaScript named through the process's `--perf-basic-prof` map (callgrind knows
 * such code only by address; an address V8 reused is named by its latest code). JIT compilation left out.
 */
function namedFunctions(listed: ReadonlyArray<[string, number]>, perfMap: string): Map<string, number> {
  const byStart = new Map<number, { size: number; name: string }>();
  for (const line of existsSync(perfMap) ? readFileSync(perfMap, 'utf8').split('\n') : []) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) byStart.set(Number.parseInt(m[1]!, 16), { size: Number.parseInt(m[2]!, 16), name: m[3]! });
  }
  const starts = [...byStart.keys()].sort((a, b) => a - b);
  const jsName = (address: number): string => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! <= address) lo = mid + 1;
      else hi = mid - 1;
    }
    const entry = hi >= 0 ? byStart.get(starts[hi]!) : undefined;
    return entry && address < starts[hi]! + entry.size ? entry.name.replace(/file:\/\/|\/[^ ]*?node_modules\//g, '') : 'unnamed code';
  };
  const costs = new Map<string, number>();
  for (const [listedName, ir] of listed) {
    if (JIT.test(listedName)) continue;
    const address = /^\?\?\?:0x([0-9a-f]+)$/.exec(listedName);
    const name = address ? `JS ${jsName(Number.parseInt(address[1]!, 16))}` : listedName.replace(/^\?\?\?:/, '').slice(0, 120);
    costs.set(name, (costs.get(name) ?? 0) + ir);
  }
  return costs;
}

/** Each function's cost in the first of FUNCTION_GROUPS it matches, the rest as `everything else`. */
function groupedCosts(costs: ReadonlyMap<string, number>): Map<string, number> {
  const groups = new Map<string, number>([...FUNCTION_GROUPS.map(([label]) => [label, 0] as [string, number]), ['everything else', 0]]);
  for (const [name, ir] of costs) {
    const label = FUNCTION_GROUPS.find(([, pattern]) => pattern.test(name))?.[0] ?? 'everything else';
    groups.set(label, groups.get(label)! + ir);
  }
  return groups;
}

/**
 * Ir of dump number `n`, once written, without JIT compilation: the main thread's (file `<out>.<n>-01`), which runs
 * every request, and all threads' (with V8's concurrent marking).
 */
async function dumpedIr(
  outFile: string,
  n: number,
): Promise<{ main: number; all: number; jit: number; misses: Misses; costs: Array<[string, number]> }> {
  const dir = outFile.slice(0, outFile.lastIndexOf('/'));
  const prefix = `${outFile.slice(outFile.lastIndexOf('/') + 1)}.${n}-`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    const files = readdirSync(dir).filter((f) => f.startsWith(prefix));
    if (files.length && files.every((f) => /^totals: \d+/m.test(readFileSync(join(dir, f), 'utf8')))) {
      const counts = files.map((f) => [f, fileIr(join(dir, f))] as const);
      const main = counts.find(([f]) => f.endsWith('-01'))![1];
      const all = counts.reduce((a, [, c]) => ({ total: a.total + c.total, jit: a.jit + c.jit }), { total: 0, jit: 0 });
      return { main: main.total - main.jit, all: all.total - all.jit, jit: all.jit, misses: main.misses, costs: main.costs };
    }
    if (Date.now() > deadline) throw new Error(`no totals in ${prefix}*`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function measure(id: string, server: Server, key: string, options: CountOptions): Promise<Count> {
  const pid = String(server.child.pid);
  const control = (...command: string[]) => {
    const { HOST: _, ...env } = process.env;
    const run = spawnSync('callgrind_control', [...command, pid], {
      encoding: 'utf8',
      env: server.host ? { ...env, HOST: server.host } : env,
    });
    // It answers OK even when it could not reach the process; its errors go to stderr.
    if (run.status !== 0 || /error|failed/i.test(run.stderr))
      throw new Error(`callgrind_control ${command.join(' ')}: ${run.stdout}${run.stderr}`);
  };
  await send(server, id, key, options.warmup, options.connections);
  const count: Count = { batches: [], seconds: [], misses: [] };
  for (let b = 0; b < options.batches; b++) {
    control('-i', 'on');
    const began = performance.now();
    const answered = await send(server, id, key, options.requests, options.connections);
    control('-i', 'off');
    count.seconds.push((performance.now() - began) / 1000);
    control('--dump');
    const ir = await dumpedIr(server.outFile, b + 1);
    count.batches.push(ir.main / answered);
    count.misses.push({ i1: ir.misses.i1 / answered, d1: ir.misses.d1 / answered, ll: ir.misses.ll / answered });
    // The functions of the lowest batch so far: the one the figure is.
    if (options.functions && ir.main / answered <= Math.min(...count.batches)) {
      const costs = namedFunctions(ir.costs, `/tmp/perf-${pid}.map`);
      count.functions = [...costs]
        .sort((a, b) => b[1] - a[1])
        .slice(0, options.functions)
        .map(([name, cost]) => ({ name, ir: cost / answered }));
      count.groups = new Map([...groupedCosts(costs)].map(([label, cost]) => [label, cost / answered]));
    }
    log(
      `  ${id.padEnd(18)} batch ${b + 1}: ${Math.round(ir.main / answered).toLocaleString('en')} Ir/request on the main thread, ${Math.round(ir.all / answered).toLocaleString('en')} in all threads, JIT compilation left out (${Math.round(ir.jit / answered).toLocaleString('en')}; ${answered} answered in ${count.seconds[b]!.toFixed(1)} s)`,
    );
  }
  if ((options.idleSeconds ?? 0) > 0) {
    control('-i', 'on');
    const began = performance.now();
    await new Promise((r) => setTimeout(r, options.idleSeconds! * 1000));
    control('-i', 'off');
    const seconds = (performance.now() - began) / 1000;
    control('--dump');
    const ir = await dumpedIr(server.outFile, options.batches + 1);
    count.idlePerSecond = ir.main / seconds;
    log(
      `  ${id.padEnd(18)} idle: ${Math.round(count.idlePerSecond).toLocaleString('en')} Ir/s on the main thread over ${seconds.toFixed(1)} s without requests`,
    );
  }
  return count;
}

/**
 * Counts each scenario of `ids` on a server of its own under callgrind, in the order given, in rounds of `parallel`
 * (the machine's cores): more servers than cores counted `gql-ids` at 938k–1,012k where two at once counted
 * 749k–779k (Node 26, `ab829ed`): what follows the wall clock (timers, V8's tiering) weighs more on a server waiting
 * for a core. In the targets' order, on two cores, each floor runs beside its service. Seeds its own copy of the
 * bench database.
 */
export async function countInstructions(ids: readonly string[], options: CountOptions): Promise<Map<string, Count>> {
  const work = mkdtempSync(join(tmpdir(), 'petstore-ir-'));
  const children: ChildProcess[] = [];
  try {
    const db = await seedBenchDatabase(join(work, 'seed.db'), { manyKeys: 0 });
    const copy = (name: string) => {
      const file = join(work, `${name.replace(/\W+/g, '_')}.db`);
      copyFileSync(db.file, file);
      return file;
    };
    // V8 writes /tmp/perf-<pid>.map, the names of the code it compiles (removed once the server is stopped), and on Node 26 a log of
    // its own, kept in the work directory.
    const perfArgs = (name: string) => (options.functions ? ['--perf-basic-prof', `--logfile=${join(work, `${name}.v8.log`)}`] : []);
    const measureOne = async (id: string): Promise<[string, Count]> => {
      const scenario = id.replace('@against', '');
      if (!TARGET_SCENARIOS.includes(scenario))
        throw new Error(`unknown scenario ${id} (one of ${TARGET_SCENARIOS.join(', ')}, a service's with @against)`);
      const kind = serverOf(scenario);
      const name = id.replace(/\W+/g, '_');
      let server: Server;
      if (id.endsWith('@against')) {
        if (kind !== 'service' || !options.against) throw new Error(`${id}: --against DIR names the build, for the service's scenarios`);
        const root = resolve(options.against);
        server = await start(
          name,
          join(root, 'dist/src/main.js'),
          { ...benchServiceEnv(copy(id)), ...options.env },
          work,
          [...perfArgs(name), ...startNodeArgs(root), ...(options.againstNodeArgs ?? [])],
          options,
        );
      } else {
        const command = serverCommand(kind, copy(id), db.enterpriseKey);
        server = await start(
          name,
          command.script,
          kind === 'service' ? { ...command.env, ...options.env } : command.env,
          work,
          [...perfArgs(name), ...command.nodeArgs, ...(kind === 'service' ? (options.serviceNodeArgs ?? []) : [])],
          options,
        );
      }
      children.push(server.child);
      if (kind === 'service') await writeOnce(server.url, db.adminKey);
      await checkAnswer(server.url, db.enterpriseKey, scenario);
      const count = await measure(id, server, db.enterpriseKey, options);
      server.child.kill('SIGTERM');
      if (options.functions) rmSync(`/tmp/perf-${server.child.pid}.map`, { force: true });
      return [id, count];
    };
    // In rounds, so that the servers of a round are counted under the same load from start to end.
    const counts: Array<[string, Count]> = [];
    const parallel = Math.max(1, Math.floor(options.parallel ?? 0) || availableParallelism());
    for (let i = 0; i < ids.length; i += parallel) counts.push(...(await Promise.all(ids.slice(i, i + parallel).map(measureOne))));
    return new Map(counts);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    if (options.keep) log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

/** The lowest batch: the one least disturbed by V8's tiering. */
export const lowest = (count: Count): number => Math.min(...count.batches);

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values: args } = benchArgs(import.meta.url, {
    options: {
      only: { type: 'string', default: TARGET_SCENARIOS.join(',') },
      requests: { type: 'string', default: '2000' },
      warmup: { type: 'string', default: '6000' },
      connections: { type: 'string', default: '8' },
      against: { type: 'string' },
      /** Node flags for the --against build after its start command's (`--against . --against-node-args=--max-semi-space-size=0`: the same build on V8's default young generation). */
      'against-node-args': { type: 'string', default: '' },
      /** Repeat the measured batch this many times on the same server (one figure per batch; the lowest counts). */
      batches: { type: 'string', default: '3' },
      /** The node binary the servers run on, e.g. `--node "$(npx -y node@26 -p process.execPath)"`. */
      node: { type: 'string' },
      /** Count this many seconds without requests after the batches: the server's time-driven work per second. */
      'idle-seconds': { type: 'string', default: '0' },
      /** NAME=VALUE for the service's environment (repeatable), e.g. `--env LOG_LEVEL=warn`. */
      env: { type: 'string', multiple: true, default: [] },
      /** Simulate the caches too (callgrind `--cache-sim=yes`): misses per request beside the instructions. */
      'cache-sim': { type: 'boolean', default: false },
      /** Print each scenario's N costliest functions (self Ir per request), its JavaScript named (V8's --perf-basic-prof). */
      functions: { type: 'string', default: '0' },
      /** Servers counted at once (default: the machine's cores; more than that counts more). */
      parallel: { type: 'string', default: String(availableParallelism()) },
    },
  });
  const node = args.node ? resolve(args.node) : process.execPath;
  log(`instruction counter: commit ${measuredCommit()}, servers on node ${nodeVersion(node)}, ${new Date().toISOString().slice(0, 10)}`);
  const results = await countInstructions(args.only.split(','), {
    requests: Number(args.requests),
    warmup: Number(args.warmup),
    connections: Number(args.connections),
    batches: Number(args.batches),
    against: args.against,
    againstNodeArgs: args['against-node-args'].split(' ').filter(Boolean),
    env: envOption(args.env),
    cacheSim: args['cache-sim'],
    node,
    idleSeconds: Number(args['idle-seconds']),
    functions: Number(args.functions),
    keep: Boolean(process.env.KEEP),
    parallel: Number(args.parallel),
  });
  const n = (x: number) => Math.round(x).toLocaleString('en');
  log('');
  log('| scenario | Ir / request, main thread, JIT compilation left out (per batch) |');
  log('|---|---:|');
  for (const [id, count] of results) log(`| ${id} | ${count.batches.map(n).join(' · ')} |`);
  if (args['cache-sim']) {
    log('');
    log('| scenario | main thread per request (per batch): first-level instruction misses · first-level data misses · last-level misses |');
    log('|---|---|');
    for (const [id, count] of results) log(`| ${id} | ${count.misses.map((m) => `${n(m.i1)} · ${n(m.d1)} · ${n(m.ll)}`).join(' ; ')} |`);
  }
  const withGroups = [...results].filter(([, count]) => count.groups);
  if (withGroups.length) {
    log('');
    log(`| self Ir / request, main thread, lowest batch | ${withGroups.map(([id]) => id).join(' | ')} |`);
    log(`|---|${withGroups.map(() => '---:').join('|')}|`);
    for (const label of withGroups[0]![1].groups!.keys())
      log(`| ${label} | ${withGroups.map(([, count]) => n(count.groups!.get(label)!)).join(' | ')} |`);
  }
  for (const [id, count] of results) {
    if (!count.functions) continue;
    log('');
    log(`| ${id}: function (self, lowest batch) | Ir / request |`);
    log('|---|---:|');
    for (const f of count.functions) log(`| ${f.name.replace(/\|/g, '\\|')} | ${n(f.ir)} |`);
  }
}
