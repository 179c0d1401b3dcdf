/**
 * `npm run bench` — the service against its floors, by instructions per request (CPU beside), and the hostile rows.
 *
 * By default it measures the targets: F (REST's floor, bench/ladder-server.ts), the service's REST read by ids, F_apollo
 * (GraphQL's floor, bench/apollo-floor.ts), the service's GraphQL read by ids and its `pet(id)`. Each is counted by the
 * instruction counter (bench/instructions.ts: callgrind, instructions per request on the main thread, the lowest of three
 * batches) and loaded outside valgrind for its CPU µs per request (median of the rounds, for information: it moves with
 * the neighbours).
 * A ratio is the floor's instructions per request over the service's: the share of its floor's efficiency the service
 * keeps (100% = as cheap as its floor). Targets: REST by ids / F ≥ 80%, GraphQL by ids / F_apollo ≥ 85%, GraphQL
 * `pet(id)` / F_apollo's `pet(id)` ≥ 85%. Then the free-document flood: another customer's read median beside clients
 * sending GraphQL documents that cost no points, against its median alone (≤ 2×).
 *
 *   npm run bench                      # the targets and the flood row (the callgrind part, ~50× slower, takes longest)
 *   npm run bench -- --load            # every scenario by CPU per request in alternating rounds, and their ratios:
 *                                      # L0, the ladder to F, F_apollo, limiter off, outbox off, traces on, Redis
 *                                      # (REDIS_URL), PostgreSQL (PG_URL)
 *   PG_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- --only rest-ids-pg,rest-order-pg
 *   npm run bench -- --only floor,rest-ids --rounds 5 --duration 10
 *   npm run bench -- --events --duration 20
 *                                      # event committed → webhook received / → subscriber: p50, p99 (no load);
 *                                      # then the webhook lag beside another account's hanging endpoint, and another
 *                                      # customer's read beside 20 heavy subscriptions at 2 events/s
 *   npm run bench -- --flood            # the flood row alone (a few seconds)
 *   npm run bench -- --idle --duration 20
 *                                      # CPU ms per second of an idle service (SQLite; PostgreSQL too with PG_URL)
 *   npm run bench -- --soak            # 5 minutes of mixed load on the service; RSS growth
 *   npm run bench -- --against DIR --only rest-ids,gql-ids
 *                                      # before/after: every service scenario also runs on the build in DIR (a checkout
 *                                      # of another commit, `npm ci && npm run build` done in it)
 *   npm run bench -- --node "$(npx -y node@24 -p process.execPath)"
 *                                      # every server on another node binary (the load generator stays on this one)
 *   npm run bench -- --load --threads  # each round's line also splits the server's CPU per request by thread
 *   npm run bench -- --load --only gql-ids,apollo-ids --cpu-prof
 *                                      # each server's sampled time split by package (where the instructions go)
 *
 * Every service runs with the node flags of its build's start command (package.json's `start`), as served.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchArgs, measuredCommit, nodeVersion } from './cli.js';
import autocannon from 'autocannon';
import { MANY_KEYS, seedBenchDatabase, PET_COUNT } from './seed.js';
import { countStatements, type StatementCount } from './sql-count.js';
import { announcedUrl, benchServiceEnv, checkAnswer, serverCommand, writeOnce } from './start-server.js';
import {
  envOption,
  keyedRequests,
  LADDER,
  RATIOS,
  REST_IDS_PATH,
  SCENARIOS,
  startNodeArgs,
  TARGET_SCENARIOS,
  TARGETS,
  type BenchKeys,
  type Scenario,
  type ServiceName,
} from './scenarios.js';
import { projectPath } from '../src/project-path.js';
import { measureEventLag, percentile } from './events.js';
import {
  floodRow,
  hostileReadRow,
  measureBesideFreeDocumentFlood,
  measureBesideHangingWebhook,
  measureBesideHeavySubscriptions,
} from './hostile.js';
import { countInstructions, lowest, type Count } from './instructions.js';
import { IDLE_TARGET_MS_PER_S, cpuMs, cpuSplit, idleCpu, mainThreadSleeps, threadsCpu } from './idle.js';
import { createDatabase, dropDatabase } from '../src/db/pg-admin.js';

const { values: args } = benchArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    soak: { type: 'boolean', default: false },
    events: { type: 'boolean', default: false },
    idle: { type: 'boolean', default: false },
    'soak-minutes': { type: 'string', default: '5' },
    /**
     * Each server under V8's sampling profiler (bench/profiles/<service>-<time>.cpuprofile, whole run); at the end, each
     * profile's self time split by package (sampled time; `npm run bench:instructions -- --functions N` names where the
     * instructions go).
     */
    'cpu-prof': { type: 'boolean', default: false },
    only: { type: 'string' },
    against: { type: 'string' },
    /**
     * Node flags for the --against service only, after its start command's own (the last of a repeated flag wins:
     * --against . --against-node-args=--max-semi-space-size=16 is the same build on V8's default young generation).
     */
    'against-node-args': { type: 'string', default: '' },
    /** Environment for the --against service only, `K=V,K2=V2` (e.g. --against . --against-env GRAPHQL_EXECUTOR=graphql-js). */
    'against-env': { type: 'string', default: '' },
    /** The node binary every server runs on (default: this one). */
    node: { type: 'string' },
    /**
     * Also where each measured load's CPU went in its server, per request, on each round's line: the main thread's
     * user + system time, V8's and libuv's other threads, and how often the main thread slept (fewer sleeps per
     * request: more requests handled per turn of the event loop).
     */
    threads: { type: 'boolean', default: false },
    /** Node flags for every server of this build (after its start command's own), e.g. `--node-args=--trace-gc`. */
    'node-args': { type: 'string', default: '' },
    /** A directory to copy the servers' logs into at the end (their output, with what --node-args made node print). */
    'keep-logs': { type: 'string' },
    /** Every scenario by CPU in rounds (the targets' mode counts instructions and loads only the targets' scenarios). */
    load: { type: 'boolean', default: false },
    /** The flood row's seconds alone and beside. */
    'flood-seconds': { type: 'string', default: '5' },
    /** The free-document flood row alone (part of the targets' run). */
    flood: { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const againstEnv = envOption(args['against-env'].split(',').filter(Boolean));
const DURATION = Number(args.duration);
const WARMUP = Number(args.warmup);
const CONNECTIONS = Number(args.connections);
const REDIS_URL = process.env.REDIS_URL;
/** The node binary the servers run on, and its version. */
const SERVER_NODE = args.node ? resolve(args.node) : process.execPath;
const SERVER_NODE_VERSION = nodeVersion(SERVER_NODE);
const PG_URL = process.env.PG_URL;
/** The instruction counter's batches per scenario (the targets' mode); each scenario's lowest counts. */
const INSTRUCTION_BATCHES = 3;
/** The commit measured: read as the run starts, since the report comes many minutes later. */
const COMMIT = measuredCommit();
/** No mode and no scenarios asked: the targets (instructions, CPU beside) and the flood row. */
const TARGETS_MODE = !args.load && !args.only && !args.soak && !args.events && !args.idle && !args.flood;

interface Service {
  name: ServiceName;
  url: string;
  child: ChildProcess;
}

interface Run {
  opsPerSec: number;
  /** CPU time (user + system) the serving process spent per operation: robust to a busy machine. */
  cpuMsPerOp: number;
  p50: number;
  p99: number;
  non2xx: number;
  unexpected: number;
  errors: number;
  /** With --threads: the line's CPU split per request (main thread user + system, other threads, main-thread sleeps). */
  split?: string;
}

const log = (line = '') => process.stdout.write(`${line}\n`);
const RUN_STARTED = Date.now();
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** Resident set size of a process, in kB (Linux). */
function rssKb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}

/**
 * Starts a server process whose output (the request log) goes to a file, as it would to a log
 * collector: through a pipe, the busy load generator would be the log reader, and a full pipe
 * stalls the service's synchronous stdout writes.
 */
async function start(
  name: ServiceName,
  script: string,
  env: Record<string, string>,
  logDir: string,
  nodeArgs: string[] = [],
): Promise<Service> {
  const logFile = join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(SERVER_NODE, [...nodeArgs, script.startsWith('/') ? script : projectPath(script)], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  started.add(child);
  return { name, child, url: await announcedUrl(name, child, logFile, 60_000) };
}

/** An OTLP/HTTP receiver for the traced service: reads every export and answers 200, keeping nothing. */
async function traceSink(): Promise<{ url: string; close: () => void }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => void server.close() };
}

async function stop(service: Service) {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await exited;
}

/** `keys`: the service's keys; the scenario's own are sent (keyedRequests). */
async function fire(service: Service, scenario: Scenario, keys: BenchKeys, seconds: number): Promise<Run> {
  const { key, requests } = keyedRequests(scenario, keys);
  const pid = service.child.pid!;
  const threadsBefore = args.threads ? threadsCpu(pid) : undefined;
  const sleepsBefore = args.threads ? mainThreadSleeps(pid) : 0;
  const cpuBefore = cpuMs(pid);
  const result = await autocannon({
    url: service.url,
    connections: scenario.connections ?? CONNECTIONS,
    duration: seconds,
    headers: { 'X-API-Key': key },
    requests,
  });
  const byStatus = result as unknown as Record<string, number>;
  const expected = scenario.expect === 429 ? 0 : (byStatus[`${Math.floor(scenario.expect / 100)}xx`] ?? 0);
  const unexpected = scenario.expect === 429 ? result.requests.total - result.non2xx : result.requests.total - expected;
  const ops = result.requests.total / scenario.requestsPerOp;
  let split: string | undefined;
  if (threadsBefore) {
    const { mainUser, mainSystem, others } = cpuSplit(pid, threadsBefore, threadsCpu(pid));
    const us = (ms: number) => ((ms * 1000) / ops).toFixed(0);
    split = `main ${us(mainUser)} user + ${us(mainSystem)} sys, others ${us(others)} µs/op, ${((mainThreadSleeps(pid) - sleepsBefore) / ops).toFixed(2)} sleeps/op`;
  }
  return {
    split,
    opsPerSec: ops / result.duration,
    cpuMsPerOp: (cpuMs(service.child.pid!) - cpuBefore) / ops,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    unexpected: Math.max(0, unexpected),
    errors: result.errors + result.timeouts,
  };
}

/** Every server this run started: stopped when the run ends, or is interrupted (Ctrl-C, kill), never left behind. */
const started = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of started) if (child.exitCode === null) child.kill('SIGTERM');
    process.exit(130);
  });
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'petstore-bench-'));
  const services = new Map<ServiceName, Service>();
  const redisPrefix = `bench-${process.pid}`;
  const pgDatabase = `petstore_bench_${process.pid}`;
  let pgCreated = false;
  let closeSink = () => {};
  try {
    log(
      `petstore bench: ${cpus().length} cores (${cpus()[0]?.model ?? '?'}), servers on node ${SERVER_NODE_VERSION}${SERVER_NODE === process.execPath ? '' : ` (${SERVER_NODE})`}, load generator on node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at start, ${new Date().toISOString()}`,
    );
    let t = performance.now();
    const db = await seedBenchDatabase(join(work, 'seed.db'), { manyKeys: TARGETS_MODE ? 0 : MANY_KEYS });
    log(`seeded ${PET_COUNT} pets in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    const keys: BenchKeys = { enterprise: db.enterpriseKey, free: db.freeKey, many: db.manyKeys };
    /** The PostgreSQL service has its own database, hence its own accounts and keys. */
    const keysOf = new Map<ServiceName, BenchKeys>();
    let pgAdminKey: string | undefined;
    const keyFor = (s: Scenario) => keysOf.get(s.service) ?? keys;
    const copy = (name: string) => {
      const file = join(work, `${name}.db`);
      copyFileSync(db.file, file);
      return file;
    };

    const serviceEnv = (name: string): Record<string, string> => ({
      // The 429 scenario measures the RATE_LIMITED refusal, not the cheaper ban that follows 10 of them.
      ...benchServiceEnv(copy(name)),
      // The --events receiver listens on 127.0.0.1; the poll settings, if given, are the operator's.
      ...(args.events ? { WEBHOOK_ALLOW_PRIVATE: 'true' } : {}),
      ...Object.fromEntries(['WEBHOOK_POLL_MS', 'SUBSCRIPTION_POLL_MS'].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : []))),
    });
    // Each build runs with the node flags of its own start command (`npm start`), as it is served.
    const ownNodeArgs = [...startNodeArgs(projectPath('.')), ...args['node-args'].split(' ').filter(Boolean)];
    const profDir = projectPath('bench/profiles');
    if (args['cpu-prof']) mkdirSync(profDir, { recursive: true });
    const wanted = new Set<ServiceName>(
      args.soak || args.events || args.flood
        ? ['memory']
        : args.idle
          ? ['memory', ...(PG_URL ? (['postgres'] as const) : [])]
          : TARGETS_MODE
            ? ['floor', 'apollo-floor', 'memory']
            : [
                'l0',
                ...LADDER,
                'apollo-floor',
                'memory',
                'no-limiter',
                'no-outbox',
                'traced',
                ...(REDIS_URL ? (['redis'] as const) : []),
                ...(PG_URL ? (['postgres'] as const) : []),
              ],
    );
    // Each profile is named after its service (the outbox-off twin is profiled too, to diff the two).
    const profArgs = (name: ServiceName) =>
      args['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : [];
    const starting: Array<Promise<Service>> = [
      start('memory', 'dist/src/main.js', serviceEnv('memory'), work, [...ownNodeArgs, ...profArgs('memory')]),
    ];
    if (wanted.has('no-limiter'))
      starting.push(
        start('no-limiter', 'dist/bench/service-variant.js', { ...serviceEnv('no-limiter'), VARIANT: 'no-limiter' }, work, ownNodeArgs),
      );
    if (wanted.has('no-outbox'))
      starting.push(
        start('no-outbox', 'dist/bench/service-variant.js', { ...serviceEnv('no-outbox'), VARIANT: 'no-outbox' }, work, [
          ...ownNodeArgs,
          ...profArgs('no-outbox'),
        ]),
      );
    if (wanted.has('traced')) {
      // Traces on, every request sampled, exported over OTLP/HTTP (protobuf) to a sink that reads and drops them.
      const sink = await traceSink();
      closeSink = sink.close;
      const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'petstore-bench' };
      starting.push(
        start('traced', 'dist/src/main.js', { ...serviceEnv('traced'), ...tracing }, work, [...ownNodeArgs, ...profArgs('traced')]),
      );
    }
    if (wanted.has('redis')) {
      starting.push(
        start(
          'redis',
          'dist/src/main.js',
          { ...serviceEnv('redis'), REDIS_URL: REDIS_URL!, RATE_LIMIT_KEY_PREFIX: redisPrefix },
          work,
          ownNodeArgs,
        ),
      );
    }
    // The --against build: its own start command's flags, then --against-node-args (on SQLite and on PostgreSQL alike).
    const againstRoot = args.against ? resolve(args.against) : undefined;
    const againstNodeArgs = againstRoot ? [...startNodeArgs(againstRoot), ...args['against-node-args'].split(' ').filter(Boolean)] : [];
    if (againstRoot)
      starting.push(
        start('against', join(againstRoot, 'dist/src/main.js'), { ...serviceEnv('against'), ...againstEnv }, work, againstNodeArgs),
      );
    if (wanted.has('postgres')) {
      t = performance.now();
      const url = await createDatabase(PG_URL!, pgDatabase);
      pgCreated = true;
      const pg = await seedBenchDatabase(url);
      keysOf.set('postgres', { enterprise: pg.enterpriseKey, free: pg.freeKey, many: pg.manyKeys });
      pgAdminKey = pg.adminKey;
      log(`seeded ${PET_COUNT} pets on PostgreSQL (${pgDatabase}) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      starting.push(
        start('postgres', 'dist/src/main.js', { ...serviceEnv('postgres'), DATABASE_URL: url }, work, [
          ...ownNodeArgs,
          ...profArgs('postgres'),
        ]),
      );
      // Before/after on PostgreSQL: the --against build on the same database (orders rotate over 10,000 pets of ample stock).
      if (againstRoot) {
        starting.push(
          start(
            'against-postgres',
            join(againstRoot, 'dist/src/main.js'),
            { ...serviceEnv('against-postgres'), DATABASE_URL: url, ...againstEnv },
            work,
            againstNodeArgs,
          ),
        );
        keysOf.set('against-postgres', keysOf.get('postgres')!);
      }
    }
    for (const s of await Promise.all(starting)) services.set(s.name, s);
    // Every service measured as it serves: after a write (see writeOnce).
    for (const s of services.values())
      await writeOnce(s.url, s.name === 'postgres' || s.name === 'against-postgres' ? pgAdminKey! : db.adminKey);

    if (wanted.has('floor')) {
      // L0 answers exactly the bytes the service answers to the by-ids request.
      const res = await fetch(services.get('memory')!.url + REST_IDS_PATH, { headers: { 'X-API-Key': keys.enterprise } });
      if (res.status !== 200) throw new Error(`by-ids request answered ${res.status}`);
      const bodyFile = join(work, 'l0-body.json');
      writeFileSync(bodyFile, Buffer.from(await res.arrayBuffer()));
      // The ladder: the same bytes bare (L0), through Koa and the router, then the gate, then F reading them from SQLite.
      const ladder = { BODY_FILE: bodyFile, KEY: keys.enterprise, DATABASE: copy('floor') };
      const rungs = LADDER.filter((rung) => wanted.has(rung) || rung === 'floor');
      if (wanted.has('l0')) rungs.unshift('l0');
      // F is profiled too (--cpu-prof), to set the service's profile beside its floor's.
      for (const rung of rungs)
        services.set(
          rung,
          await start(rung, 'dist/bench/ladder-server.js', { ...ladder, RUNG: rung }, work, rung === 'floor' ? profArgs(rung) : []),
        );
      // Every rung must answer the service's bytes, or the ratios compare different work.
      const expected = readFileSync(bodyFile, 'utf8');
      for (const rung of rungs) {
        const answer = await fetch(services.get(rung)!.url + REST_IDS_PATH, { headers: { 'X-API-Key': keys.enterprise } }).then((r) =>
          r.text(),
        );
        if (answer !== expected)
          throw new Error(`ladder rung ${rung} answers other bytes than the service:\n${answer.slice(0, 300)}\n${expected.slice(0, 300)}`);
      }
    }

    if (wanted.has('apollo-floor')) {
      // F_apollo must answer the service's data to the same documents, or the ratios compare different work.
      const { script, env } = serverCommand('apollo-floor', copy('apollo-floor'), keys.enterprise);
      services.set('apollo-floor', await start('apollo-floor', script, env, work, profArgs('apollo-floor')));
      for (const [floorId, serviceId] of [
        ['apollo-ids', 'gql-ids'],
        ['apollo-pet', 'gql-pet'],
      ] as const) {
        const floor = await checkAnswer(services.get('apollo-floor')!.url, keys.enterprise, floorId);
        const service = await checkAnswer(services.get('memory')!.url, keys.enterprise, serviceId);
        if (JSON.stringify(JSON.parse(floor).data) !== JSON.stringify(JSON.parse(service).data))
          throw new Error(
            `F_apollo answers other data than the service to ${serviceId}:\n${floor.slice(0, 300)}\n${service.slice(0, 300)}`,
          );
      }
    }

    if (args.soak) return await soak(services.get('memory')!, keys);
    if (args.events) return await eventLag(services.get('memory')!, keys, db.adminKey);
    if (args.idle) return await idle(services);
    /**
     * The flood rows: on a service as deployed (its default ban threshold: a key refused 429 ten times is banned), the
     * target; on the bans-off service of the other rows, what the documents themselves cost (information).
     */
    const floods = async (): Promise<Floods> => {
      const { BAN_THRESHOLD: _, ...asDeployed } = serviceEnv('as-deployed');
      const deployed = await start('as-deployed', 'dist/src/main.js', asDeployed, work, ownNodeArgs);
      try {
        await writeOnce(deployed.url, db.adminKey);
        return {
          deployed: await floodOn(deployed, db.adminKey, keys.enterprise),
          bansOff: await floodOn(services.get('memory')!, db.adminKey, keys.enterprise),
        };
      } finally {
        await stop(deployed);
      }
    };
    if (args.flood) return floodReport(await floods());

    const statements = TARGETS_MODE ? new Map<string, StatementCount>() : await countStatements(copy('sql-count'), SCENARIOS, keys);

    const only = args.only?.split(',') ?? (TARGETS_MODE ? TARGET_SCENARIOS : undefined);
    const scenarios = SCENARIOS.filter((s) => wanted.has(s.service) && (!only || only.includes(s.id))).flatMap((s) =>
      args.against && (s.service === 'memory' || s.service === 'postgres') && s.expect !== 429
        ? [
            s,
            {
              ...s,
              id: `${s.id}@against`,
              label: `${s.label} [--against build]`,
              service: s.service === 'memory' ? ('against' as const) : ('against-postgres' as const),
            },
          ]
        : [s],
    );
    log(`warm-up: ${WARMUP} s per scenario`);
    for (const s of scenarios) await fire(services.get(s.service)!, s, keyFor(s), WARMUP);
    const rssWarm = new Map([...services].map(([name, s]) => [name, rssKb(s.child.pid!)]));

    const runs = new Map<string, Run[]>(scenarios.map((s) => [s.id, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      log(`round ${round}/${ROUNDS} (${new Date().toISOString().slice(11, 19)})`);
      for (const s of scenarios) {
        const run = await fire(services.get(s.service)!, s, keyFor(s), DURATION);
        runs.get(s.id)!.push(run);
        log(
          `  ${s.id.padEnd(20)} ${(run.cpuMsPerOp * 1000).toFixed(0).padStart(5)} CPU µs/op  ${run.opsPerSec.toFixed(0).padStart(6)} op/s  p50 ${run.p50} ms  p99 ${run.p99} ms  non-2xx ${run.non2xx}${run.split ? `  (${run.split})` : ''}`,
        );
      }
    }
    const rssEnd = new Map([...services].map(([name, s]) => [name, rssKb(s.child.pid!)]));
    if (!TARGETS_MODE) return report(scenarios, runs, statements, rssWarm, rssEnd);
    const flood = await floods();
    await Promise.all([...services.values()].map(stop));
    log(`instruction counter: ${TARGET_SCENARIOS.join(', ')} under callgrind, as many at once as there are cores`);
    // Each scenario judged by its lowest batch: one batch can count far more than its neighbours (F_apollo's
    // `pet(id)` on Node 26: 353k, 363k, 495k in one run), which one batch alone would take for the figure.
    const counts = await countInstructions(TARGET_SCENARIOS, {
      requests: 2000,
      warmup: 6000,
      connections: 8,
      batches: INSTRUCTION_BATCHES,
      node: SERVER_NODE,
      serviceNodeArgs: args['node-args'].split(' ').filter(Boolean),
    });
    targetsReport(runs, counts, flood);
  } finally {
    await Promise.all([...services.values()].map(stop));
    if (args['cpu-prof']) profilesReport(RUN_STARTED);
    closeSink();
    if (REDIS_URL && services.has('redis')) await dropRedisKeys(REDIS_URL, redisPrefix).catch(() => {});
    if (pgCreated) await dropDatabase(PG_URL!, pgDatabase).catch((error: Error) => log(`could not drop ${pgDatabase}: ${error.message}`));
    try {
      // Every server's log that was written, a failed start's too; a copy that fails is said, not thrown.
      if (args['keep-logs']) {
        mkdirSync(args['keep-logs'], { recursive: true });
        for (const file of readdirSync(work).filter((f) => f.endsWith('.log'))) {
          try {
            copyFileSync(join(work, file), join(args['keep-logs'], file));
          } catch (error) {
            log(`could not keep ${file}: ${(error as Error).message}`);
          }
        }
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
}

function report(
  scenarios: Scenario[],
  runs: Map<string, Run[]>,
  statements: Map<string, StatementCount>,
  rssWarm: Map<ServiceName, number>,
  rssEnd: Map<ServiceName, number>,
) {
  log();
  log(
    `## Results: ${ROUNDS} rounds × ${DURATION} s per scenario, ${CONNECTIONS} connections, ${cpus().length} cores, servers on node ${SERVER_NODE_VERSION}, ${new Date().toISOString().slice(0, 10)}`,
  );
  log();
  // Every scenario against the stack's floor F and the bare floor L0, per round: first by CPU per request, then by op/s.
  const versus = (s: Scenario, floorId: string, by: 'cpu' | 'ops') => {
    const floor = runs.get(floorId);
    if (!floor || s.id === floorId) return '–';
    const rs = runs.get(s.id)!;
    return pct(median(rs.map((r, i) => (by === 'cpu' ? floor[i]!.cpuMsPerOp / r.cpuMsPerOp : r.opsPerSec / floor[i]!.opsPerSec))));
  };
  log(
    '| scenario | CPU µs/op (median) | ÷ F by CPU | ÷ L0 by CPU | op/s (median) | spread (min–max) | ÷ F by op/s | p50 ms | p99 ms | non-2xx | unexpected status | SQL / request |',
  );
  log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const s of scenarios) {
    const rs = runs.get(s.id)!;
    const ops = rs.map((r) => r.opsPerSec);
    const m = median(ops);
    const spread = `${pct(Math.min(...ops) / m - 1)} … +${pct(Math.max(...ops) / m - 1)}`;
    const sql =
      s.service === 'l0' || s.service === 'koa' || s.service === 'gate'
        ? '–'
        : s.service === 'floor' || s.service === 'apollo-floor'
          ? '1'
          : s.service === 'memory'
            ? sqlCell(statements.get(s.id))
            : s.service === 'against' || s.service === 'against-postgres'
              ? '?'
              : s.service === 'no-outbox'
                ? 'as with, less the events'
                : s.service === 'traced'
                  ? 'as untraced'
                  : s.service === 'postgres'
                    ? 'as on SQLite'
                    : 'as REST by ids';
    const unexpected = rs.reduce((a, r) => a + r.unexpected + r.errors, 0);
    log(
      `| ${s.label} | ${(median(rs.map((r) => r.cpuMsPerOp)) * 1000).toFixed(0)} | ${versus(s, 'floor', 'cpu')} | ${versus(s, 'l0', 'cpu')} | ${m.toFixed(0)} | ${spread} | ${versus(s, 'floor', 'ops')} | ${median(rs.map((r) => r.p50))} | ${median(rs.map((r) => r.p99))} | ${rs.reduce((a, r) => a + r.non2xx, 0)} | ${unexpected} | ${sql} |`,
    );
  }
  log();
  log(
    '| ratio (median of per-round ratios) | from CPU µs/op | range across rounds | target (by CPU here; the targets are judged by instructions) | met | from op/s | range across rounds |',
  );
  log('|---|---:|---:|---:|:-:|---:|---:|');
  const againstRatios = scenarios
    .filter((s) => s.service === 'against' || s.service === 'against-postgres')
    .map((s) => ({
      label: `${s.id.replace('@against', '')}: this build / --against build`,
      numerator: s.id.replace('@against', ''),
      denominator: s.id,
      target: null,
    }));
  for (const r of [...RATIOS, ...againstRatios]) {
    const num = runs.get(r.numerator);
    const den = runs.get(r.denominator);
    if (!num || !den) continue;
    // By CPU: the denominator's CPU per request over the numerator's (the numerator's share of the denominator's speed).
    const byCpu = num.map((n, i) => den[i]!.cpuMsPerOp / n.cpuMsPerOp);
    const byOps = num.map((n, i) => n.opsPerSec / den[i]!.opsPerSec);
    const value = median(byCpu);
    const target = r.target === null ? '–' : `≥ ${pct(r.target)}`;
    const met = r.target === null ? '' : value >= r.target ? 'yes' : '**no**';
    log(
      `| ${r.label} | ${pct(value)} | ${pct(Math.min(...byCpu))} – ${pct(Math.max(...byCpu))} | ${target} | ${met} | ${pct(median(byOps))} | ${pct(Math.min(...byOps))} – ${pct(Math.max(...byOps))} |`,
    );
  }
  log();
  log('| process | RSS after warm-up | RSS after the run |');
  log('|---|---:|---:|');
  for (const [name, kb] of rssWarm) log(`| ${name} | ${mb(kb)} | ${mb(rssEnd.get(name)!)} |`);
  log();
  log('SQL statements and promises per request (steady state, API key cached; in-process, on this node):');
  for (const [id, c] of statements)
    log(
      `  ${id}: ${c.total}${c.transactionControl ? ` (${c.transactionControl} transaction control)` : ''}, ${c.promises} promises\n    ${c.statements.map((s) => s.slice(0, 160)).join('\n    ')}`,
    );
}

/**
 * The targets' report: each scenario's instructions per request (the lowest of its batches, all printed) and CPU µs
 * per request (median of the rounds, for information), each target's ratio from instructions with the CPU ratio
 * beside it, and the flood row.
 */
function targetsReport(runs: Map<string, Run[]>, counts: Map<string, Count>, flood: Floods) {
  const instructions = new Map([...counts].map(([id, c]) => [id, lowest(c)]));
  const cpuUs = (id: string) => median(runs.get(id)!.map((r) => r.cpuMsPerOp)) * 1000;
  log();
  log(
    `## Targets: commit ${COMMIT}, servers on node ${SERVER_NODE_VERSION}, ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}`,
  );
  log();
  log(
    `| scenario | instructions / request (main thread, JIT compilation left out; lowest of ${INSTRUCTION_BATCHES} batches) | the batches | CPU µs / request (median of rounds) |`,
  );
  log('|---|---:|---:|---:|');
  const thousands = (ir: number) => `${Math.round(ir / 1000).toLocaleString('en')}k`;
  for (const id of TARGET_SCENARIOS) {
    const label = SCENARIOS.find((s) => s.id === id)!.label;
    log(
      `| ${label} | ${Math.round(instructions.get(id)!).toLocaleString('en')} | ${counts.get(id)!.batches.map(thousands).join(' · ')} | ${cpuUs(id).toFixed(0)} |`,
    );
  }
  log();
  log("A ratio is the floor's instructions per request over the service's: the share of its floor's efficiency the service keeps.");
  log();
  log('| ratio | by instructions | target | met | by CPU (information) |');
  log('|---|---:|---:|:-:|---:|');
  for (const t of TARGETS) {
    const value = instructions.get(t.floor)! / instructions.get(t.service)!;
    log(
      `| ${t.label} | ${pct(value)} | ≥ ${pct(t.target)} | ${value >= t.target ? 'yes' : '**no**'} | ${pct(cpuUs(t.floor) / cpuUs(t.service))} |`,
    );
  }
  floodReport(flood);
}

type Flood = Awaited<ReturnType<typeof measureBesideFreeDocumentFlood>>;
interface Floods {
  deployed: Flood;
  bansOff: Flood;
}

/** The flood row: another customer (`readerKey`) reads alone, then beside the flood. */
async function floodOn(service: Service, adminKey: string, readerKey: string): Promise<Flood> {
  log(
    `free-document flood on ${service.name}: another customer's read, ${args['flood-seconds']} s alone, then ${args['flood-seconds']} s beside the flood`,
  );
  return measureBesideFreeDocumentFlood(service.url, adminKey, readerKey, Number(args['flood-seconds']));
}

function floodReport({ deployed, bansOff }: Floods) {
  const answered = (flood: Flood) =>
    Object.entries(flood.statuses)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ');
  log();
  log(`commit ${COMMIT}, node ${SERVER_NODE_VERSION}, ${cpus().length} cores, ${new Date().toISOString().slice(0, 10)}`);
  log('| hostile row | p50 ms alone | p50 ms beside | ratio | target |');
  log('|---|---:|---:|---:|---:|');
  log(floodRow(deployed, 'the service as deployed (bans after 10 refusals)', true));
  log(floodRow(bansOff, 'bans off (what the documents cost)', false));
  log(`(as deployed, the flood sent ${deployed.sent} documents, answered ${answered(deployed)};`);
  log(` bans off, ${bansOff.sent} documents, answered ${answered(bansOff)})`);
}

function sqlCell(c: StatementCount | undefined): string {
  if (!c) return '?';
  return c.transactionControl ? `${c.total} (${c.total - c.transactionControl} + ${c.transactionControl} tx)` : String(c.total);
}

/** Five minutes (by default) of mixed load in 30 s slices; RSS after the warm-up and after each slice. */
async function soak(service: Service, keys: BenchKeys) {
  const minutes = Number(args['soak-minutes']);
  const mix = SCENARIOS.filter((s) => s.service === 'memory' && s.expect !== 429);
  log(`soak: ${minutes} min of ${mix.map((s) => s.id).join(', ')} in 30 s slices`);
  for (const s of mix) await fire(service, s, keys, WARMUP);
  const pid = service.child.pid!;
  // Under load RSS swings with V8's heap sizing; after a few idle seconds V8 shrinks the
  // heap, so the idle readings at the start and the end are the ones that show a leak.
  const idleRss = async () => {
    await new Promise((r) => setTimeout(r, 10_000));
    return rssKb(pid);
  };
  const first = rssKb(pid);
  const firstIdle = await idleRss();
  log(`  RSS after warm-up: ${mb(first)} (after 10 s idle: ${mb(firstIdle)})`);
  const samples = [first];
  const end = Date.now() + minutes * 60_000;
  for (let i = 0; Date.now() < end; i++) {
    const s = mix[i % mix.length]!;
    const run = await fire(service, s, keys, Math.min(30, Math.max(1, Math.ceil((end - Date.now()) / 1000))));
    const rss = rssKb(pid);
    samples.push(rss);
    log(`  ${s.id.padEnd(12)} ${run.opsPerSec.toFixed(0).padStart(6)} op/s  unexpected ${run.unexpected + run.errors}  RSS ${mb(rss)}`);
  }
  const last = samples.at(-1)!;
  const lastIdle = await idleRss();
  const growth = lastIdle / firstIdle - 1;
  log();
  log(`| soak | RSS after warm-up | min / max under load | RSS at the end | idle RSS, start → end | growth (idle) | target |`);
  log(`|---|---:|---:|---:|---:|---:|---:|`);
  log(
    `| ${minutes} min mixed | ${mb(first)} | ${mb(Math.min(...samples))} / ${mb(Math.max(...samples))} | ${mb(last)} | ${mb(firstIdle)} → ${mb(lastIdle)} | ${pct(growth)} | ≤ 10% ${growth <= 0.1 ? '(met)' : '(**missed**)'} |`,
  );
}

/** `--events`: the lag from an event's commit to a webhook receiver and to a graphql-ws subscriber. */
async function eventLag(service: Service, keys: BenchKeys, adminKey: string) {
  log(`events: an order every 50 ms for ${DURATION} s; lag from commit (the event's createdAt) to arrival`);
  const result = await measureEventLag(service.url, keys.enterprise, DURATION);
  log();
  log(`| event committed → | received | p50 ms | p99 ms | max ms | target (p99) |`);
  log(`|---|---:|---:|---:|---:|---:|`);
  const row = (label: string, lags: number[], target: number, orders = result.orders) => {
    const p99 = percentile(lags, 99);
    // An event that never arrived has no lag to count: the row is met only when every one did.
    const met = p99 <= target && lags.length === orders;
    log(
      `| ${label} | ${lags.length} of ${orders} | ${percentile(lags, 50)} | ${p99} | ${Math.max(...lags)} | ≤ ${target} ${met ? '(met)' : '(**missed**)'} |`,
    );
  };
  row('webhook received', result.webhook, 250);
  row('subscriber', result.subscriber, 100);
  if (result.badSignatures) log(`**${result.badSignatures} deliveries failed signature verification**`);
  // Hostile: a free account's endpoint that never answers, fed by everyone's inventory.changed, and 40 redeliveries.
  const hostile = await measureBesideHangingWebhook(service.url, keys.enterprise, keys.free, DURATION);
  row("webhook received, beside another account's hanging endpoint + 40 redeliveries", hostile.webhook, 250, hostile.orders);
  if (hostile.badSignatures) log(`**${hostile.badSignatures} deliveries failed signature verification (hostile run)**`);
  log(
    `(the 40 redeliveries answered ${Object.entries(hostile.redeliveries)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ')})`,
  );
  // Hostile: a business account's 20 heavy subscriptions fed its own orders at 2 per second; another customer reads.
  const heavy = await measureBesideHeavySubscriptions(service.url, adminKey, keys.enterprise, DURATION);
  log();
  log(`| read | p50 ms alone | p50 ms beside | ratio | target |`);
  log(`|---|---:|---:|---:|---:|`);
  log(hostileReadRow(heavy));
  log(
    `(reads beside: p90 ${percentile(heavy.beside, 90).toFixed(1)} ms, max ${Math.max(...heavy.beside).toFixed(1)} ms; the hostile account: ${heavy.orders} orders, ${heavy.pushes} answers pushed, ${(heavy.bytes / 1024 / 1024).toFixed(1)} MiB, ${heavy.charged} points charged for them; ` +
      `${heavy.exhausted} subscriptions ended RATE_LIMITED, ${heavy.refused} subscribes refused)`,
  );
  log();
  log("The outbox's cost of placing an order: `npm run bench -- --only rest-order,gql-order,rest-order-no-outbox,gql-order-no-outbox`");
  log('(the ratios "order with outbox / without"; see docs/PERFORMANCE.md).');
}

/** `--idle`: CPU per second of each service left alone, after it settles. */
async function idle(services: Map<ServiceName, Service>) {
  // V8's memory reducer runs its one-off full GCs ("Mark-Compact (reduce)", --trace-gc) a while after the start-up's
  // allocations stop: a window that opens before them measures that start-up tail, not the idle service.
  const settle = 30;
  log(`idle: each service alone, ${settle} s to settle, then its CPU over ${DURATION} s (/proc)`);
  const measured = await Promise.all(
    [...services].map(async ([name, s]) => [name, await idleCpu(s.child.pid!, settle, DURATION)] as const),
  );
  log();
  log(`| idle service | CPU ms per second | target |`);
  log(`|---|---:|---:|`);
  for (const [name, ms] of measured) {
    const label = `${name.endsWith('postgres') ? 'PostgreSQL' : 'SQLite'}${name.startsWith('against') ? ' [--against build]' : ''}`;
    log(`| ${label} | ${ms.toFixed(1)} | ≤ ${IDLE_TARGET_MS_PER_S} ${ms <= IDLE_TARGET_MS_PER_S ? '(met)' : '(**missed**)'} |`);
  }
  log('(/proc counts CPU in 10 ms ticks: give --duration 20 or more for a figure to ±0.5 ms/s.)');
}

async function dropRedisKeys(url: string, prefix: string) {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (found.length) await client.del(...found);
  } while (cursor !== '0');
  await client.quit();
}

await main();

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

/** A frame's bucket: the package it runs in, the server's own code, Node's internals, or V8's pseudo-frames. */
function bucketOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native: libsql, socket writes, hashing)';
  if (url.startsWith('node:')) return "Node's internals";
  const modules = url.lastIndexOf('/node_modules/');
  if (modules < 0) return url.includes('/dist/src/') ? "the service's own code" : "the floor's own code";
  const [scope, name] = url.slice(modules + '/node_modules/'.length).split('/');
  return scope!.startsWith('@') ? `${scope}/${name}` : scope!;
}

/** The profiles this run wrote (--cpu-prof): each server's sampled self time by bucket, in ms and as a share of its busy time. */
function profilesReport(since: number) {
  const dir = projectPath('bench/profiles');
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile') && Number(/-(\d+)\.cpuprofile$/.exec(f)?.[1]) >= since);
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    const buckets = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      const frame = frames.get(id)!;
      const bucket = bucketOf(frame.url, frame.functionName);
      buckets.set(bucket, (buckets.get(bucket) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
    });
    buckets.delete('(idle)');
    const busy = [...buckets.values()].reduce((a, b) => a + b, 0);
    log();
    log(`${file}: sampled self time while busy, ${(busy / 1000).toFixed(0)} ms (start and warm-up included)`);
    log('| bucket | ms | share |');
    log('|---|---:|---:|');
    for (const [bucket, us] of [...buckets].sort((a, b) => b[1] - a[1]).filter(([, us]) => us / busy >= 0.005)) {
      log(`| ${bucket} | ${(us / 1000).toFixed(0)} | ${((100 * us) / busy).toFixed(1)}% |`);
    }
  }
}
