/**
 * Where a request's time goes: V8's sampling profiler on one scenario's server, its self time per request split by
 * package (each `node_modules/<name>`, the service's own code, Node's internals, the garbage collector), beside
 * the same split for another scenario (its floor). Callgrind counts the instructions the targets are judged by but
 * cannot name V8's compiled JavaScript; this names it. Figures are µs of sampled time per request, on this host.
 *
 *   npm run bench:profile -- [--only gql-pet,apollo-pet] [--requests 20000] [--warmup 6000] [--top 25]
 *   npm run build && "$(npx -y node@24 -p process.execPath)" dist/bench/profile.js --only gql-ids,apollo-ids
 *
 * Each server runs on this node binary with the flags of its start command and `--inspect` on a loopback port of
 * its own; the profiler is started over the inspector after the warm-up and stopped after the counted requests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { benchArgs } from './cli.js';
import { seedBenchDatabase } from './seed.js';
import { announcedUrl, checkAnswer, serverCommand, serverOf, writeOnce } from './start-server.js';
import { scenarioRequest, TARGET_SCENARIOS } from './scenarios.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A frame's bucket: the package it runs in, the service's code, Node's own, or V8's pseudo-frames. */
export function bucketOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node (internals)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const [scope, name] = url.slice(modules + '/node_modules/'.length).split('/');
    return scope!.startsWith('@') ? `${scope}/${name}` : scope!;
  }
  if (url.includes('/dist/src/')) return 'service (src/)';
  if (url.includes('/dist/bench/')) return 'floor (bench/)';
  return url;
}

/** Self time (µs) by bucket and by function, from the samples' time deltas. */
export function selfTimes(profile: Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const buckets = new Map<string, number>();
  const functions = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const us = profile.timeDeltas[i + 1] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    const bucket = bucketOf(url, functionName);
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + us);
    const fn = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/node_modules\//, '').replace(/^.*\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  });
  return { buckets, functions, total: [...buckets.values()].reduce((a, b) => a + b, 0) };
}

/** One request-response over the inspector's WebSocket. */
function inspector(url: string) {
  const socket = new WebSocket(url);
  let next = 1;
  const pending = new Map<number, { ok: (result: unknown) => void; fail: (error: Error) => void }>();
  const failAll = (error: Error) => {
    for (const [, settle] of pending) settle.fail(error);
    pending.clear();
  };
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string } };
    const settle = message.id ? pending.get(message.id) : undefined;
    if (!settle) return;
    pending.delete(message.id!);
    if (message.error) settle.fail(new Error(`inspector: ${message.error.message}`));
    else settle.ok(message.result);
  });
  socket.on('close', () => failAll(new Error('inspector: the connection closed')));
  const opened = new Promise<void>((ok, fail) => socket.once('open', () => ok()).once('error', fail));
  return {
    async send<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
      await opened;
      const id = next++;
      return new Promise<T>((ok, fail) => {
        pending.set(id, { ok: ok as (result: unknown) => void, fail });
        socket.send(JSON.stringify({ id, method, params }));
      });
    },
    close: () => socket.close(),
  };
}

/** The inspector's WebSocket URL, from the line node prints on stderr. */
async function inspectorUrl(logFile: string): Promise<string> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
    const found = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(readFileSync(logFile, 'utf8'))?.[0];
    if (found) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no inspector URL in ${logFile}`);
}

async function load(url: string, key: string, id: string, amount: number) {
  const result = await autocannon({ ...scenarioRequest(url, key, id), connections: 8, amount, timeout: 30 });
  return (result as unknown as Record<string, number>)['2xx'] ?? 0;
}

async function profileOne(id: string, work: string, db: Awaited<ReturnType<typeof seedBenchDatabase>>, options: Options) {
  const kind = serverOf(id);
  const file = join(work, `${id}.db`);
  copyFileSync(db.file, file);
  const command = serverCommand(kind, file, db.enterpriseKey);
  const logFile = join(work, `${id}.log`);
  const fd = openSync(logFile, 'w');
  const child: ChildProcess = spawn(process.execPath, [...command.nodeArgs, '--inspect=127.0.0.1:0', command.script], {
    env: { PATH: process.env.PATH ?? '', ...command.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  try {
    const url = await announcedUrl(id, child, logFile, 60_000);
    if (kind === 'service') await writeOnce(url, db.adminKey);
    await checkAnswer(url, db.enterpriseKey, id);
    await load(url, db.enterpriseKey, id, options.warmup);
    const session = inspector(await inspectorUrl(logFile));
    await session.send('Profiler.enable');
    await session.send('Profiler.setSamplingInterval', { interval: 50 });
    await session.send('Profiler.start');
    const answered = await load(url, db.enterpriseKey, id, options.requests);
    const { profile } = await session.send<{ profile: Profile }>('Profiler.stop');
    session.close();
    if (!answered) throw new Error(`${id}: no request was answered 2xx`);
    return { answered, ...selfTimes(profile) };
  } finally {
    // One server at a time: the next starts once this one has exited.
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

interface Options {
  requests: number;
  warmup: number;
  top: number;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = benchArgs(import.meta.url, {
    options: {
      only: { type: 'string', default: 'gql-pet,apollo-pet' },
      requests: { type: 'string', default: '20000' },
      warmup: { type: 'string', default: '6000' },
      /** How many functions to list per scenario, by self time. */
      top: { type: 'string', default: '25' },
    },
  });
  const ids = String(values.only).split(',');
  for (const id of ids) if (!TARGET_SCENARIOS.includes(id)) throw new Error(`unknown scenario ${id} (${TARGET_SCENARIOS.join(', ')})`);
  const options: Options = { requests: Number(values.requests), warmup: Number(values.warmup), top: Number(values.top) };
  const work = mkdtempSync(join(tmpdir(), 'petstore-profile-'));
  try {
    const db = await seedBenchDatabase(join(work, 'seed.db'), { manyKeys: 0 });
    const results: ({ id: string } & Awaited<ReturnType<typeof profileOne>>)[] = [];
    // One at a time: the sampled times are wall-clock and would move with a neighbour.
    for (const id of ids) results.push({ id, ...(await profileOne(id, work, db, options)) });
    const perRequest = (us: number, answered: number) => (us / answered).toFixed(1);
    process.stdout.write(
      `node ${process.version}; µs of sampled self time per request (${options.requests} requests after ${options.warmup})\n\n`,
    );
    const buckets = [...new Set(results.flatMap((r) => [...r.buckets.keys()]))].sort(
      (a, b) => (results[0]!.buckets.get(b) ?? 0) - (results[0]!.buckets.get(a) ?? 0),
    );
    process.stdout.write(`| bucket | ${results.map((r) => r.id).join(' | ')} |\n|---|${results.map(() => '---:').join('|')}|\n`);
    for (const bucket of buckets) {
      process.stdout.write(`| ${bucket} | ${results.map((r) => perRequest(r.buckets.get(bucket) ?? 0, r.answered)).join(' | ')} |\n`);
    }
    process.stdout.write(`| **total** | ${results.map((r) => perRequest(r.total, r.answered)).join(' | ')} |\n`);
    for (const r of results) {
      process.stdout.write(`\n${r.id}: the ${options.top} functions with the most self time (µs per request)\n`);
      const top = [...r.functions].sort((a, b) => b[1] - a[1]).slice(0, options.top);
      for (const [fn, us] of top) process.stdout.write(`  ${perRequest(us, r.answered).padStart(6)}  ${fn}\n`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
