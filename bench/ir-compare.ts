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
import { benchArgs, refuse } from './cli.js';

const { values: args, positionals } = benchArgs(import.meta.url, { allowPositionals: true, options: { top: { type: 'string', default: '40' } } });
if (positionals.length !== 4) refuse(import.meta.url, 'takes A.callgrind.N-01 REQUESTS_A B.callgrind.N-01 REQUESTS_B [--top 40]');
const top = Number(args.top);

interface CodeRange {
  start: number;
  end: number;
  name: string;
  /** Its line in the map: V8 reuses code memory, so where ranges overlap the later line names the code. */
  order: number;
}

/** A perf map's code ranges, sorted by start, and the largest range's size (how far back a lookup must look). */
function perfMap(pid: string): { ranges: CodeRange[]; widest: number } {
  const file = `/tmp/perf-${pid}.map`;
  const ranges: CodeRange[] = [];
  let widest = 0;
  if (!existsSync(file)) return { ranges, widest };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (!m) continue;
    const start = parseInt(m[1]!, 16);
    const size = parseInt(m[2]!, 16);
    widest = Math.max(widest, size);
    ranges.push({ start, end: start + size, name: m[3]!, order: ranges.length });
  }
  ranges.sort((a, b) => a.start - b.start);
  return { ranges, widest };
}

/** The name of the code at `address`: of the ranges holding it, the one written last. */
function nameAt({ ranges, widest }: ReturnType<typeof perfMap>, address: number): string | undefined {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ranges[mid]!.start <= address) lo = mid + 1;
    else hi = mid - 1;
  }
  let found: CodeRange | undefined;
  for (let i = hi; i >= 0 && ranges[i]!.start > address - widest; i--) {
    const r = ranges[i]!;
    if (address < r.end && (!found || r.order > found.order)) found = r;
  }
  return found && `JS ${found.name}`;
}

/** Self instructions per request by function. */
function selfCosts(file: string, requests: number): Map<string, number> {
  const pid = /^pid: (\d+)/m.exec(readFileSync(file, 'utf8').slice(0, 4000))?.[1];
  const map = pid ? perfMap(pid) : { ranges: [], widest: 0 };
  const annotated = spawnSync('callgrind_annotate', ['--threshold=100', '--auto=no', file], { encoding: 'utf8', maxBuffer: 1 << 28 }).stdout;
  const costs = new Map<string, number>();
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \([ \d.]+%\)\s+(.*)$/.exec(line);
    if (!m) continue;
    // The dump's total (JIT compilation included, which bench/instructions.ts leaves out): printed apart.
    if (m[2]!.startsWith('PROGRAM TOTALS')) {
      costs.set(TOTAL, Number(m[1]!.replace(/,/g, '')) / requests);
      continue;
    }
    let name = m[2]!.replace(/\s+\[.*\]$/, '');
    const address = /^\?\?\?:0x([0-9a-f]+)/.exec(name);
    if (address) name = nameAt(map, parseInt(address[1]!, 16)) ?? name;
    name = name.replace(/'\d+$/, '');
    costs.set(name, (costs.get(name) ?? 0) + Number(m[1]!.replace(/,/g, '')) / requests);
  }
  return costs;
}

const TOTAL = 'PROGRAM TOTALS';
const requestsA = Number(positionals[1]);
const requestsB = Number(positionals[3]);
if (!(requestsA > 0 && requestsB > 0 && top > 0)) throw new Error('REQUESTS_A, REQUESTS_B and --top must be positive numbers');
const a = selfCosts(positionals[0]!, requestsA);
const b = selfCosts(positionals[2]!, requestsB);
const total = { a: a.get(TOTAL) ?? 0, b: b.get(TOTAL) ?? 0 };
a.delete(TOTAL);
b.delete(TOTAL);
process.stdout.write(`all instructions per request (JIT compilation included): A ${Math.round(total.a).toLocaleString('en')}, B ${Math.round(total.b).toLocaleString('en')}\n`);
const rows = [...new Set([...a.keys(), ...b.keys()])].map((name) => ({ name, a: a.get(name) ?? 0, b: b.get(name) ?? 0 }));
rows.sort((x, y) => y.b - y.a - (x.b - x.a));
const line = (r: (typeof rows)[number]) =>
  `${Math.round(r.b - r.a).toLocaleString('en').padStart(9)} ${Math.round(r.a).toLocaleString('en').padStart(9)} ${Math.round(r.b).toLocaleString('en').padStart(9)}  ${r.name.slice(0, 160)}`;
process.stdout.write(`instructions per request: B - A, A, B, function (self)\n`);
process.stdout.write(`${rows.filter((r) => r.b > r.a).slice(0, top).map(line).join('\n')}\n  …\n`);
process.stdout.write(`${rows.filter((r) => r.b < r.a).slice(-top).map(line).join('\n')}\n`);
