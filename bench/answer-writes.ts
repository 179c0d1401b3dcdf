/**
 * Micro-benchmarks behind two levers weighed and declined for a REST answer (docs/PERFORMANCE-LOG.md, entry of
 * 2026-11-28 22:40 – 2026-11-29 00:15), each against what the service does now, in the same round:
 *
 * - `body`: the answer's ETag and length from the string as it is (`crypto.hash` of the string, `Buffer.byteLength`),
 *   against the body turned into bytes once (`Buffer.from`) and the tag hashed from those bytes;
 * - `head`: a REST answer's 18 headers set one by one (`setHeader`, as Koa and the service do) and the head written,
 *   against one `writeHead` given all of them as a flat list;
 * - `sha1`: the tag's hash of a 1 KB body against a 3-byte one (the call's fixed cost).
 *
 *   npm run build && node dist/bench/answer-writes.js [--rounds 3]
 *
 * CPU time (user + system) per operation in ns, after a warm-up. On a shared host, compare within a round.
 */
import { hash } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { benchArgs } from './cli.js';
import { REST_ANSWER_LINES } from './rest-answer-lines.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '3' } } });

/** About 1 KB of JSON: a page of 10 pets with their categories (a REST read by 10 ids answers about 600 bytes). */
const BODY = JSON.stringify({
  data: Array.from({ length: 10 }, (_, i) => ({ id: 1000 + i, name: `Pet number ${i}`, category: { id: 3, name: 'Dogs' }, status: 'available', tags: [] })),
});

/** The headers of a REST read by ids, as the service sends them: the 16 beyond F's, then the type and length. */
const HEADERS: ReadonlyArray<readonly [string, string]> = [
  ...REST_ANSWER_LINES,
  ['content-type', 'application/json; charset=utf-8'],
  ['Content-Length', String(Buffer.byteLength(BODY))],
];
const request = new IncomingMessage(new Socket());

/** CPU ns per call of `run`, averaged over `n` calls after a warm-up. */
function cpuNs(run: () => unknown, n = 200_000): number {
  for (let i = 0; i < 20_000; i++) run();
  const started = process.cpuUsage();
  for (let i = 0; i < n; i++) run();
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / n;
}

const setOneByOne = () => {
  const response = new ServerResponse(request);
  for (const [name, value] of HEADERS) response.setHeader(name, value);
  response.writeHead(200);
  return (response as unknown as { _header: string })._header;
};
const writeAtOnce = () => {
  const response = new ServerResponse(request);
  const flat: string[] = [];
  for (const [name, value] of HEADERS) flat.push(name, value);
  response.writeHead(200, flat);
  return (response as unknown as { _header: string })._header;
};

console.log(`node ${process.version}, a ${Buffer.byteLength(BODY)}-byte body, CPU ns per answer:`);
for (let round = 1; round <= Number(args.rounds); round++) {
  const body = [
    cpuNs(() => hash('sha1', BODY, 'base64url') + Buffer.byteLength(BODY)),
    cpuNs(() => {
      const bytes = Buffer.from(BODY);
      return hash('sha1', bytes, 'base64url') + bytes.length;
    }),
  ];
  const head = [cpuNs(setOneByOne, 100_000), cpuNs(writeAtOnce, 100_000)];
  const sha1 = [cpuNs(() => hash('sha1', BODY, 'base64url')), cpuNs(() => hash('sha1', 'abc', 'base64url'))];
  console.log(
    `  round ${round}: body as a string ${body[0]!.toFixed(0)}, as bytes once ${body[1]!.toFixed(0)}; ` +
      `${HEADERS.length} headers one by one ${head[0]!.toFixed(0)}, one writeHead ${head[1]!.toFixed(0)}; ` +
      `sha1 of the body ${sha1[0]!.toFixed(0)}, of 3 bytes ${sha1[1]!.toFixed(0)}`,
  );
}
