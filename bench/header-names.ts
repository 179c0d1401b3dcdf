/**
 * Micro-benchmark behind "header names in lower case" (docs/DECISIONS.md): the 16 header lines of a REST answer set
 * on a fresh Node response with the names spelt as usual (`X-RateLimit-Limit`) and in lower case, as the service
 * sets them. Node keys each header by its lower-cased name: a mixed-case name costs a new string and a string-table
 * lookup per header.
 *
 *   npm run build && node dist/bench/header-names.js [--rounds 3]
 */
import { OutgoingMessage } from 'node:http';
import { benchArgs } from './cli.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '3' } } });

const USUAL = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Resource',
  'RateLimit-Policy',
  'RateLimit',
  'Content-Security-Policy',
  'Cross-Origin-Resource-Policy',
  'Referrer-Policy',
  'Strict-Transport-Security',
  'X-Content-Type-Options',
  'X-Frame-Options',
  'X-Request-Id',
  'ETag',
  'Cache-Control',
  'Vary',
];
const LOWER = USUAL.map((name) => name.toLowerCase());

/** Nanoseconds to set every name of `names` on a fresh response, averaged over `n` responses after a warm-up. */
function perResponse(names: string[], n = 200_000): number {
  const run = () => {
    const response = new OutgoingMessage();
    for (let i = 0; i < names.length; i++) response.setHeader(names[i]!, `value-${i}`);
  };
  for (let i = 0; i < 50_000; i++) run();
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) run();
  return Number(process.hrtime.bigint() - started) / n;
}

console.log(`${USUAL.length} header lines on a fresh response, node ${process.version}, ns per response:`);
for (let round = 1; round <= Number(args.rounds); round++) {
  console.log(`  round ${round}: names as usual ${perResponse(USUAL).toFixed(0)}, in lower case ${perResponse(LOWER).toFixed(0)}`);
}
