/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time by package (node_modules/<name>, the
 * project's own code, node internals), the heaviest functions, inclusive time of the project's functions,
 * and **by owner**: each sample charged to the deepest project function on its stack (the project code
 * responsible for it, with the library and Node work it called), so a request's cost reads layer by layer.
 *
 * Usage: node dist/bench/profile-summary.js FILE.cpuprofile [--top 30] [--from SECONDS]
 *
 * `--from` leaves out the samples of the first SECONDS of the profile (start-up: module loading and
 * compilation; the bench's servers start together and load begins a few seconds later). When the profile
 * holds libsql's statement iteration (`iterate`/`next`), every share is also shown in **SQL reads**: that
 * time taken as 100, the same work per request in F and in the service, so two profiles' owners compare
 * per request (`npm run bench -- --cpu-prof --only floor,rest-ids`, then this on each profile).
 */
import { readFileSync } from 'node:fs';
import { benchArgs, refuse } from './cli.js';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { values: args, positionals } = benchArgs(import.meta.url, {
  allowPositionals: true,
  options: { top: { type: 'string', default: '30' }, from: { type: 'string', default: '0' } },
});
const file = positionals[0];
if (!file) refuse(import.meta.url, 'takes FILE.cpuprofile [--top N] [--from SECONDS]');
const top = Number(args.top);
const fromUs = Number(args.from) * 1e6;
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// The samples kept: after `--from`, and busy (idle is waiting for I/O or for the load generator).
const kept: Array<{ leaf: number; us: number }> = [];
let clock = 0;
profile.samples.forEach((leaf, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  clock += us;
  if (clock >= fromUs && byId.get(leaf)!.callFrame.functionName !== '(idle)') kept.push({ leaf, us });
});
const total = kept.reduce((a, s) => a + s.us, 0);
const isSqlRead = (n: ProfileNode) => n.callFrame.url.includes('/libsql/') && /^(iterate|next)$/.test(n.callFrame.functionName);
const sqlRead = kept.reduce((a, s) => a + (isSqlRead(byId.get(s.leaf)!) ? s.us : 0), 0);

const packageOf = (url: string, fn: string): string => {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node internals';
  if (url.includes('/dist/')) return `project ${url.slice(url.indexOf('/dist/') + 6).split('/').slice(0, 2).join('/')}`;
  return url;
};
const label = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  return `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;
};
const isProject = (n: ProfileNode) => /\/dist\/(src|bench)\//.test(n.callFrame.url) && !n.callFrame.url.includes('node_modules');
const add = (map: Map<string, number>, key: string, us: number) => map.set(key, (map.get(key) ?? 0) + us);

const byPackage = new Map<string, number>();
const byFunction = new Map<string, number>();
const byOwner = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const { leaf, us } of kept) {
  const n = byId.get(leaf)!;
  add(byPackage, packageOf(n.callFrame.url, n.callFrame.functionName), us);
  add(byFunction, label(n), us);
  let owner: string | undefined;
  const seen = new Set<string>();
  for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
    const frame = byId.get(id)!;
    if (!owner && isProject(frame)) owner = label(frame);
    if (!frame.callFrame.url.includes('/dist/src/') && !/(EntityManager|QueryBuilder|pino|ajv|Hydrator|UnitOfWork|knex\/lib\/client)/.test(frame.callFrame.url)) continue;
    const key = label(frame);
    if (seen.has(key)) continue;
    seen.add(key);
    add(inclusive, key, us);
  }
  add(byOwner, owner ?? `(no project frame) ${label(n)}`, us);
}

const show = (title: string, map: Map<string, number>, rows: number) => {
  const inReads = sqlRead > 0;
  process.stdout.write(`\n${title} (${(total / 1e6).toFixed(1)} s sampled${inReads ? `; SQL reads: libsql iterate/next = 100, the whole = ${((total / sqlRead) * 100).toFixed(0)}` : ''})\n`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    const reads = inReads ? `${((us / sqlRead) * 100).toFixed(1).padStart(7)}  ` : '';
    process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${reads}${name}\n`);
  }
};
show('by package, self time', byPackage, 25);
show('by function, self time', byFunction, top);
show('by owner: each sample charged to the deepest project function on its stack', byOwner, top);
show('inclusive (project code and ORM/pino/ajv entry points)', inclusive, top);
