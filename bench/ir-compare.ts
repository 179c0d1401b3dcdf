/**
 * Compares two callgrind dumps of bench/instructions.ts function by function: where one server's instructions
 * per request go that the other's do not.
 *
 *   KEEP=1 node dist/bench/instructions.js --only rest-ids,gql-ids --batches 2 --perf-map
 *   node dist/bench/ir-compare.js /tmp/petstore-ir-XXXX/rest-ids.callgrind.2-01 4000 /tmp/petstore-ir-XXXX/gql-ids.callgrind.2-01 4000 [--top 50]
 *
 * Each dump is given with the number of requests it counted (the batch's `--requests`). Self costs are read with
 * `callgrind_annotate`; V8's JIT code, an address to callgrind, is named from the server's `/tmp/perf-<pid>.map`
 * (written when the servers ran with `--perf-map`). Prints the largest differences both ways; a JavaScript
 * function's name carries its file, so the same function of two builds in two directories shows as two rows.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values: args, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '40' } } });
if (positionals.length !== 4) throw new Error('usage: ir-compare A.callgrind.N-01 REQUESTS_A B.callgrind.N-01 REQUESTS_B [--top 40]');
const top = Number(args.top);

/** A perf map's code ranges (a later entry at the same address wins), sorted by start. */
function perfMap(pid: string): Array<[start: number, end: number, name: string]> {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return [];
  const byStart = new Map<number, [number, string]>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m) byStart.set(parseInt(m[1]!, 16), [parseInt(m[2]!, 16), m[3]!]);
  }
  return [...byStart].map(([start, [size, name]]) => [start, start + size, name] as [number, number, string]).sort((a, b) => a[0] - b[0]);
}

function nameAt(map: ReturnType<typeof perfMap>, address: number): string | undefined {
  let lo = 0;
  let hi = map.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (map[mid]![0] <= address) lo = mid + 1;
    else hi = mid - 1;
  }
  const entry = map[hi];
  return entry && address < entry[1] ? `JS ${entry[2]}` : undefined;
}

/** Self instructions per request by function. */
function selfCosts(file: string, requests: number): Map<string, number> {
  const pid = /^pid: (\d+)/m.exec(readFileSync(file, 'utf8').slice(0, 4000))?.[1];
  const map = pid ? perfMap(pid) : [];
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', file], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout;
  const costs = new Map<string, number>();
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
    if (!m) continue;
    let name = m[2]!.replace(/\s+\[.*\]$/, '');
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(name);
    if (address) name = nameAt(map, parseInt(address[1]!, 16)) ?? name;
    name = name.replace(/'\d+$/, '');
    costs.set(name, (costs.get(name) ?? 0) + Number(m[1]!.replace(/,/g, '')) / requests);
  }
  return costs;
}

const a = selfCosts(positionals[0]!, Number(positionals[1]));
const b = selfCosts(positionals[2]!, Number(positionals[3]));
const rows = [...new Set([...a.keys(), ...b.keys()])].map((name) => ({ name, a: a.get(name) ?? 0, b: b.get(name) ?? 0 }));
rows.sort((x, y) => y.b - y.a - (x.b - x.a));
const line = (r: (typeof rows)[number]) =>
  `${Math.round(r.b - r.a).toLocaleString('en').padStart(9)} ${Math.round(r.a).toLocaleString('en').padStart(9)} ${Math.round(r.b).toLocaleString('en').padStart(9)}  ${r.name.slice(0, 160)}`;
process.stdout.write(`instructions per request: B - A, A, B, function (self)\n`);
process.stdout.write(`${rows.filter((r) => r.b > r.a).slice(0, top).map(line).join('\n')}\n  …\n`);
process.stdout.write(`${rows.filter((r) => r.b < r.a).slice(-top).map(line).join('\n')}\n`);
