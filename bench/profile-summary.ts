/**
 * Summarises a V8 CPU profile (`node --cpu-prof`): self time by package (node_modules/<name>, the
 * project's own code, node internals) and the heaviest functions.
 * Usage: node dist/bench/profile-summary.js bench/profiles/CPU.….cpuprofile [top=25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  children?: number[];
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary FILE.cpuprofile [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
// Shares of the busy time: idle (waiting for I/O, or for the load generator) is left out.
const idle = profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id);
for (const id of idle) self.delete(id);
const total = [...self.values()].reduce((a, b) => a + b, 0);

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

const byPackage = new Map<string, number>();
const byFunction = new Map<string, number>();
for (const [id, us] of self) {
  const n = byId.get(id)!;
  const { functionName, url, lineNumber } = n.callFrame;
  const pkg = packageOf(url, functionName);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  const fn = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}` : ''}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
}
const show = (title: string, map: Map<string, number>, top: number) => {
  process.stdout.write(`\n${title} (self time, ${(total / 1e6).toFixed(1)} s sampled)\n`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`);
  }
};
show('by package', byPackage, 25);
show('by function', byFunction, Number(topArg ?? 30));

// Inclusive time of the project's own functions and a few library entry points: where a request's time goes.
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map<string, number>();
const label = (n: ProfileNode) => {
  const { functionName, url, lineNumber } = n.callFrame;
  return `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${lineNumber + 1}`;
};
profile.samples.forEach((leaf, i) => {
  if (idle.includes(leaf)) return;
  const seen = new Set<string>();
  for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
    const n = byId.get(id)!;
    if (!n.callFrame.url.includes('/dist/src/') && !/(EntityManager|QueryBuilder|requestPipeline|pino|ajv|Hydrator|UnitOfWork|knex\/lib\/client)/.test(n.callFrame.url)) continue;
    const key = label(n);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
});
show('inclusive (project code and ORM/Apollo/pino entry points)', inclusive, Number(topArg ?? 30));
